// Type-checked (tsc --noEmit, scripts/check-types.mjs), never run: the public types in use.
import {
  Store, Lock, DdblockError, CODES, Once, Claim, Versioned,
  type PhpValue, type ErrorCode, type ErrorKind, type Holder, type TableReport, type OnceStatus, type OnceResult,
  instrument, uninstrument, type LockTraceContext, type AcquireOutcome, type ReleaseOutcome,
} from '..'
import diagnostics from 'node:diagnostics_channel'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base'

async function main (): Promise<void> {
  const store = new Store({ table: 'cache', prefix: 'app_', layout: 'laravel12', endpoint: 'http://127.0.0.1:8000' })
  const env: Store = Store.fromEnv({ region: 'eu-west-1' })
  const lock: Lock = store.lock('orders:42', { ttl: 30 })
  const got: boolean = await lock.acquire({ wait: { timeoutMs: 5000 } })
  const once: boolean = await lock.acquire()
  const owner: string = lock.owner
  const holder: Holder | null = await lock.holder()
  const expires: number | undefined = holder?.expiresAt
  const released: boolean = await lock.release()
  const forced: boolean = await store.restoreLock('orders:42', owner).forceRelease()
  const n: number = await store.withLock('x', { ttl: 10, timeoutMs: 100 }, async (l: Lock) => (await l.isOwned()) ? 1 : 0)
  await store.put('k', { a: [1, 'b', null, true, 2n, Buffer.from('x')], u: undefined }, 60)
  const v: PhpValue | undefined = await store.get('k')
  const m: Record<string, PhpValue | undefined | DdblockError> = await store.many(['a', 'b'])
  const report: TableReport = await store.createTable({ ttl: true, waitMs: 1000 })
  const healthy: boolean = (await store.doctor({ scan: false })).healthy
  const acquired: boolean = await lock.acquire({ wait: { timeoutMs: 10 } })
  const until: number = await lock.block(10)
  const controller = new AbortController()
  const abortable: boolean = await lock.acquire({ wait: { timeoutMs: 10 }, signal: controller.signal })
  const blocked: number = await lock.block(10, { signal: controller.signal })
  const r: string = await store.withLock('x', { timeoutMs: 10, signal: controller.signal }, async (_l, signal) => String(signal.aborted))
  const aborted: ErrorCode = 'ABORTED'
  console.log(abortable, blocked, r, aborted)
  const i: number | bigint | null = await store.increment('counter', 2)
  try {
    await env.flush()
  } catch (e) {
    if (e instanceof DdblockError) {
      const code: ErrorCode = e.code
      const kind: ErrorKind = e.kind
      console.log(kind, e.message, e.cause)
      const svc: string | undefined = e.serviceCode
      console.log(code, svc, CODES.includes(code))
    }
  }
  console.log(got, once, expires, released, forced, n, v, m, i)
}

async function patterns (store: Store): Promise<void> {
  const once: Once = store.once('evt', { ttl: 300, doneTtl: 3600 })
  const r: OnceResult<number> = await once.run(async () => 42)
  const value: number | undefined = r.ran ? r.value : undefined
  const why: string | undefined = r.ran ? undefined : r.status.state
  const claim: Claim = await once.claim()
  if (claim.won) await claim.done()
  else await claim.giveBack()
  const st: OnceStatus = await once.status()
  const read: Versioned = await store.getVersioned('stock')
  const next: number | null = await store.putIfVersion('stock', 9, 60, read.version)
  const same: number | null = await store.putIfVersion('stock', 9, 60, read)
  const up: Versioned = await store.update('stock', (v) => (typeof v === 'number' ? v : 0) - 1, { ttl: 60, attempts: 20 })
  console.log(value, why, st.claims, next, same, up.version, read.value)
}

function observability (): void {
  instrument()
  instrument({ meterProvider: new MeterProvider(), tracerProvider: new BasicTracerProvider() })
  uninstrument()
  diagnostics.tracingChannel<unknown, LockTraceContext>('ddblock:lock:acquire').subscribe({
    start (ctx) { console.log(ctx.operation, ctx.table, ctx.keyLayout) },
    end () {},
    asyncStart () {},
    asyncEnd (ctx) {
      const outcome: AcquireOutcome | ReleaseOutcome | undefined = ctx.outcome
      const type: string | undefined = ctx.errorType
      console.log(outcome, type)
    },
    error () {},
  })
}

void main
void patterns
void observability
