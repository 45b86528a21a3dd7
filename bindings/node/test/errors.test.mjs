import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, freshTable, unique, faultProxy } from './helpers.mjs'

const { Store, DdblockError, CODES } = createRequire(import.meta.url)('../lib.js')

const code = (c) => (e) => {
  assert.ok(e instanceof DdblockError, `not a DdblockError: ${e}`)
  assert.equal(e.code, c, e.message)
  assert.ok(!/^[A-Z_]+(\[|:)/.test(e.message), 'the code tag is stripped from the message')
  return true
}

test('the codes are the core kinds, upper-cased', () => {
  assert.deepEqual([...CODES].sort(), [
    'CODEC', 'CONFIG', 'CONFLICT', 'CREDENTIALS', 'INVALID_KEY', 'INVALID_TTL', 'LEASE_LOST',
    'LOCK_TIMEOUT', 'OUTCOME_UNKNOWN', 'SERVICE', 'TABLE_NOT_FOUND', 'THROTTLED', 'TRANSPORT',
    'UNSUPPORTED',
  ])
})

test('bad configuration is CONFIG, synchronously', () => {
  assert.throws(() => new Store({ table: 'x' }), code('CONFIG'))
  assert.throws(() => new Store({ layout: 'laravel7' }), code('CONFIG'))
  assert.throws(() => new Store({ endpoint: 'localhost:8000' }), code('CONFIG'))
  assert.throws(() => new Store({ keyAttribute: 'value' }), code('CONFIG'))
})

test('an unreachable endpoint is TRANSPORT', async () => {
  const store = new Store({ endpoint: 'http://127.0.0.1:9', connectTimeoutMs: 200, operationTimeoutMs: 1000, maxAttempts: 1 })
  await assert.rejects(store.get('k'), code('TRANSPORT'))
  await assert.rejects(store.lock('l', { ttl: 5 }).acquire(), code('TRANSPORT'))
})

for (const { name: server, endpoint } of SERVERS) {
  describe(`errors on ${server}`, () => {
    let store
    before(async () => { store = new Store({ table: await freshTable(endpoint), endpoint }) })

    test('empty key and lock name are INVALID_KEY', async () => {
      await assert.rejects(store.get(''), code('INVALID_KEY'))
      await assert.rejects(store.put('', 1, 10), code('INVALID_KEY'))
      assert.throws(() => store.lock('', { ttl: 5 }), code('INVALID_KEY'))
      assert.throws(() => store.restoreLock('', 'owner'), code('INVALID_KEY'))
    })

    test('a 3 KB key is INVALID_KEY', async () => {
      const big = 'k'.repeat(3072)
      await assert.rejects(store.get(big), code('INVALID_KEY'))
      assert.throws(() => store.lock(big, { ttl: 5 }), code('INVALID_KEY'))
    })

    test('a missing table is TABLE_NOT_FOUND', async () => {
      const missing = new Store({ table: unique('missing_'), endpoint })
      await assert.rejects(missing.get('k'), code('TABLE_NOT_FOUND'))
      await assert.rejects(missing.lock('l', { ttl: 5 }).acquire(), code('TABLE_NOT_FOUND'))
    })

    test('bad ttls are INVALID_TTL', async () => {
      assert.throws(() => store.lock('l', { ttl: 1.5 }), code('INVALID_TTL'))
      assert.throws(() => store.lock(unique('l'), { ttl: -1 }), code('INVALID_TTL'))
      await assert.rejects(store.put('k', 1, Number.NaN), code('INVALID_TTL'))
    })

    test('unstorable values are CODEC', async () => {
      await assert.rejects(async () => store.put('k', new Date(), 10), code('CODEC'))
      await assert.rejects(async () => store.put('k', new Map(), 10), code('CODEC'))
      await assert.rejects(async () => store.put('k', () => 1, 10), code('CODEC'))
      await assert.rejects(async () => store.put('k', 2n ** 64n, 10), code('CODEC'))
      await assert.rejects(async () => store.put('k', Infinity, 10), code('CODEC'))
      const cyclic = {}
      cyclic.self = cyclic
      await assert.rejects(async () => store.put('k', cyclic, 10), code('CODEC'))
    })

    test('a table with another key schema is SERVICE with DynamoDB\'s code', async () => {
      const other = new Store({ table: await freshTable(endpoint, 'id'), endpoint })
      await assert.rejects(other.put('k', 1, 10), (e) => {
        code('SERVICE')(e)
        assert.equal(e.serviceCode, 'ValidationException')
        return true
      })
    })

    test('throttling that outlasts the retries is THROTTLED', async () => {
      const proxy = await faultProxy(endpoint, ['--throttle-rate', '1'])
      try {
        const throttled = new Store({ table: store.table, endpoint: proxy.url, maxAttempts: 1 })
        await assert.rejects(throttled.lock(unique('t'), { ttl: 5 }).acquire(), (e) => {
          code('THROTTLED')(e)
          assert.equal(e.serviceCode, 'ProvisionedThroughputExceededException')
          return true
        })
      } finally {
        proxy.stop()
      }
    })

    test('flush is UNSUPPORTED', async () => {
      await assert.rejects(store.flush(), code('UNSUPPORTED'))
    })
  })
}
