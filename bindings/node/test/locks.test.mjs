import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, freshStore, unique } from './helpers.mjs'

const { DdblockError } = createRequire(import.meta.url)('../lib.js')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

for (const { name: server, endpoint } of SERVERS) {
  describe(`locks on ${server}`, () => {
    let store
    before(async () => { store = await freshStore(endpoint, { prefix: 'app_' }) })

    test('acquire, held by another, release, acquire again', async () => {
      const name = unique('orders:')
      const a = store.lock(name, { ttl: 30 })
      const b = store.lock(name, { ttl: 30 })
      assert.match(a.owner, /^[A-Za-z0-9]{16}$/)
      assert.equal(await a.acquire(), true)
      assert.equal(await b.acquire(), false)
      assert.equal(await a.isLocked(), true)
      assert.equal(await a.isOwned(), true)
      assert.equal(await b.isOwned(), false)
      const h = await b.holder()
      assert.equal(h.owner, a.owner)
      assert.ok(h.expiresAt > Date.now() / 1000 + 20)
      assert.equal(await b.release(), false, 'not ours: nothing deleted')
      assert.equal(await a.release(), true)
      assert.equal(await a.release(), false, 'already released')
      assert.equal(await a.holder(), null)
      assert.equal(await b.acquire(), true)
      assert.equal(await a.forceRelease(), true, 'a lock item was there')
      assert.equal(await b.isLocked(), false)
      assert.equal(await a.forceRelease(), false, 'nothing to release')
    })

    test('owner given, restoreLock releases, refresh extends', async () => {
      const name = unique('job:')
      const a = store.lock(name, { ttl: 5, owner: 'worker-1' })
      assert.equal(a.owner, 'worker-1')
      assert.equal(await a.acquire(), true)
      const before = (await a.holder()).expiresAt
      assert.equal(await a.refresh(100), true)
      assert.ok((await a.holder()).expiresAt >= before + 90)
      assert.equal(await store.lock(name, { owner: 'other' }).refresh(), false)
      assert.equal(await store.restoreLock(name, 'worker-1').release(), true)
      assert.equal(await a.isLocked(), false)
    })

    test('acquire({ wait }) answers false when the wait runs out (as Python and the CLI), block() rejects, both wait for a release', async () => {
      const name = unique('wait:')
      const a = store.lock(name, { ttl: 30 })
      assert.equal(await a.acquire(), true)
      const b = store.lock(name, { ttl: 30 })
      let t0 = Date.now()
      assert.equal(await b.acquire({ wait: { timeoutMs: 300 } }), false)
      assert.ok(Date.now() - t0 >= 300)
      t0 = Date.now()
      await assert.rejects(b.block(300), (e) => {
        assert.ok(e instanceof DdblockError)
        assert.equal(e.code, 'LOCK_TIMEOUT')
        assert.match(e.message, /held by/)
        return true
      })
      assert.ok(Date.now() - t0 >= 300)
      setTimeout(() => a.release(), 200)
      assert.equal(await b.acquire({ wait: { timeoutMs: 5000 } }), true)
      assert.equal(await b.release(), true)
    })

    test('withLock runs, releases, returns; rethrows the callback error after releasing', async () => {
      const name = unique('with:')
      const r = await store.withLock(name, { ttl: 10, timeoutMs: 1000 }, async (lock) => {
        assert.equal(await lock.isOwned(), true)
        return 42
      })
      assert.equal(r, 42)
      assert.equal(await store.lock(name).isLocked(), false)
      const boom = new Error('boom')
      await assert.rejects(store.withLock(name, { ttl: 10 }, async () => { throw boom }), (e) => e === boom)
      assert.equal(await store.lock(name).isLocked(), false, 'released after the error')
      // held elsewhere: LOCK_TIMEOUT and the callback never runs
      const other = store.lock(name, { ttl: 30 })
      await other.acquire()
      let ran = false
      await assert.rejects(store.withLock(name, { ttl: 10, timeoutMs: 100 }, () => { ran = true }), { code: 'LOCK_TIMEOUT' })
      assert.equal(ran, false)
      await other.release()
    })

    test('many concurrent promises contending on one lock never overlap', async () => {
      const name = unique('hot:')
      let inside = 0
      let maxInside = 0
      let done = 0
      const worker = async () => {
        for (let i = 0; i < 3; i++) {
          await store.withLock(name, { ttl: 10, timeoutMs: 20000 }, async () => {
            inside++
            maxInside = Math.max(maxInside, inside)
            await sleep(5)
            inside--
            done++
          })
        }
      }
      await Promise.all(Array.from({ length: 12 }, worker))
      assert.equal(maxInside, 1)
      assert.equal(done, 36)
      assert.equal(await store.lock(name).isLocked(), false)
    })

    test('the event loop keeps running while requests are in flight', async () => {
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      const lock = store.lock(unique('loop:'), { ttl: 5 })
      for (let i = 0; i < 10; i++) {
        await lock.acquire()
        await lock.release()
      }
      clearInterval(timer)
      assert.ok(ticks > 0)
    })
  })
}

for (const { name: server, endpoint } of SERVERS) {
  test(`releaseMode 'keep-fence' keeps the fencing token across a release on ${server}`, async () => {
    const store = await freshStore(endpoint, { prefix: 'app_', releaseMode: 'keep-fence' })
    const name = unique('kf:')
    const a = store.lock(name, { ttl: 30 })
    assert.equal(await a.acquire(), true)
    const fence = a.fence
    assert.equal(typeof fence, 'number')
    assert.equal(await a.release(), true)
    assert.equal(await a.isLocked(), false)
    assert.equal(await a.holder(), null)
    assert.equal(await a.release(), false, 'a second release is not a release')
    const b = store.lock(name, { ttl: 30 })
    assert.equal(await b.acquire(), true)
    assert.equal(b.fence, fence + 1, 'the next acquisition continues the fence')
    assert.equal(await store.lock(name).forceRelease(), true, 'a lock item was there')
    assert.equal(await store.lock(`${name}-none`).forceRelease(), false, 'no item: none created')
    assert.throws(() => new (store.constructor)({ endpoint, releaseMode: 'keep' }),
      (e) => e instanceof DdblockError && e.code === 'CONFIG' && /keep-fence/.test(e.message))
  })
}
