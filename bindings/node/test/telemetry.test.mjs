// What ddblock reports in Node (issue 35): the lock operations on the tracing channels
// `ddblock:lock:acquire` and `ddblock:lock:release`, and `instrument()`, which hands the core's
// metrics and those channels to OpenTelemetry. Read here as an application with the OpenTelemetry
// SDK sees them (a manual metric reader, the in-memory span exporter), through the fault proxy on
// every server: acquisitions and releases by outcome, a cancelled acquire, a lost lease, an unknown
// outcome, a release whose answer was lost; an S3 lock's bucket as its table; a plain channel
// subscriber without OpenTelemetry; nothing more once `uninstrument()` ran; and `instrument()`
// without `@opentelemetry/api`. As core/tests/telemetry.rs, each test reads only its own table's
// points.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import diagnostics from 'node:diagnostics_channel'
import { execFileSync } from 'node:child_process'
import { context, trace, SpanStatusCode } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { SERVERS, freshTable, freshBucket, unique, faultProxy } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { Store, DdblockError, instrument, uninstrument } = require('../lib.js')
const native = require('../native.js')
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// What an application's SDK setup does: an active context that follows async calls.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())

/** A metric reader the test collects from when it wants (cumulative). */
class Reader extends MetricReader {
  async onForceFlush () {}
  async onShutdown () {}
}

const reader = new Reader()
const meterProvider = new MeterProvider({ readers: [reader] })
const exporter = new InMemorySpanExporter()
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const testTracer = tracerProvider.getTracer('test')

/**
 * Every data point of `table`'s metrics, once the measurements queued for the JavaScript thread
 * arrived: `{ name, attributes, value }` (a histogram's `value` is its count).
 */
async function points (table) {
  await sleep(100)
  const { resourceMetrics, errors } = await reader.collect()
  assert.deepEqual(errors, [])
  const out = []
  for (const scope of resourceMetrics.scopeMetrics) {
    assert.equal(scope.scope.name, 'ddblock')
    for (const metric of scope.metrics) {
      for (const p of metric.dataPoints) {
        if (p.attributes['db.collection.name'] !== table) continue
        const value = typeof p.value === 'number' ? p.value : p.value.count
        const bounds = p.value.buckets?.boundaries
        out.push({ name: metric.descriptor.name, attributes: p.attributes, value, bounds, descriptor: metric.descriptor })
      }
    }
  }
  return out
}

/** The attribute a point is counted by: its outcome, or its clean-up ('' for none). */
const BY = ['ddblock.lock.outcome', 'ddblock.lock.release_outcome', 'ddblock.lock.cleanup']
const by = (attributes) => attributes[BY.find((k) => k in attributes)] ?? ''

/** The count of metric `name` whose outcome (or clean-up) is `value` ('' for none). */
const count = (pts, name, value) =>
  pts.filter((p) => p.name === name && by(p.attributes) === value).reduce((n, p) => n + p.value, 0)

/** The finished ddblock spans of `table`, taken from the exporter. */
const spans = (table) => exporter.getFinishedSpans()
  .filter((s) => s.instrumentationScope.name === 'ddblock' && s.attributes['db.collection.name'] === table)

/** The outcomes of `table`'s spans named `name`, in the order they ended. */
const outcomes = (table, name, key) => spans(table).filter((s) => s.name === name).map((s) => s.attributes[key])

/** Asserts no attribute of `table`'s spans or points names a lock or an owner in `secrets`. */
function noSecrets (table, pts, secrets) {
  const seen = JSON.stringify([...spans(table).map((s) => s.attributes), ...pts.map((p) => p.attributes)])
  for (const secret of secrets) assert.ok(!seen.includes(secret), `${secret} in ${seen}`)
}

const ACQ = ['ddblock.lock.acquire', 'ddblock.lock.outcome']
const REL = ['ddblock.lock.release', 'ddblock.lock.release_outcome']

