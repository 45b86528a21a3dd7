import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, freshTable, freshStore, unique, faultProxy } from './helpers.mjs'

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

test('an error is data: code, kind, message (no tag), an Error', () => {
  assert.throws(() => new Store({ table: 'x' }), (e) => {
    code('CONFIG')(e)
    assert.ok(e instanceof Error)
    assert.equal(e.name, 'DdblockError')
    assert.equal(e.kind, 'config')
    assert.equal(e.serviceCode, undefined)
    assert.equal(e.cause, undefined)
    assert.match(e.message, /^configuration error: table name "x"/)
    assert.match(e.stack, /^DdblockError: configuration error/)
    return true
  })
})

// napi-rs's own refusal of an argument of the wrong JavaScript type (which the TypeScript types
// rule out) is a TypeError, keeping napi-rs's code; the binding's own checks stay DdblockErrors.
const typeError = (status, pattern) => (e) => {
  assert.ok(e instanceof TypeError, `not a TypeError: ${e}`)
  assert.ok(!(e instanceof DdblockError))
  assert.equal(e.code, status, e.message)
  if (pattern) assert.match(e.message, pattern)
  return true
}

test('wrong argument types are TypeErrors, before any request', async () => {
  const store = new Store({ table: 'never_sent', endpoint: 'http://127.0.0.1:9', maxAttempts: 1 })
  // A name or key as a number.
  assert.throws(() => store.lock(42, { ttl: 5 }), typeError('StringExpected', /`Number 42 ` into rust type `String`/))
  assert.throws(() => store.restoreLock('l', 7), typeError('StringExpected'))
  assert.throws(() => store.once(1, { ttl: 30 }), typeError('StringExpected'))
  const got = store.get(42) // rejects, never throws: every async method returns a promise
  assert.ok(got instanceof Promise)
  await assert.rejects(got, typeError('StringExpected'))
  await assert.rejects(store.many('k'), typeError('ArrayExpected'))
  // A number (other than a ttl) as a string.
  await assert.rejects(store.lock('l', { ttl: 5 }).block('10'), typeError('NumberExpected'))
  await assert.rejects(store.lock('l', { ttl: 5 }).acquire({ wait: { timeoutMs: '10' } }), typeError('NumberExpected'))
  await assert.rejects(store.increment('n', '2'), typeError('NumberExpected'))
  await assert.rejects(store.putIfVersion('k', 1, 60, '3'), typeError('NumberExpected'))
  // Options as a string; a field of the wrong type is named.
  assert.throws(() => new Store('table=cache'), typeError('InvalidArg'))
  assert.throws(() => store.once('e', '30'), typeError('InvalidArg'))
  assert.throws(() => new Store({ table: 42 }), typeError('InvalidArg', /options\.table must be a string/))
  assert.throws(() => new Store({ maxAttempts: '3' }), typeError('InvalidArg', /options\.maxAttempts must be a number/))
  await assert.rejects(store.createTable('now'), typeError('InvalidArg'))
  await assert.rejects(store.doctor('scan'), typeError('InvalidArg'))
  // A ttl of the wrong type stays the core's INVALID_TTL, as in every front.
  assert.throws(() => store.lock('l', { ttl: '30' }), code('INVALID_TTL'))
  await assert.rejects(store.put('k', 1, '30'), code('INVALID_TTL'))
})

test('bad configuration is CONFIG, synchronously', () => {
  // The core's settings table knows every option: a misspelt one is refused with the names.
  assert.throws(() => new Store({ tabel: 'cache' }), (e) => e.code === 'CONFIG' && /unknown Node setting "tabel"; the settings are: table, prefix/.test(e.message))
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
    before(async () => { store = await freshStore(endpoint) })

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
        assert.equal(e.kind, 'service')
        assert.equal(e.serviceCode, 'ValidationException')
        assert.match(e.message, /^DynamoDB PutItem failed with ValidationException: /)
        return true
      })
    })

    test('an item many() cannot decode is a DdblockError value (CODEC), the others still come back', async () => {
      await store.put('good', 1, 60)
      const { DynamoDBClient, PutItemCommand } = await import('@aws-sdk/client-dynamodb')
      const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
      await client.send(new PutItemCommand({ TableName: store.table, Item: { key: { S: 'bad' }, value: { S: 'a:1:{i:0;' } } }))
      client.destroy()
      const values = await store.many(['good', 'bad', 'none'])
      assert.equal(values.good, 1)
      assert.equal(values.none, undefined)
      code('CODEC')(values.bad)
      assert.equal(values.bad.kind, 'codec')
    })

    test('throttling that outlasts the retries is THROTTLED', async () => {
      const proxy = await faultProxy(endpoint, ['--throttle-rate', '1'])
      try {
        const throttled = new Store({ table: store.table, endpoint: proxy.url, maxAttempts: 1 })
        await assert.rejects(throttled.lock(unique('t'), { ttl: 5 }).acquire(), (e) => {
          code('THROTTLED')(e)
          assert.equal(e.kind, 'throttled')
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
