// The s3 lock backend from Node: `new Store({ backend: 's3', bucket, endpoint })` on moto's S3
// (dynalite has no S3). The constructor only converts; the lock rules are the core's.
import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, freshBucket, unique } from './helpers.mjs'

const { Store, DdblockError } = createRequire(import.meta.url)('../lib.js')
const { endpoint } = SERVERS.find((s) => s.name === 'moto')

describe('locks in an S3 bucket (moto)', () => {
  let bucket
  let store
  before(async () => {
    bucket = await freshBucket(endpoint)
    // No table: the locks never touch it.
    store = new Store({ table: unique('no_table_'), endpoint, prefix: 'app_', backend: 's3', bucket })
  })

  test('acquire, the object, held, refresh, release, withLock', async () => {
    const a = store.lock('orders', { ttl: 30 })
    assert.equal(await a.acquire(), true)
    const fence = a.fence
    assert.ok(Number.isInteger(fence), 'S3 locks carry a fencing token')
    // In this bucket, not in another (the object's format: core/tests/s3_lock.rs).
    const elsewhere = new Store({ endpoint, prefix: 'app_', backend: 's3', bucket: await freshBucket(endpoint) })
    assert.equal(await elsewhere.lock('orders').isLocked(), false)
    const b = store.lock('orders', { ttl: 30 })
    assert.equal(await b.acquire(), false)
    assert.equal((await b.holder()).owner, a.owner)
    assert.equal(await b.release(), false, 'not ours')
    assert.equal(await a.refresh(60), true)
    assert.equal(await a.release(), true)
    assert.equal(await a.holder(), null, 'released')
    const seen = await store.withLock('orders', { ttl: 30, timeoutMs: 1000 }, async (lock) => {
      assert.equal(await lock.isOwned(), true)
      return lock.fence
    })
    assert.ok(seen > fence, `the fence grows: ${seen} after ${fence}`)
    assert.equal(await store.lock('orders').isLocked(), false)
  })

  test('the environment selects the backend; an explicit one wins', async () => {
    const saved = { ...process.env }
    try {
      process.env.DDBLOCK_BACKEND = 's3'
      process.env.DDBLOCK_S3_BUCKET = bucket
      const fromEnv = new Store({ table: unique('no_table_'), endpoint, prefix: 'env_' })
      const lock = fromEnv.lock('job', { ttl: 10 })
      assert.equal(await lock.acquire(), true)
      assert.equal((await store.lock('job').holder()), null, 'another prefix')
      assert.equal((await new Store({ endpoint, prefix: 'env_', backend: 's3', bucket }).lock('job').holder()).owner, lock.owner)
      assert.equal(await lock.release(), true)
      const table = new Store({ table: unique('no_table_'), endpoint, backend: 'dynamodb' })
      await assert.rejects(table.lock('job', { ttl: 10 }).acquire(), (e) => e instanceof DdblockError && e.code === 'TABLE_NOT_FOUND')
    } finally {
      for (const k of ['DDBLOCK_BACKEND', 'DDBLOCK_S3_BUCKET']) {
        if (saved[k] === undefined) delete process.env[k]
        else process.env[k] = saved[k]
      }
    }
  })

  test('doctor probes the bucket: every s3_* check reaches Node', async () => {
    // The probe's rules and its failures through a proxy are the core's (core/tests/s3_probe.rs).
    const report = await store.doctor({ scan: false })
    assert.equal(report.healthy, true, JSON.stringify(report))
    const ids = report.checks.map((c) => c.id)
    const s3 = ['s3_create_if_absent', 's3_etag_changes', 's3_if_match_put', 's3_if_match_delete', 's3_versioning', 's3_cleanup']
    assert.deepEqual(ids.slice(-6), s3)
    for (const c of report.checks.filter((c) => s3.includes(c.id))) assert.equal(c.status, 'ok', JSON.stringify(c))
    assert.equal(report.checks.find((c) => c.id === 'table').status, 'warn', 'no table: the locks do not need one')
    assert.equal(report.s3.bucket, bucket)
    assert.equal(report.s3.cleanedUp, true)
    assert.match(report.s3.scratchKey, /^app_ddblock-doctor-probe-/)
    const listing = await (await fetch(`${endpoint}/${bucket}?list-type=2`)).text()
    assert.ok(!listing.includes(report.s3.scratchKey), 'the scratch object is removed')
    const table = await new Store({ table: unique('no_table_'), endpoint, backend: 'dynamodb' }).doctor({ scan: false })
    assert.equal(table.s3, undefined, 'locks in the table: no probe')
  })

  test('configuration errors', async () => {
    assert.throws(() => new Store({ endpoint, backend: 's3' }), (e) => e.code === 'CONFIG' && /needs a bucket/.test(e.message))
    assert.throws(() => new Store({ endpoint, backend: 's4' }), (e) => e.code === 'CONFIG' && /unknown lock backend/.test(e.message))
    const missing = new Store({ endpoint, backend: 's3', bucket: 'no-such-bucket-node' })
    await assert.rejects(missing.lock('x', { ttl: 5 }).acquire(), (e) => e.code === 'CONFIG' && /does not exist/.test(e.message))
  })
})
