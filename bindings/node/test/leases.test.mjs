// Leases through the Node binding (issue 11): only an attempt's own write is recovered,
// withLock keeps the lease with a heartbeat, aborts its signal and rejects when the lease is
// lost (keeping the callback's result, or keeping the lost lease or failed release on the
// callback's own error), an AbortSignal cancels an acquire or a wait and leaves no lock, and
// fencing tokens grow.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, freshTable, unique, faultProxy } from './helpers.mjs'

const { Store, DdblockError } = createRequire(import.meta.url)('../lib.js')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves when `signal` aborts. */
const aborted = (signal) => new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))

/** The rejection of an aborted acquire or wait. */
const abortError = (e) => {
  assert.ok(e instanceof DdblockError, `not a DdblockError: ${e}`)
  assert.equal(e.name, 'AbortError')
  assert.equal(e.code, 'ABORTED')
  assert.equal(e.kind, 'aborted')
  assert.match(e.message, /was aborted: the lock is not held/)
  return true
}

/**
 * Whether lock `name` is free once `settleMs` have passed (writes delayed in the network have
 * landed, and the aborted attempt's background clean-up ran), polling up to `limitMs`.
 */
async function freeAfter (store, name, settleMs, limitMs = settleMs + 5000) {
  const start = Date.now()
  await sleep(settleMs)
  while (await store.lock(name).isLocked()) {
    if (Date.now() - start > limitMs) return false
    await sleep(50)
  }
  return true
}

class JobError extends Error {}