describe('instrument()', () => {
  before(() => instrument({ meterProvider, tracerProvider }))
  after(() => uninstrument())

  test('makes the instruments of the core\'s table', async () => {
    const table = native.instruments()
    const names = table.filter((i) => i.kind === 'counter' || i.kind === 'histogram').map((i) => i.name)
    for (const name of ['ddblock.lock.acquisitions', 'ddblock.lock.wait.duration', 'ddblock.lock.hold.duration',
      'ddblock.lock.releases', 'ddblock.lock.lease_lost', 'ddblock.lock.unknown_outcomes']) {
      assert.ok(names.includes(name), `${name} in ${names}`)
    }
    // The spans' attributes are the table's (error.type besides, on a failure).
    for (const [name, key] of [ACQ, REL]) {
      const row = table.find((i) => i.kind === 'span' && i.name === name)
      assert.deepEqual(row.attributes, ['db.collection.name', 'ddblock.key_layout', key])
    }
    assert.ok(table.every((i) => !i.attributes.some((a) => a.includes('owner'))))
  })

  for (const { name: server, endpoint } of SERVERS) {
    describe(`on ${server}`, () => {
      let proxy
      before(async () => { proxy = await faultProxy(endpoint, []) })
      after(() => proxy.stop())
      /** A store on a fresh table through the fault proxy (none by default): `[store, table]`. */
      const through = async (options = {}) => {
        const t = await freshTable(endpoint)
        await proxy.faults({})
        return [new Store({ table: t, endpoint: proxy.url, ...options }), t]
      }

      test('acquisitions and releases are counted and traced by outcome', async () => {
        const [store, t] = await through()
        const name = unique('counted:')
        const a = store.lock(name, { ttl: 60 })
        const b = store.lock(name, { ttl: 60 })
        const callerId = await testTracer.startActiveSpan('the caller', async (caller) => {
          assert.equal(await a.acquire(), true) // acquired
          assert.equal(await b.acquire(), false) // held: tried once
          assert.equal(await b.acquire({ wait: { timeoutMs: 300 } }), false) // timed_out
          await assert.rejects(b.block(200), { code: 'LOCK_TIMEOUT' }) // timed_out
          await assert.rejects(b.block(0), { code: 'LOCK_TIMEOUT' }) // held: tried once
          assert.equal(await a.release(), true) // released
          assert.equal(await a.release(), false) // not_held
          assert.equal(await b.acquire(), true) // acquired
          assert.equal(await a.release(), false) // other_owner
          assert.equal(await b.release(), true) // released
          assert.equal(await store.withLock(unique('with:'), { ttl: 60 }, async () => 7), 7) // acquired, released
          caller.end()
          return caller.spanContext().spanId
        })

        const p = await points(t)
        const acq = 'ddblock.lock.acquisitions'
        assert.equal(count(p, acq, 'acquired'), 3, JSON.stringify(p))
        assert.equal(count(p, acq, 'held'), 2)
        assert.equal(count(p, acq, 'timed_out'), 2)
        const rel = 'ddblock.lock.releases'
        assert.equal(count(p, rel, 'released'), 3)
        assert.equal(count(p, rel, 'not_held'), 1)
        assert.equal(count(p, rel, 'other_owner'), 1)
        assert.equal(count(p, 'ddblock.lock.wait.duration', 'timed_out'), 2)
        assert.equal(count(p, 'ddblock.lock.hold.duration', 'released'), 3)
        // Buckets in seconds, as the core's table advises (not the SDK's, made for milliseconds).
        const advised = native.instruments().find((i) => i.name === 'ddblock.lock.hold.duration').boundaries
        assert.deepEqual(p.find((x) => x.name === 'ddblock.lock.hold.duration').bounds, advised)
        assert.equal(advised[0], 0.005)
        const point = p.find((x) => x.name === acq)
        assert.equal(point.attributes['ddblock.key_layout'], 'laravel12')
        assert.equal(point.descriptor.unit, '{acquisition}')
        assert.match(point.descriptor.description, /^An acquire ended/)

        // The spans: one per call, with the outcome the metrics counted, children of the caller's.
        assert.deepEqual(outcomes(t, ...ACQ), ['acquired', 'held', 'timed_out', 'timed_out', 'held', 'acquired', 'acquired'])
        assert.deepEqual(outcomes(t, ...REL), ['released', 'not_held', 'other_owner', 'released', 'released'])
        for (const s of spans(t)) {
          assert.equal(s.parentSpanContext?.spanId, callerId, 'a child of the caller\'s span')
          assert.equal(s.attributes['ddblock.key_layout'], 'laravel12')
          assert.equal(s.status.code, SpanStatusCode.UNSET, `${s.name} ${s.attributes[ACQ[1]]}: a held lock is an answer`)
          assert.equal(s.attributes['error.type'], undefined)
        }
        noSecrets(t, p, [name, a.owner, b.owner, 'with:'])
      })

      test('a cancelled acquire is counted and traced as cancelled', async () => {
        const [store, t] = await through()
        const name = unique('cancel:')
        const holder = store.lock(name, { ttl: 60 })
        assert.equal(await holder.acquire(), true)
        await assert.rejects(
          store.lock(name).acquire({ wait: { timeoutMs: Infinity }, signal: AbortSignal.timeout(300) }),
          (e) => e instanceof DdblockError && e.code === 'ABORTED'
        )
        await holder.release()
        const p = await points(t)
        assert.equal(count(p, 'ddblock.lock.acquisitions', 'cancelled'), 1, JSON.stringify(p))
        assert.equal(count(p, 'ddblock.lock.wait.duration', 'cancelled'), 1)
        assert.deepEqual(outcomes(t, ...ACQ), ['acquired', 'cancelled'])
        const cancelled = spans(t).find((s) => s.attributes[ACQ[1]] === 'cancelled')
        assert.equal(cancelled.status.code, SpanStatusCode.UNSET)
      })

      test('a lost lease and an unknown outcome are counted (the fault proxy)', async () => {
        const [store, t] = await through({ maxAttempts: 2, attemptTimeoutMs: 400, heartbeatIntervalMs: 100 })
        const name = unique('leased:')
        const other = new Store({ table: t, endpoint })
        await assert.rejects(
          store.withLock(name, { ttl: 60 }, async (lock, signal) => {
            await other.lock(name).forceRelease()
            await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
          }),
          { code: 'LEASE_LOST' }
        )
        // Every acquire write's answer lost: the outcome is unknown, and the clean-up left nothing.
        await proxy.faults({ drop_response_rate: 1, drop_ops: ['UpdateItem'] })
        await assert.rejects(store.lock(unique('unknown:'), { ttl: 60 }).acquire(), { code: 'OUTCOME_UNKNOWN' })
        await proxy.faults({})

        const p = await points(t)
        assert.equal(count(p, 'ddblock.lock.lease_lost', ''), 1, JSON.stringify(p))
        assert.equal(count(p, 'ddblock.lock.unknown_outcomes', 'clean'), 1)
        assert.equal(count(p, 'ddblock.lock.acquisitions', 'unknown'), 1)
        assert.deepEqual(outcomes(t, ...ACQ), ['acquired', 'unknown'])
        const unknown = spans(t).find((s) => s.attributes[ACQ[1]] === 'unknown')
        assert.equal(unknown.attributes['error.type'], 'outcome_unknown')
        assert.equal(unknown.status.code, SpanStatusCode.ERROR)
        // withLock's release span: the end of the lease, which was lost.
        const [end] = spans(t).filter((s) => s.name === REL[0])
        assert.equal(end.attributes[REL[1]], 'error')
        assert.equal(end.attributes['error.type'], 'lease_lost')
        assert.equal(end.status.code, SpanStatusCode.ERROR)
        assert.equal(end.status.message, undefined, 'no message: it can name the lock')
      })

      test('a release whose answer was lost is not_held, once (the fault proxy)', async () => {
        const [store, t] = await through()
        const lock = store.lock(unique('lost-answer:'), { ttl: 60 })
        assert.equal(await lock.acquire(), true)
        await proxy.faults({ sequence: { DeleteItem: ['drop'] } })
        assert.equal(await lock.release(), false, 'the resend found its own delete done')
        await proxy.faults({})
        const p = await points(t)
        assert.equal(count(p, 'ddblock.lock.releases', 'not_held'), 1, JSON.stringify(p))
        assert.equal(count(p, 'ddblock.lock.releases', 'released'), 0)
        assert.deepEqual(outcomes(t, ...REL), ['not_held'])
      })
    })
  }
})

