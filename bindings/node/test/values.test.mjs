import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { SERVERS, freshStore } from './helpers.mjs'

const ROUND_TRIPS = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['int', 42],
  ['negative int', -7],
  ['max safe int', Number.MAX_SAFE_INTEGER],
  ['float', 1.5],
  ['tiny float', 1e-10],
  ['string', 'héllo wörld'],
  ['empty string', ''],
  ['list', [1, 'two', [3], null]],
  ['assoc', { a: 1, b: { c: [true, false] }, 'x y': 'z' }],
  ['empty list', []],
  ['big int', 2n ** 62n],
  ['php object', { __phpClass: 'App\\Point', properties: { x: 1, y: 2 } }],
]

for (const { name: server, endpoint } of SERVERS) {
  describe(`values on ${server}`, () => {
    let store
    before(async () => { store = await freshStore(endpoint) })

    test('round trips', async () => {
      for (const [what, v] of ROUND_TRIPS) {
        await store.put(`v:${what}`, v, 60)
        assert.deepEqual(await store.get(`v:${what}`), v, what)
      }
    })

    test('conversions: undefined → null, integral floats → int, Buffer → binary string', async () => {
      await store.put('u', undefined, 60)
      assert.equal(await store.get('u'), null)
      await store.put('f', 2.0, 60)
      assert.equal(await store.get('f'), 2)
      await store.put('bi', 5n, 60)
      assert.equal(await store.get('bi'), 5, 'a bigint within 2^53 comes back as a number')
      await store.put('numstr', '12', 60)
      assert.equal(await store.get('numstr'), 12, 'numeric strings are stored as N, as Laravel does')
      await assert.rejects(store.put('bin', Buffer.from([0xff, 0x00, 0x41]), 60), { code: 'CODEC' },
        'non-UTF-8 bytes cannot go into a DynamoDB S attribute (Laravel fails the same way)')
      await store.put('utf8buf', Buffer.from('plain'), 60)
      assert.equal(await store.get('utf8buf'), 'plain', 'UTF-8 bytes come back as a string')
      await store.put('sparse', { 0: 'a', 2: 'c' }, 60)
      assert.deepEqual(await store.get('sparse'), { 0: 'a', 2: 'c' })
      await store.put('listlike', { 0: 'a', 1: 'b' }, 60)
      assert.deepEqual(await store.get('listlike'), ['a', 'b'], 'keys 0..n are a PHP list')
    })

    test('missing and expired read as undefined', async () => {
      assert.equal(await store.get('never-written'), undefined)
      await store.put('expired', 1, 0)
      assert.equal(await store.get('expired'), undefined)
    })

    test('many, putMany, add, increment, decrement, forever, forget, touch', async () => {
      await store.putMany({ m1: 1, m2: 'two', m3: [3] }, 60)
      assert.deepEqual(await store.many(['m1', 'm2', 'm3', 'm4']), { m1: 1, m2: 'two', m3: [3], m4: undefined })
      assert.equal(await store.add('m1', 'x', 60), false)
      assert.equal(await store.add('fresh', 'x', 60), true)
      assert.equal(await store.increment('m1'), 2)
      assert.equal(await store.increment('m1', 10), 12)
      assert.equal(await store.decrement('m1', 2), 10)
      assert.equal(await store.increment('nothing'), null)
      await store.forever('ever', 'x')
      assert.equal(await store.get('ever'), 'x')
      assert.equal(await store.touch('ever', 100), true)
      assert.equal(await store.touch('nothing', 100), false)
      await store.forget('ever')
      assert.equal(await store.get('ever'), undefined)
    })
  })
}
