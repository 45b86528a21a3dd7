// Node ↔ PHP (Laravel's real DynamoDbStore/DynamoDbLock), Node ↔ Rust (the core) and Node ↔
// Python (the binding) on the same table: locks and values both ways, the other language driven
// as its peer over compat-tests/support/peers/PROTOCOL.md (helpers.mjs `peer`).
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { SERVERS, ROOT, PYTHON, freshTable, unique, peer, b64, unb64 } from './helpers.mjs'

const { Store } = createRequire(import.meta.url)('../lib.js')

test('the Rust peer is built (cargo build -p ddblock-test-support)', () => {
  assert.ok(existsSync(path.join(ROOT, 'target/debug/ddblock-peer')), 'run cargo build -p ddblock-test-support')
})

for (const { name: server, endpoint } of SERVERS) {
  for (const [layout, prefix] of [['laravel12', 'app_'], ['laravel8', 'app']]) {
    describe(`PHP interop on ${server}, ${layout}`, () => {
      let store, php
      before(async () => {
        const table = await freshTable(endpoint)
        store = new Store({ table, endpoint, prefix, layout })
        php = peer('php', { endpoint, table, layout, prefix })
      })
      after(() => php.close())

      test('a lock taken in Node is held for PHP; PHP releases it with the owner', async () => {
        const name = unique('orders:')
        const lock = store.lock(name, { ttl: 30 })
        assert.equal(await lock.acquire(), true)
        const r = await php.send({ op: 'lock.acquire', name, ttl: 30 })
        assert.equal(r.ok, true)
        assert.equal(r.acquired, false)
        assert.equal(unb64((await php.send({ op: 'lock.get', name })).value), `s:16:"${lock.owner}";`)
        assert.deepEqual(await php.send({ op: 'lock.release', name, owner: lock.owner }), { ok: true, released: true })
        assert.equal(await lock.isLocked(), false)
      })

      test('a lock taken in PHP is held for Node; Node releases it with the owner', async () => {
        const name = unique('jobs:')
        const r = await php.send({ op: 'lock.acquire', name, ttl: 30 })
        assert.equal(r.acquired, true)
        assert.equal(await store.lock(name, { ttl: 30 }).acquire(), false)
        const h = await store.lock(name).holder()
        assert.equal(h.owner, r.owner)
        assert.equal(await store.restoreLock(name, 'not-the-owner').release(), false)
        assert.equal(await store.restoreLock(name, r.owner).release(), true)
        assert.equal((await php.send({ op: 'lock.acquire', name, ttl: 30 })).acquired, true)
      })

      test('values written in Node read in PHP', async () => {
        const cases = [
          [42, 'i:42;'],
          [1.5, 'd:1.5;'],
          ['hello', 's:5:"hello";'],
          [true, 'b:1;'],
          [null, 'N;'],
          [[1, 'a'], 'a:2:{i:0;i:1;i:1;s:1:"a";}'],
          [{ a: 1, b: [true] }, 'a:2:{s:1:"a";i:1;s:1:"b";a:1:{i:0;b:1;}}'],
          [Buffer.from('bytes'), 's:5:"bytes";'],
          [{ __phpClass: 'stdClass', properties: { p: 1 } }, 'O:8:"stdClass":1:{s:1:"p";i:1;}'],
          [{ __phpClass: 'stdClass', properties: { 5: 1 } }, 'O:8:"stdClass":1:{s:1:"5";i:1;}'],
          [{ x: 1, 5: 'a', '07': 2 }, 'a:3:{i:5;s:1:"a";s:1:"x";i:1;s:2:"07";i:2;}'],
          [2n ** 60n, 'i:1152921504606846976;'],
        ]
        for (const [i, [v, serialized]] of cases.entries()) {
          await store.put(`k${i}`, v, 60)
          const r = await php.send({ op: 'get', key: `k${i}` })
          assert.equal(r.ok, true, r.error)
          assert.equal(unb64(r.value), serialized, `value ${i}`)
        }
        assert.equal((await store.increment('k0', 8)), 50)
        assert.equal(unb64((await php.send({ op: 'get', key: 'k0' })).value), 'i:50;')
      })

      test('values written in PHP read in Node', async () => {
        const cases = [
          ['i:7;', 7],
          ['d:0.25;', 0.25],
          ['s:3:"abc";', 'abc'],
          ['b:0;', false],
          ['a:2:{s:1:"x";i:1;i:5;s:1:"y";}', { x: 1, 5: 'y' }],
          ['O:8:"stdClass":1:{s:1:"p";s:1:"q";}', { __phpClass: 'stdClass', properties: { p: 'q' } }],
          ['i:9007199254740993;', 9007199254740993n],
        ]
        for (const [i, [serialized, v]] of cases.entries()) {
          const r = await php.send({ op: 'put', key: `p${i}`, v: b64(serialized), ttl: 60 })
          assert.equal(r.ok, true, r.error)
          assert.deepEqual(await store.get(`p${i}`), v, serialized)
        }
      })
    })
  }

  describe(`Rust interop on ${server}`, () => {
    let store, rust
    before(async () => {
      const table = await freshTable(endpoint)
      store = new Store({ table, endpoint, prefix: 'app_' })
      rust = peer('rust', { endpoint, table, prefix: 'app_' })
    })
    after(() => rust.close())

    test('a lock taken in Node is seen by Rust and released by it', async () => {
      const name = unique('orders:')
      const lock = store.lock(name, { ttl: 30 })
      await lock.acquire()
      assert.equal((await rust.call({ op: 'lock.holder', name })).holder.owner, lock.owner)
      assert.equal((await rust.call({ op: 'lock.key', name })).key, `app_${name}`)
      assert.equal((await rust.call({ op: 'lock.acquire', name, ttl: 30 })).acquired, false)
      assert.equal((await rust.call({ op: 'lock.release', name, owner: lock.owner })).released, true)
      assert.equal(await lock.isLocked(), false)
    })

    test('a lock taken in Rust is held for Node; Node releases it', async () => {
      const name = unique('jobs:')
      const a = await rust.call({ op: 'lock.acquire', name, ttl: 30 })
      assert.equal(a.acquired, true)
      assert.equal(await store.lock(name, { ttl: 30 }).acquire(), false)
      assert.equal(await store.restoreLock(name, a.owner).release(), true)
      assert.equal((await rust.call({ op: 'lock.holder', name })).holder, null)
    })

    test('values both ways with Rust', async () => {
      await store.put('cfg', { a: 1, b: [true, 'x'] }, 60)
      const g = await rust.call({ op: 'get', key: 'cfg' })
      assert.equal(unb64(g.value), 'a:2:{s:1:"a";i:1;s:1:"b";a:2:{i:0;b:1;i:1;s:1:"x";}}')
      await rust.call({ op: 'put', key: 'fromrust', v: b64('a:1:{s:1:"k";d:2.5;}'), ttl: 60 })
      assert.deepEqual(await store.get('fromrust'), { k: 2.5 })
    })
  })
}