for (const { name: server, endpoint } of SERVERS) {
  describe(`leases on ${server}`, () => {
    let store, table
    before(async () => {
      table = await freshTable(endpoint)
      store = new Store({ table, endpoint, heartbeatIntervalMs: 200 })
    })

    test('another handle with the same owner is refused, as in Laravel', async () => {
      const name = unique('o:')
      const first = store.lock(name, { ttl: 30 })
      assert.equal(await first.acquire(), true)
      const twin = store.restoreLock(name, first.owner)
      assert.equal(await twin.acquire(), false)
      assert.equal(await twin.release(), true, 'the owner can still release it')
    })

    test('withLock keeps the lease past its ttl', async () => {
      const name = unique('long:')
      const r = await store.withLock(name, { ttl: 2, timeoutMs: 1000 }, async (lock, signal) => {
        await sleep(3000)
        assert.equal(signal.aborted, false)
        assert.equal(await lock.isOwned(), true, 'still ours past the ttl')
        assert.ok(lock.remainingMs() > 0)
        return 'done'
      })
      assert.equal(r, 'done')
      assert.equal(await store.lock(name).isLocked(), false)
    })

    test('a lost lease aborts the signal and rejects with LEASE_LOST, keeping the result', async () => {
      const name = unique('lost:')
      const other = new Store({ table, endpoint })
      await assert.rejects(
        store.withLock(name, { ttl: 30, timeoutMs: 1000 }, async (lock, signal) => {
          await other.lock(name).forceRelease()
          const reason = await new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)))
          assert.ok(reason instanceof DdblockError && reason.code === 'LEASE_LOST', String(reason))
          return 42
        }),
        (e) => {
          assert.ok(e instanceof DdblockError)
          assert.equal(e.code, 'LEASE_LOST')
          assert.equal(e.value, 42)
          return true
        }
      )
    })

    test('a lease lost after the callback threw rides on its error as lockError', async () => {
      const name = unique('threw:')
      const other = new Store({ table, endpoint })
      const thrown = new JobError('the job failed')
      await assert.rejects(
        store.withLock(name, { ttl: 30, timeoutMs: 1000 }, async (lock, signal) => {
          await other.lock(name).forceRelease()
          await aborted(signal)
          throw thrown
        }),
        (e) => {
          assert.equal(e, thrown, 'the callback\'s own error, unchanged')
          assert.ok(e instanceof JobError)
          assert.ok(e.lockError instanceof DdblockError, String(e.lockError))
          assert.equal(e.lockError.code, 'LEASE_LOST')
          assert.match(e.lockError.message, /lost the lease on lock `threw:/)
          return true
        }
      )
      // No loss, clean release: the error carries nothing.
      const plain = new JobError('plain')
      await assert.rejects(store.withLock(unique('ok:'), { ttl: 30 }, async () => { throw plain }), (e) => {
        assert.equal(e, plain)
        assert.equal(e.lockError, undefined)
        return true
      })
    })

    test('a release that fails after the callback threw rides on its error as lockError', async () => {
      const proxy = await faultProxy(endpoint, [])
      try {
        const through = new Store({ table, endpoint: proxy.url, maxAttempts: 1 })
        const thrown = new JobError('the job failed')
        await assert.rejects(
          through.withLock(unique('rel:'), { ttl: 30 }, async () => {
            await proxy.faults({ throttle_rate: 1, throttle_ops: ['DeleteItem'] })
            throw thrown
          }),
          (e) => {
            assert.equal(e, thrown)
            assert.ok(e.lockError instanceof DdblockError)
            assert.equal(e.lockError.code, 'THROTTLED')
            return true
          }
        )
        // A thrown primitive cannot carry it: it becomes a process warning.
        const warned = new Promise((resolve) => process.once('warning', resolve))
        await proxy.faults({})
        await assert.rejects(
          through.withLock(unique('prim:'), { ttl: 30 }, async () => {
            await proxy.faults({ throttle_rate: 1, throttle_ops: ['DeleteItem'] })
            throw 'a string' // eslint-disable-line no-throw-literal
          }),
          (e) => e === 'a string'
        )
        const warning = await warned
        assert.equal(warning.name, 'DdblockWarning')
        assert.equal(warning.code, 'THROTTLED')
      } finally {
        proxy.stop()
      }
    })

    test('fences grow', async () => {
      const name = unique('f:')
      const a = store.lock(name, { ttl: 30 })
      assert.equal(a.fence, null)
      assert.equal(await a.acquire(), true)
      const first = a.fence
      assert.ok(typeof first === 'number' && first > 0)
      assert.equal((await a.holder()).fence, first)
      assert.equal(await a.release(), true)
      const b = store.lock(name, { ttl: 30 })
      assert.equal(await b.acquire(), true)
      assert.ok(b.fence > first)
    })
  })
}

// Cancellation with an AbortSignal: the native acquire in flight is dropped (the core deletes
// this attempt's write if it landed) and the promise rejects with an AbortError; no lock is left.
for (const { name: server, endpoint } of SERVERS) {
  describe(`abort on ${server}`, () => {
    let store, table, proxy
    before(async () => {
      table = await freshTable(endpoint)
      store = new Store({ table, endpoint })
      proxy = await faultProxy(endpoint, [])
    })
    after(() => proxy.stop())

    test('a signal aborted before the wait starts: nothing is taken, the callback never runs', async () => {
      const name = unique('pre:')
      await assert.rejects(store.lock(name, { ttl: 30 }).acquire({ signal: AbortSignal.abort() }), abortError)
      await assert.rejects(store.lock(name, { ttl: 30 }).block(5000, { signal: AbortSignal.abort() }), abortError)
      let ran = false
      const reason = new Error('shutting down')
      const controller = new AbortController()
      controller.abort(reason)
      await assert.rejects(
        store.withLock(name, { ttl: 30, timeoutMs: 5000, signal: controller.signal }, () => { ran = true }),
        (e) => abortError(e) && e.cause === reason
      )
      assert.equal(ran, false)
      assert.equal(await store.lock(name).isLocked(), false)
    })

    test('an abort during the wait on a held lock ends it at once; the lock is never taken', async () => {
      const name = unique('held:')
      const holder = store.lock(name, { ttl: 30 })
      assert.equal(await holder.acquire(), true)
      const waiter = store.lock(name, { ttl: 30 })
      const controller = new AbortController()
      const started = Date.now()
      const waiting = waiter.acquire({ wait: { timeoutMs: 20_000 }, signal: controller.signal })
      setTimeout(() => controller.abort(), 300)
      await assert.rejects(waiting, abortError)
      assert.ok(Date.now() - started < 3000, `ended ${Date.now() - started} ms after the start`)
      const withLock = new AbortController()
      let ran = false
      const wait = store.withLock(name, { ttl: 30, timeoutMs: 20_000, signal: withLock.signal }, () => { ran = true })
      setTimeout(() => withLock.abort(), 300)
      await assert.rejects(wait, abortError)
      // Once the holder lets go, nobody takes it: both waits are over.
      assert.equal(await holder.release(), true)
      await sleep(1500)
      assert.equal(await store.lock(name).isLocked(), false)
      assert.equal(ran, false)
    })

    for (const [fault, config] of [
      // The write lands at once; its answer is held back.
      ['a delayed answer', { delay_response_ms: 1500, delay_response_ops: ['UpdateItem'] }],
      // Every write is slow (in order): the clean-up delete reaches the server after the write.
      ['a slow network', { latency_ms: 700, latency_ops: ['UpdateItem', 'DeleteItem'] }],
    ]) {
      test(`an abort during a slow acquire (${fault}) leaves no lock`, async () => {
        await proxy.faults(config)
        try {
          const slow = new Store({ table, endpoint: proxy.url })
          const name = unique('slow:')
          const controller = new AbortController()
          const started = Date.now()
          const acquiring = slow.lock(name, { ttl: 3600 }).acquire({ signal: controller.signal })
          setTimeout(() => controller.abort(), 300) // the UpdateItem is in flight
          await assert.rejects(acquiring, abortError)
          assert.ok(Date.now() - started < 1000, 'rejected at the abort, not at the answer')
          assert.ok(await freeAfter(store, name, 2000), 'the aborted attempt cleaned up its write')
          // The same through withLock's wait.
          const again = new AbortController()
          const wait = slow.withLock(name, { ttl: 3600, timeoutMs: 10_000, signal: again.signal }, () => 'ran')
          setTimeout(() => again.abort(), 300)
          await assert.rejects(wait, abortError)
          assert.ok(await freeAfter(store, name, 2000), 'the aborted wait cleaned up its write')
        } finally {
          await proxy.faults({})
        }
      })
    }
  })
}
