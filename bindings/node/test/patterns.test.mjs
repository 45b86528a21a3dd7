// The once-only guard and compare-and-set from Node, on moto, dynalite and DynamoDB Local: one
// winner, run (done on success, given back on failure), lost claims, versions, Laravel writes in
// between, update() under contention and giving up, bad input.
import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, freshTable, freshStore, unique, faultProxy } from './helpers.mjs'

const { Store, Versioned, DdblockError } = createRequire(import.meta.url)('../lib.js')
const code = (c) => (e) => {
  assert.ok(e instanceof DdblockError, `not a DdblockError: ${e}`)
  assert.equal(e.code, c, e.message)
  return true
}

for (const { name: server, endpoint } of SERVERS) {
  describe(`once-only guard on ${server}`, () => {
    let store
    before(async () => { store = await freshStore(endpoint, { prefix: 'app_' }) })

    test('one winner; later deliveries see the count; Laravel reads it', async () => {
      const evt = unique('evt:')
      const once = store.once(evt, { ttl: 30 })
      assert.deepEqual([once.eventId, once.key, once.ttl, once.doneTtl], [evt, `app_${evt}`, 30, 86400])
      const claims = await Promise.all(Array.from({ length: 8 }, () => store.once(evt, { ttl: 30 }).claim()))
      const won = claims.filter((c) => c.won)
      assert.equal(won.length, 1)
      assert.equal(won[0].status, null)
      assert.ok(won[0].expiresAt > Date.now() / 1000 + 20)
      for (const c of claims.filter((c) => !c.won)) {
        assert.equal(c.status.state, 'in_progress')
        assert.equal(c.expiresAt, null)
        await assert.rejects(c.done(), code('CONFLICT'))
        assert.equal(await c.giveBack(), false)
      }
      assert.equal(await store.get(evt), 8)
      await won[0].done()
      const st = await once.status()
      assert.equal(st.state, 'done')
      assert.equal(st.claims, 8)
      assert.ok(st.doneAt > 0)
    })

    test('run: done on success, given back on failure, skipped when done', async () => {
      const evt = unique('evt:')
      await assert.rejects(store.once(evt, { ttl: 30 }).run(async () => { throw new Error('handler failed') }), /handler failed/)
      assert.equal((await store.once(evt, { ttl: 30 }).status()).state, 'given_back')
      assert.deepEqual(await store.once(evt, { ttl: 30, doneTtl: 60 }).run(async () => 42), { ran: true, value: 42 })
      const again = await store.once(evt, { ttl: 30 }).run(() => 43)
      assert.equal(again.ran, false)
      assert.equal(again.status.state, 'done')
      const results = await Promise.all(Array.from({ length: 6 }, () => store.once(`${evt}:b`, { ttl: 30 }).run(() => 'ran')))
      assert.equal(results.filter((r) => r.ran).length, 1)
    })

    test('a claim lost before done rejects with CONFLICT', async () => {
      const evt = unique('evt:')
      const claim = await store.once(evt, { ttl: 30 }).claim()
      assert.ok(claim.won)
      await store.put(evt, 5, 60) // a Laravel put replaces the item: the claim is gone
      await assert.rejects(claim.done(), code('CONFLICT'))
      assert.equal(await claim.giveBack(), false)
    })

    test('bad input throws before any request', () => {
      assert.throws(() => store.once('', { ttl: 30 }), code('INVALID_KEY'))
      assert.throws(() => store.once('e', { ttl: 0 }), code('INVALID_TTL'))
      assert.throws(() => store.once('e', { ttl: 1.5 }), code('INVALID_TTL'))
      assert.throws(() => store.once('e', { ttl: 30, doneTtl: 0 }), code('INVALID_TTL'))
    })
  })

  describe(`lost answers through the fault proxy on ${server}`, () => {
    // Seed 6: of the selected operation, the first answer is dropped (the write lands), the
    // SDK's retry is answered.
    const dropFirst = (op) => ['--seed', '6', '--drop-response-rate', '0.5', '--drop-ops', op]

    test('a claim whose answer was lost is still ours', async () => {
      const table = await freshTable(endpoint)
      const proxy = await faultProxy(endpoint, dropFirst('UpdateItem'))
      try {
        const store = new Store({ table, endpoint: proxy.url, prefix: 'app_' })
        const claim = await store.once('evt', { ttl: 30 }).claim()
        assert.equal(claim.won, true)
        assert.equal(claim.recovered, true, 'the retry saw 2 and its own token')
      } finally {
        proxy.stop()
      }
    })

    test('a compare-and-set write whose answer was lost is written, not a conflict', async () => {
      const table = await freshTable(endpoint)
      const proxy = await faultProxy(endpoint, dropFirst('PutItem'))
      try {
        const store = new Store({ table, endpoint: proxy.url, prefix: 'app_' })
        const v = await store.putIfVersion('k', 1, 60, 0)
        assert.ok(v > 0, 'our own write recognised by its token')
        const direct = new Store({ table, endpoint, prefix: 'app_' })
        assert.equal((await direct.getVersioned('k')).version, v)
      } finally {
        proxy.stop()
      }
    })
  })

  describe(`compare-and-set on ${server}`, () => {
    let store
    before(async () => { store = await freshStore(endpoint, { prefix: 'app_' }) })

    test('versions, conflicts, and Laravel writes in between', async () => {
      const key = unique('stock:')
      const missing = await store.getVersioned(key)
      assert.ok(missing instanceof Versioned)
      assert.deepEqual([missing.value, missing.version], [undefined, 0])
      const v1 = await store.putIfVersion(key, { count: 10 }, 60, 0)
      assert.ok(v1 > 1.7e15)
      const read = await store.getVersioned(key)
      assert.deepEqual([read.value, read.version], [{ count: 10 }, v1])
      assert.equal(await store.putIfVersion(key, { count: 9 }, 60, read), v1 + 1)
      assert.equal(await store.putIfVersion(key, { count: 8 }, 60, v1), null)
      assert.equal(await store.putIfVersion(key, { count: 8 }, 60, read), null)
      assert.deepEqual(await store.get(key), { count: 9 })
      const now = await store.getVersioned(key)
      await store.put(key, 1, 60) // Laravel's put drops the version
      assert.equal(await store.putIfVersion(key, 2, 60, now.version), null)
      assert.equal((await store.getVersioned(key)).version, 0)
    })

    test('update: no lost increments under contention, CONFLICT when it never sticks', async () => {
      const key = unique('counter:')
      await Promise.all(Array.from({ length: 6 }, async () => {
        for (let i = 0; i < 8; i++) await store.update(key, (v) => (v ?? 0) + 1, { ttl: 60, attempts: 1000 })
      }))
      assert.equal(await store.get(key), 48)
      let rounds = 0
      await assert.rejects(store.update(key, async (v) => {
        rounds += 1
        await store.put(key, rounds, 60) // a Laravel put between each read and write
        return v + 100
      }, { ttl: 60, attempts: 3 }), code('CONFLICT'))
      assert.equal(rounds, 3)
      const w = await store.update(key, (v) => v + 100, { ttl: 60 })
      assert.deepEqual([w.value, w.version], [103, (await store.getVersioned(key)).version])
    })

    test('bad versions are CONFIG', async () => {
      await assert.rejects(store.putIfVersion('k', 1, 60, -1), code('CONFIG'))
      await assert.rejects(store.putIfVersion('k', 1, 60, 1.5), code('CONFIG'))
      await assert.rejects(store.update('k', (v) => v, { ttl: 60, attempts: 0 }), code('CONFIG'))
    })
  })
}
