// Leases through the Node binding (issue 11): only an attempt's own write is recovered,
// withLock keeps the lease with a heartbeat, aborts its signal and rejects when the lease is
// lost (keeping the callback's result), and fencing tokens grow.
import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, freshTable, unique } from './helpers.mjs'

const { Store, DdblockError } = createRequire(import.meta.url)('../lib.js')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

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
