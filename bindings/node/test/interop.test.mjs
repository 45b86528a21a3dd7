// Node ↔ PHP (Laravel's real DynamoDbStore/DynamoDbLock via compat-tests/laravel/harness.php) and
// Node ↔ Rust (the ddblock CLI) on the same table: locks and values both ways.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import path from 'node:path'
import { SERVERS, ROOT, freshTable, unique, php, b64, unb64, rust } from './helpers.mjs'

const { Store } = createRequire(import.meta.url)('../lib.js')

test('the Rust CLI is built (cargo build -p ddblock-cli)', () => {
  assert.ok(existsSync(path.join(ROOT, 'target/debug/ddblock')), 'run cargo build -p ddblock-cli')
})

for (const { name: server, endpoint } of SERVERS) {
  for (const [layout, prefix] of [['laravel12', 'app_'], ['laravel8', 'app']]) {
    describe(`PHP interop on ${server}, ${layout}`, () => {
      let store, peer
      before(async () => {
        const table = await freshTable(endpoint)
        store = new Store({ table, endpoint, prefix, layout })
        peer = php({ endpoint, table, layout, prefix })
      })
      after(() => peer.close())

      test('a lock taken in Node is held for PHP; PHP releases it with the owner', async () => {
        const name = unique('orders:')
        const lock = store.lock(name, { ttl: 30 })
        assert.equal(await lock.acquire(), true)
        const r = await peer.send({ op: 'lock.acquire', name, ttl: 30 })
        assert.equal(r.ok, true)
        assert.equal(r.acquired, false)
        assert.equal(unb64((await peer.send({ op: 'lock.get', name })).value), `s:16:"${lock.owner}";`)
        assert.deepEqual(await peer.send({ op: 'lock.release', name, owner: lock.owner }), { ok: true, released: true })
        assert.equal(await lock.isLocked(), false)
      })

      test('a lock taken in PHP is held for Node; Node releases it with the owner', async () => {
        const name = unique('jobs:')
        const r = await peer.send({ op: 'lock.acquire', name, ttl: 30 })
        assert.equal(r.acquired, true)
        assert.equal(await store.lock(name, { ttl: 30 }).acquire(), false)
        const h = await store.lock(name).holder()
        assert.equal(h.owner, r.owner)
        assert.equal(await store.restoreLock(name, 'not-the-owner').release(), false)
        assert.equal(await store.restoreLock(name, r.owner).release(), true)
        assert.equal((await peer.send({ op: 'lock.acquire', name, ttl: 30 })).acquired, true)
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
          const r = await peer.send({ op: 'get', key: `k${i}` })
          assert.equal(r.ok, true, r.error)
          assert.equal(unb64(r.value), serialized, `value ${i}`)
        }
        assert.equal((await store.increment('k0', 8)), 50)
        assert.equal(unb64((await peer.send({ op: 'get', key: 'k0' })).value), 'i:50;')
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
          const r = await peer.send({ op: 'put', key: `p${i}`, v: b64(serialized), ttl: 60 })
          assert.equal(r.ok, true, r.error)
          assert.deepEqual(await store.get(`p${i}`), v, serialized)
        }
      })
    })
  }

  describe(`Rust interop on ${server}`, () => {
    let store, table
    before(async () => {
      table = await freshTable(endpoint)
      store = new Store({ table, endpoint, prefix: 'app_' })
    })
    const cli = (args) => rust(endpoint, table, args, { prefix: 'app_' })

    test('a lock taken in Node is seen by Rust and released by it', async () => {
      const name = unique('orders:')
      const lock = store.lock(name, { ttl: 30 })
      await lock.acquire()
      const s = await cli(['status', name])
      assert.equal(s.json.held, true)
      assert.equal(s.json.owner, lock.owner)
      assert.equal(s.json.key, `app_${name}`)
      assert.equal((await cli(['acquire', name, '--ttl', '30'])).code, 75)
      assert.equal((await cli(['release', name, '--owner', lock.owner])).json.released, true)
      assert.equal(await lock.isLocked(), false)
    })

    test('a lock taken in Rust is held for Node; Node releases it', async () => {
      const name = unique('jobs:')
      const a = await cli(['acquire', name, '--ttl', '30'])
      assert.equal(a.json.acquired, true)
      assert.equal(await store.lock(name, { ttl: 30 }).acquire(), false)
      assert.equal(await store.restoreLock(name, a.json.owner).release(), true)
      assert.equal((await cli(['status', name])).json.held, false)
    })

    test('values both ways with Rust', async () => {
      await store.put('cfg', { a: 1, b: [true, 'x'] }, 60)
      const g = await cli(['get', 'cfg', '--consistent'])
      assert.deepEqual(g.json.value, { a: 1, b: [true, 'x'] })
      assert.equal(g.json.table_key, 'app_cfg')
      await cli(['put', 'fromrust', 'a:1:{s:1:"k";d:2.5;}', '--ttl', '60', '--as', 'serialized'])
      assert.deepEqual(await store.get('fromrust'), { k: 2.5 })
    })
  })
}

// Node ↔ Python, when the Python binding is installed (bindings/python/test.sh makes its venv).
const PY = path.join(ROOT, 'bindings/python/.venv/bin/python')
const pyMissing = !existsSync(PY) ? 'the Python binding is not installed (bindings/python/test.sh)' : false
const python = async (endpoint, table, code, arg) => {
  const script = `import json, sys, ddblock\nstore = ddblock.Store(table=${JSON.stringify(table)}, prefix="app_", endpoint_url=${JSON.stringify(endpoint)})\narg = json.loads(sys.argv[1])\n${code}`
  const { stdout } = await promisify(execFile)(PY, ['-c', script, JSON.stringify(arg)])
  return JSON.parse(stdout)
}

for (const { name: server, endpoint } of SERVERS) {
  describe(`Python interop on ${server}`, { skip: pyMissing }, () => {
    let store, table
    before(async () => {
      table = await freshTable(endpoint)
      store = new Store({ table, endpoint, prefix: 'app_' })
    })

    test('locks both ways', async () => {
      const name = unique('orders:')
      const lock = store.lock(name, { ttl: 30 })
      await lock.acquire()
      assert.deepEqual(await python(endpoint, table, `
held = not store.lock(arg["name"], ttl=30).acquire(blocking=False)
print(json.dumps([held, store.restore_lock(arg["name"], arg["owner"]).release()]))`, { name, owner: lock.owner }), [true, true])
      assert.equal(await lock.isLocked(), false)
      const owner = await python(endpoint, table, `
lock = store.lock(arg["name"], ttl=30)
assert lock.acquire(blocking=False)
print(json.dumps(lock.owner))`, { name })
      assert.equal((await store.lock(name).holder()).owner, owner)
      assert.equal(await store.restoreLock(name, owner).release(), true)
    })

    test('values both ways', async () => {
      await store.put('fromnode', { a: [1, 2.5, 'x', null, true] }, 60)
      assert.deepEqual(await python(endpoint, table, `
print(json.dumps(store.get("fromnode")))
store.put("frompy", {"k": [1, "two"]}, ttl=60)`, null), { a: [1, 2.5, 'x', null, true] })
      assert.deepEqual(await store.get('frompy'), { k: [1, 'two'] })
    })
  })
}