describe('without OpenTelemetry', () => {
  const { endpoint } = SERVERS[0]

  test('a plain diagnostics_channel subscriber sees each operation and its outcome', async () => {
    const seen = []
    const acquire = diagnostics.tracingChannel('ddblock:lock:acquire')
    const release = diagnostics.tracingChannel('ddblock:lock:release')
    const handlers = (channel) => ({
      start: (ctx) => seen.push({ channel, event: 'start', ...ctx }),
      end () {},
      asyncStart () {},
      asyncEnd: (ctx) => seen.push({ channel, event: 'asyncEnd', ...ctx }),
      error: (ctx) => seen.push({ channel, event: 'error', errorType: ctx.errorType }),
    })
    const subscribers = [[acquire, handlers('acquire')], [release, handlers('release')]]
    for (const [tc, h] of subscribers) tc.subscribe(h)
    try {
      const table = await freshTable(endpoint)
      const store = new Store({ table, endpoint, layout: 'laravel11' })
      const name = unique('plain:')
      const lock = store.lock(name, { ttl: 60 })
      assert.equal(await lock.acquire(), true)
      await assert.rejects(store.lock(name).block(100), { code: 'LOCK_TIMEOUT' })
      assert.equal(await lock.release(), true)

      const where = { table, keyLayout: 'laravel11' }
      const strip = ({ result, error, ...rest }) => rest
      assert.deepEqual(seen.map(strip), [
        { channel: 'acquire', event: 'start', operation: 'acquire', ...where },
        { channel: 'acquire', event: 'asyncEnd', operation: 'acquire', ...where, outcome: 'acquired' },
        { channel: 'acquire', event: 'start', operation: 'block', ...where },
        { channel: 'acquire', event: 'error', errorType: 'lock_timeout' },
        { channel: 'acquire', event: 'asyncEnd', operation: 'block', ...where, outcome: 'timed_out', errorType: 'lock_timeout' },
        { channel: 'release', event: 'start', operation: 'release', ...where },
        { channel: 'release', event: 'asyncEnd', operation: 'release', ...where, outcome: 'released' },
      ])
      // Node's own fields: the result (a boolean for acquire and release), the error.
      assert.equal(seen[1].result, true)
      assert.equal(seen[4].error.code, 'LOCK_TIMEOUT')
      assert.ok(!JSON.stringify(seen.map(strip)).includes(lock.owner))
      assert.ok(!JSON.stringify(seen.map(strip)).includes(name))
    } finally {
      for (const [tc, h] of subscribers) tc.unsubscribe(h)
    }
  })

  test('an S3 lock\'s table is its bucket, in the channel and the metrics', async () => {
    const moto = SERVERS.find((x) => x.name === 'moto').endpoint
    const bucket = await freshBucket(moto)
    const store = new Store({ table: unique('no_table_'), endpoint: moto, backend: 's3', bucket })
    const tables = []
    const handlers = { start: (ctx) => tables.push(ctx.table) }
    const acquire = diagnostics.tracingChannel('ddblock:lock:acquire')
    acquire.subscribe(handlers)
    instrument({ meterProvider, tracerProvider })
    try {
      const lock = store.lock(unique('s3:'), { ttl: 60 })
      assert.equal(await lock.acquire(), true)
      assert.equal(await lock.release(), true)
    } finally {
      uninstrument()
      acquire.unsubscribe(handlers)
    }
    assert.deepEqual(tables, [bucket])
    const p = await points(bucket)
    assert.equal(count(p, 'ddblock.lock.acquisitions', 'acquired'), 1, JSON.stringify(p))
    assert.deepEqual(outcomes(bucket, ...REL), ['released'])
  })

  test('after uninstrument() nothing more is recorded', async () => {
    const table = await freshTable(endpoint)
    const store = new Store({ table, endpoint })
    const lock = store.lock(unique('un:'), { ttl: 60 })
    instrument({ meterProvider, tracerProvider })
    assert.equal(await lock.acquire(), true)
    uninstrument()
    assert.equal(diagnostics.tracingChannel('ddblock:lock:acquire').hasSubscribers, false)
    assert.equal(diagnostics.tracingChannel('ddblock:lock:release').hasSubscribers, false)
    assert.equal(await lock.release(), true)
    assert.equal(await lock.acquire(), true)
    await store.withLock(unique('un:'), { ttl: 60 }, async () => {})
    const p = await points(table)
    assert.equal(count(p, 'ddblock.lock.acquisitions', 'acquired'), 1, JSON.stringify(p))
    assert.equal(count(p, 'ddblock.lock.releases', 'released'), 0)
    assert.deepEqual(outcomes(table, ...ACQ), ['acquired'])
    assert.deepEqual(outcomes(table, ...REL), [])
    uninstrument() // twice: nothing to remove
  })

  test('without @opentelemetry/api, instrument() throws CONFIG; the package loads as ever', () => {
    // A process in which the optional peer dependency cannot be found.
    const hide = `const M = require('node:module'); const load = M._load
M._load = function (request, ...rest) {
  if (request === '@opentelemetry/api') throw Object.assign(new Error('not installed'), { code: 'MODULE_NOT_FOUND' })
  return load.call(this, request, ...rest)
}
const { instrument, Store } = require(${JSON.stringify(require.resolve('../lib.js'))})
new Store({ table: 'cache' }).lock('job')
try { instrument() } catch (e) { console.log(JSON.stringify([e.name, e.code, e.message])) }`
    const [name, code, message] = JSON.parse(execFileSync(process.execPath, ['-e', hide], { encoding: 'utf8' }))
    assert.deepEqual([name, code], ['DdblockError', 'CONFIG'])
    assert.match(message, /npm install @opentelemetry\/api/)
  })

  test('instrument() defaults to the global providers', async () => {
    const { metrics } = require('@opentelemetry/api')
    assert.ok(metrics.setGlobalMeterProvider(meterProvider))
    assert.ok(trace.setGlobalTracerProvider(tracerProvider))
    try {
      instrument()
      const table = await freshTable(endpoint)
      const lock = new Store({ table, endpoint }).lock(unique('global:'), { ttl: 60 })
      assert.equal(await lock.acquire(), true)
      assert.equal(await lock.release(), true)
      const p = await points(table)
      assert.equal(count(p, 'ddblock.lock.acquisitions', 'acquired'), 1, JSON.stringify(p))
      assert.deepEqual(outcomes(table, ...REL), ['released'])
    } finally {
      uninstrument()
      metrics.disable()
      trace.disable()
    }
  })
})