// Node ↔ Python, when the Python binding is installed (bindings/python/test.sh makes its venv).
const pyMissing = !existsSync(PYTHON) ? 'the Python binding is not installed (bindings/python/test.sh)' : false

for (const { name: server, endpoint } of SERVERS) {
  describe(`Python interop on ${server}`, { skip: pyMissing }, () => {
    let store, python
    before(async () => {
      const table = await freshTable(endpoint)
      store = new Store({ table, endpoint, prefix: 'app_' })
      python = peer('python', { endpoint, table, prefix: 'app_' })
    })
    after(() => python?.close())

    test('locks both ways', async () => {
      const name = unique('orders:')
      const lock = store.lock(name, { ttl: 30 })
      await lock.acquire()
      assert.equal((await python.call({ op: 'lock.acquire', name, ttl: 30 })).acquired, false)
      assert.equal((await python.call({ op: 'lock.release', name, owner: lock.owner })).released, true)
      assert.equal(await lock.isLocked(), false)
      const got = await python.call({ op: 'lock.acquire', name, ttl: 30 })
      assert.equal(got.acquired, true)
      assert.equal((await store.lock(name).holder()).owner, got.owner)
      assert.equal(await store.restoreLock(name, got.owner).release(), true)
    })

    test('values both ways', async () => {
      await store.put('fromnode', { a: [1, 2.5, 'x', null, true] }, 60)
      const g = await python.call({ op: 'get', key: 'fromnode' })
      assert.equal(unb64(g.value), 'a:1:{s:1:"a";a:5:{i:0;i:1;i:1;d:2.5;i:2;s:1:"x";i:3;N;i:4;b:1;}}')
      await python.call({ op: 'put', key: 'frompy', v: b64('a:1:{s:1:"k";a:2:{i:0;i:1;i:1;s:3:"two";}}'), ttl: 60 })
      assert.deepEqual(await store.get('frompy'), { k: [1, 'two'] })
    })
  })
}
