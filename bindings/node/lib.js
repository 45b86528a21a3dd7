'use strict'
// The `ddblock` package: a thin layer over the native module (native.js, the loader napi-rs generates).
// It only (1) hands the native module the DdblockError class, which the native side instantiates
// with the core error's data (`code`, `kind`, `serviceCode`, `message`, `cause`), and makes
// napi-rs's own refusal of an argument (a number where a string belongs) a TypeError,
// (2) turns an AbortSignal into the native cancel handle (the core drops the acquire in flight),
// and (3) adds the helpers that run JavaScript callbacks: `withLock` (under a lock), `Once.run`
// (once per event) and `update` (read-modify-write, retried by the core's bounded retry), and
// (4) reports: the lock operations on the tracing channels `ddblock:lock:acquire` and
// `ddblock:lock:release` (when subscribed), and `instrument()`, which hands the core's metrics
// and those channels to OpenTelemetry. Every rule (waits, ttls, defaults, conditions, attempts,
// backoff, the clean-up of a cancelled acquire) is the Rust core's.

const diagnostics = require('node:diagnostics_channel')
const native = require('./native.js')

/** Every error code, from the core's list of error kinds. */
const CODES = Object.freeze(native.errorCodes())

/**
 * Every failure of the binding: built by the native module from the core's error, `code` its kind
 * upper-cased, `kind` the core's name for it, `serviceCode` DynamoDB's code (when there is one).
 */
class DdblockError extends Error {
  constructor (code, message, serviceCode, cause, kind) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'DdblockError'
    this.code = code
    this.kind = kind
    if (serviceCode !== undefined) this.serviceCode = serviceCode
  }
}
native.useErrorClass(DdblockError)
// The core's warnings (a clock off DynamoDB's, a lease lost, a failed clean-up): process warnings
// of type 'DdblockWarning', printed on stderr unless the application listens for 'warning'.
native.useWarningHandler((message) => process.emitWarning(message, 'DdblockWarning'))

/**
 * The rejection of an aborted acquire or wait: a DdblockError with code ABORTED whose `name` is
 * 'AbortError' (as fetch's and timers' aborts), `cause` the signal's reason.
 */
function abortError (e, signal) {
  const err = new DdblockError('ABORTED', e.message, undefined, signal.reason, 'aborted')
  err.name = 'AbortError'
  return err
}

/** The statuses napi-rs gives an argument it cannot convert to the Rust type it needs. */
const ARGUMENT_STATUSES = new Set([
  'InvalidArg', 'ObjectExpected', 'StringExpected', 'NameExpected', 'FunctionExpected',
  'NumberExpected', 'BooleanExpected', 'ArrayExpected', 'BigintExpected', 'DateExpected',
  'ArrayBufferExpected', 'DetachableArraybufferExpected',
])

/**
 * napi-rs's refusal of an argument (its own `Error`, e.g. code `StringExpected`) as a TypeError
 * with the same message (which names the field, when napi-rs knows it) and `code`.
 */
function argumentError (e) {
  if (!(e instanceof Error) || e instanceof DdblockError || !ARGUMENT_STATUSES.has(e.code)) return e
  const err = new TypeError(e.message)
  err.code = e.code
  return err
}

/** Runs a native call; napi-rs's refusal of an argument is thrown as a TypeError. */
function call (fn) {
  try {
    return fn()
  } catch (e) {
    throw argumentError(e)
  }
}

/** Runs a native call that returns a promise: what it throws (a refused argument) rejects it. */
function promise (fn) {
  try {
    return fn()
  } catch (e) {
    return Promise.reject(argumentError(e))
  }
}

/**
 * The native cancel handle for `signal` (none without one), cancelled when it aborts; `done()`
 * stops listening. The core drops what the handle cancels; nothing here decides anything.
 */
function cancelOn (signal) {
  if (signal == null) return { token: undefined, done () {} }
  const token = new native.NativeCancel()
  const onAbort = () => token.cancel()
  if (signal.aborted) token.cancel()
  else signal.addEventListener('abort', onAbort, { once: true })
  return { token, done: () => signal.removeEventListener('abort', onAbort) }
}

/** Calls `fn(token)` with the cancel handle of `signal`; an ABORTED rejection becomes an AbortError. */
async function cancellable (signal, fn) {
  const { token, done } = cancelOn(signal)
  try {
    return await call(() => fn(token))
  } catch (e) {
    throw e instanceof DdblockError && e.code === 'ABORTED' ? abortError(e, signal) : e
  } finally {
    done()
  }
}

/**
 * The core's error from ending the lock (or giving back a claim) after the callback threw: the
 * callback's error is rethrown unchanged and carries it as `lockError` (or, for a thrown
 * primitive or a frozen object, it becomes a process warning), as Python adds it as a note.
 */
function keepLockError (thrown, lockError) {
  if (thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function') && Object.isExtensible(thrown)) {
    thrown.lockError = lockError
  } else {
    process.emitWarning(`after the callback threw, ${lockError.message}`, { type: 'DdblockWarning', code: lockError.code })
  }
}

/** An error of `withLock` after the callback finished: its result is kept in `value`. */
function withValue (e, value) {
  if (e instanceof Error) e.value = value
  return e
}

/**
 * The lock operations as Node's tracing channels (`tracing:ddblock:lock:acquire:start`, `:end`,
 * `:asyncStart`, `:asyncEnd`, `:error`; the same for `release`). The context of each: `operation`
 * (`acquire`, `block`, `withLock` or `release`), `table` (the table, or the S3 bucket:
 * OpenTelemetry's `db.collection.name`), `keyLayout`, and once it settled `outcome` (the core's
 * `ddblock.lock.outcome` or `ddblock.lock.release_outcome`) and, when it rejected, `errorType`
 * (the error's `kind`). Never the owner token, nor the lock's name (a key can be secret).
 */
const ACQUIRE = diagnostics.tracingChannel('ddblock:lock:acquire')
const RELEASE = diagnostics.tracingChannel('ddblock:lock:release')

/** Whether tracing channel `tc` has a subscriber (Node < 20.13 has no `tc.hasSubscribers`). */
const subscribed = (tc) => tc.hasSubscribers ??
  [tc.start, tc.end, tc.asyncStart, tc.asyncEnd, tc.error].some((c) => c.hasSubscribers)

/** An acquire's outcome: resolved ours (`ok`), or still held (a timeout if it `waits`). */
const acquireOutcome = (waits, ok) => ok ? 'acquired' : waits ? 'timed_out' : 'held'

/** The outcome of an acquire that rejected with `e`. */
function acquireFailure (waits, e) {
  switch (e?.code) {
    case 'LOCK_TIMEOUT': return acquireOutcome(waits, false)
    case 'ABORTED': return 'cancelled'
    case 'OUTCOME_UNKNOWN': return 'unknown'
    default: return 'error'
  }
}

/** `error.type` of a rejection: the DdblockError's `kind`, else the error's name. */
const errorType = (e) => e instanceof DdblockError ? e.kind : e instanceof Error ? e.name : typeof e

/**
 * Runs `op()` on tracing channel `tc` with context `{ operation, ...where }` (where the lock lives;
 * only built when someone subscribed), its `outcome` set from the result (`resolved(result)`) or
 * the rejection (`rejected(error)`, `errorType` beside it) before the channel's asyncStart.
 */
function traced (tc, operation, where, resolved, rejected, op) {
  if (!subscribed(tc)) return op()
  const ctx = { operation, table: where.table, keyLayout: where.keyLayout }
  return tc.tracePromise(async () => {
    try {
      const result = await op()
      ctx.outcome = resolved(result)
      return result
    } catch (e) {
      ctx.outcome = rejected(e)
      ctx.errorType = errorType(e)
      throw e
    }
  }, ctx)
}

class Lock {
  #n
  #where
  /** `where`: `{ table, keyLayout }` of the store (what the tracing channels carry). */
  constructor (n, where) { this.#n = n; this.#where = where }
  static native (l) { return l.#n }
  /** Runs acquire `op()` on the acquire channel; `waits`: it may wait (a held lock is a timeout). */
  static tracedAcquire (l, operation, waits, op) {
    const ok = (r) => acquireOutcome(waits, r !== false)
    return traced(ACQUIRE, operation, l.#where, ok, (e) => acquireFailure(waits, e), op)
  }
  /** Runs release `op()` on the release channel: `resolved(result)` is its release outcome. */
  static tracedRelease (l, operation, resolved, op) {
    return traced(RELEASE, operation, l.#where, resolved, () => 'error', op)
  }
  get name () { return this.#n.name }
  /** The item key of the lock in the table (prefix and layout applied), as Laravel writes it. */
  get key () { return this.#n.key }
  get owner () { return this.#n.owner }
  get ttl () { return this.#n.ttl }
  /** The fencing token of this handle's acquisition (`null` when it holds none). */
  get fence () { return this.#n.fence }
  /** Milliseconds the lease still lasts by the local monotonic clock (`null`: none held). */
  remainingMs () { return this.#n.remainingMs() }
  /** Starts the core's heartbeat on a lock taken with `acquire`: `{ lost(), stop() }`. */
  heartbeat () { return promise(() => this.#n.heartbeat()) }
  /**
   * `wait`: false/undefined = one attempt; `{ timeoutMs }` = watch and retry until then
   * (`Infinity`: no limit; 0: one attempt). True when ours.
   * `signal` aborts it: the acquire in flight is dropped (its write deleted if it landed) and the
   * promise rejects with an AbortError (code ABORTED).
   */
  async acquire ({ wait, signal } = {}) {
    const ms = wait ? (wait.timeoutMs ?? 0) : undefined
    const op = () => cancellable(signal, (token) => this.#n.acquire(ms, token))
    return Lock.tracedAcquire(this, 'acquire', ms > 0, op)
  }
  /** Waits up to `timeoutMs` (Laravel's `block`; `Infinity`: no limit): resolves to the expiry, or LOCK_TIMEOUT; `signal` as `acquire`'s. */
  async block (timeoutMs, { signal } = {}) {
    const op = () => cancellable(signal, (token) => this.#n.block(timeoutMs, token))
    return Lock.tracedAcquire(this, 'block', timeoutMs > 0, op)
  }
  /** One owner-conditioned DeleteItem: true when this call deleted our lock. */
  async release () {
    // The native release says what it found (`released`, `not_held`, `other_owner`).
    const outcome = await Lock.tracedRelease(this, 'release', (o) => o, () => promise(() => this.#n.release()))
    return outcome === 'released'
  }
  forceRelease () { return promise(() => this.#n.forceRelease()) }
  refresh (ttl) { return promise(() => this.#n.refresh(ttl)) }
  isLocked () { return promise(() => this.#n.isLocked()) }
  isOwned () { return promise(() => this.#n.isOwned()) }
  holder () { return promise(() => this.#n.holder()) }
}

/** A value read with its version (`getVersioned`); pass it to `putIfVersion` to require it unchanged. */
class Versioned {
  #n
  constructor (n) { this.#n = n }
  get value () { return this.#n.value }
  get version () { return this.#n.version }
  static native (v) { return v.#n }
}

/** What a claim found: `won`, or `status` saying why it was skipped. */
class Claim {
  #n
  constructor (n) { this.#n = n }
  get won () { return this.#n.won }
  get status () { return this.#n.status }
  get expiresAt () { return this.#n.expiresAt }
  get recovered () { return this.#n.recovered }
  /** Marks the event done (later deliveries are skipped); CONFLICT when the claim is not ours. */
  done () { return promise(() => this.#n.done()) }
  /** Gives the claim back so the next delivery runs it; false when not ours. */
  giveBack () { return promise(() => this.#n.giveBack()) }
}

/** The once-only guard of one event id. */
class Once {
  #n
  constructor (n) { this.#n = n }
  get eventId () { return this.#n.eventId }
  get key () { return this.#n.key }
  get ttl () { return this.#n.ttl }
  get doneTtl () { return this.#n.doneTtl }
  async claim () { return new Claim(await call(() => this.#n.claim())) }
  status () { return promise(() => this.#n.status()) }
  /**
   * Runs `fn()` if this delivery claims the event: marks it done when `fn` resolves (CONFLICT if
   * the claim was lost meanwhile), gives the claim back and rethrows when it rejects. Another
   * delivery's event: `{ ran: false, status }` without running.
   */
  async run (fn) {
    const claim = await call(() => this.#n.claim())
    if (!claim.won) return { ran: false, status: claim.status }
    let value
    try {
      value = await fn()
    } catch (e) {
      // The core's rule: a failed handler gives the claim back; its failure rides on the error.
      await call(() => claim.finish(false)).catch((err) => keepLockError(e, err))
      throw e
    }
    await call(() => claim.finish(true))
    return { ran: true, value }
  }
}

class Store {
  #n
  #place // `#where`, once read
  constructor (options) {
    this.#n = options instanceof native.NativeStore ? options : call(() => new native.NativeStore(options))
  }
  /** The same as `new Store(overrides)`: Laravel's variables fill what is not given. */
  static fromEnv (overrides) { return new Store(overrides) }
  get table () { return this.#n.table }
  get prefix () { return this.#n.prefix }
  get layout () { return this.#n.layout }
  get endpoint () { return this.#n.endpoint }
  /** Where this store's locks live, as the tracing channels say it. */
  get #where () {
    this.#place ??= Object.freeze({ table: this.#n.collection, keyLayout: this.#n.layout })
    return this.#place
  }
  lock (name, { ttl, owner } = {}) { return new Lock(call(() => this.#n.lock(name, ttl, owner)), this.#where) }
  restoreLock (name, owner) { return new Lock(call(() => this.#n.lock(name, 0, owner)), this.#where) }
  /**
   * Waits up to `timeoutMs` (default 0: one attempt) for the lock, runs `fn(lock, signal)` while
   * the core's heartbeat keeps the lease, and releases when it settles. `signal` aborts (reason: a
   * LEASE_LOST DdblockError) as soon as the lease is lost, or with the caller's `signal` (its
   * reason). A lease lost during the callback, or a failed release, rejects after it (never
   * silently), with the callback's result in `error.value`. When the callback throws, its error
   * is rethrown unchanged, carrying a lost lease or failed release as `error.lockError`. The
   * caller's `signal` aborting during the wait rejects with an AbortError (code ABORTED), no lock
   * held.
   */
  async withLock (name, { ttl, timeoutMs = 0, owner, signal } = {}, fn) {
    const lock = this.lock(name, { ttl, owner })
    let held // (kept out of the channel's `result`: it is the binding's own handle)
    const enter = async () => { held = await cancellable(signal, (token) => Lock.native(lock).enter(timeoutMs, token)) }
    await Lock.tracedAcquire(lock, 'withLock', timeoutMs > 0, enter)
    // The end of the lease (heartbeat stopped, lock released) on the release channel: `released`,
    // or `error` with LEASE_LOST or the release's error.
    const finish = () => Lock.tracedRelease(lock, 'withLock', () => 'released', () => call(() => held.finish()))
    if (signal?.aborted) {
      // Aborted as the lock was taken: the callback never runs.
      await finish().catch(() => {})
      throw abortError({ message: `the acquire of lock \`${name}\` was aborted: the lock is not held` }, signal)
    }
    const controller = new AbortController()
    held.lost().catch((e) => controller.abort(e))
    const onAbort = () => controller.abort(signal.reason)
    signal?.addEventListener('abort', onAbort, { once: true })
    let result
    try {
      result = await fn(lock, controller.signal)
    } catch (e) {
      // The core ends the lease (one rule); the callback's own error is rethrown unchanged.
      await finish().catch((err) => keepLockError(e, err))
      throw e
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
    try {
      await finish()
    } catch (e) {
      throw withValue(e, result)
    }
    return result
  }
  /** The once-only guard of `eventId` (a cache key); sends nothing. */
  once (eventId, options) { return new Once(call(() => this.#n.once(eventId, options))) }
  /** `key`'s value and version: one strongly consistent read. */
  async getVersioned (key) { return new Versioned(await call(() => this.#n.getVersioned(key))) }
  /**
   * Stores `value` only if the entry is still at `version` (a number, or the Versioned read: then
   * the value must be unchanged too). The new version, or null when someone else wrote first.
   */
  async putIfVersion (key, value, ttl, version) {
    const written = version instanceof Versioned
      ? await call(() => this.#n.putIfUnchanged(key, value, ttl, Versioned.native(version)))
      : await call(() => this.#n.putIfVersion(key, value, ttl, version))
    return written === null ? null : written.version
  }
  /**
   * Read-modify-write until it sticks: stores `await fn(value)` if the entry did not change
   * meanwhile, else waits the core's backoff and tries again; CONFLICT after `attempts` rounds
   * (default 10). `fn` may run several times. Resolves to the written Versioned.
   */
  async update (key, fn, { ttl, attempts } = {}) {
    const retry = call(() => this.#n.conflictRetry(key, attempts))
    for (;;) {
      const current = await call(() => this.#n.getVersioned(key))
      const value = await fn(current.value)
      const written = await call(() => this.#n.putIfUnchanged(key, value, ttl, current))
      if (written !== null) return new Versioned(written)
      await call(() => retry.afterConflict())
    }
  }
  get (key) { return promise(() => this.#n.get(key)) }
  /** An item that is not a Laravel value gets a DdblockError (code CODEC) as its value. */
  many (keys) { return promise(() => this.#n.many(keys)) }
  put (key, value, ttl) { return promise(() => this.#n.put(key, value, ttl)) }
  putMany (values, ttl) { return promise(() => this.#n.putMany(values, ttl)) }
  add (key, value, ttl) { return promise(() => this.#n.add(key, value, ttl)) }
  increment (key, by) { return promise(() => this.#n.increment(key, by)) }
  decrement (key, by) { return promise(() => this.#n.decrement(key, by)) }
  forever (key, value) { return promise(() => this.#n.forever(key, value)) }
  forget (key) { return promise(() => this.#n.forget(key)) }
  touch (key, ttl) { return promise(() => this.#n.touch(key, ttl)) }
  flush () { return promise(() => this.#n.flush()) }
  createTable (options) { return promise(() => this.#n.createTable(options)) }
  doctor (options) { return promise(() => this.#n.doctor(options)) }
}

/**
 * The OpenTelemetry API (`@opentelemetry/api`, an optional peer dependency: loaded only by
 * `instrument()`), or a CONFIG DdblockError saying to install it.
 */
function openTelemetry () {
  try {
    return require('@opentelemetry/api')
  } catch (e) {
    const message = 'instrument() needs the package @opentelemetry/api: npm install @opentelemetry/api'
    throw new DdblockError('CONFIG', message, undefined, e, 'config')
  }
}

/** Calls `fn(...args)`; what it throws is dropped: reporting never changes what a lock does. */
const quietly = (fn) => (...args) => {
  try { fn(...args) } catch {}
}

/**
 * Subscribers to tracing channel `tc` that make a span `name` of each operation with `tracer`,
 * child of the active context at its call: the table and key layout from the start, the
 * operation's outcome as `outcomeKey` at its end; an `error` or `unknown` outcome sets `error.type`
 * and the span's error status (a held lock, a timeout and a cancel are answers, not failures).
 * No exception is recorded: an error's message can name the lock.
 */
function spansOf (api, tracer, name, outcomeKey) {
  const open = new WeakMap()
  const start = (ctx) => {
    const attributes = { 'db.collection.name': ctx.table, 'ddblock.key_layout': ctx.keyLayout }
    open.set(ctx, tracer.startSpan(name, { attributes }, api.context.active()))
  }
  const finish = (ctx) => {
    const span = open.get(ctx)
    if (span === undefined) return
    open.delete(ctx)
    if (ctx.outcome !== undefined) span.setAttribute(outcomeKey, ctx.outcome)
    if (ctx.outcome === 'error' || ctx.outcome === 'unknown') {
      span.setAttribute('error.type', ctx.errorType)
      span.setStatus({ code: api.SpanStatusCode.ERROR })
    }
    span.end()
  }
  return { start: quietly(start), error: quietly(finish), asyncEnd: quietly(finish) }
}

/** What `instrument()` installed (`uninstrument()` removes it), or null. */
let installed = null

/**
 * Hands what ddblock reports to OpenTelemetry (`@opentelemetry/api`, which must be installed):
 * the core's metrics (docs/observability.md's table) into instruments of the meter `ddblock`, and
 * a span `ddblock.lock.acquire` or `ddblock.lock.release` per lock operation from the tracer
 * `ddblock`. The providers default to the global ones. Called again, it replaces what it
 * installed; the metrics listener is one per process (the last `instrument()` of any thread).
 */
function instrument ({ meterProvider, tracerProvider } = {}) {
  const api = openTelemetry()
  uninstrument()
  const { version } = require('./package.json')
  const meter = (meterProvider ?? api.metrics).getMeter('ddblock', version)
  const tracer = (tracerProvider ?? api.trace).getTracer('ddblock', version)
  const recorders = new Map()
  for (const i of native.instruments()) {
    const options = { unit: i.unit, description: i.meaning }
    if (i.kind === 'counter') {
      const counter = meter.createCounter(i.name, options)
      recorders.set(i.name, (value, attributes) => counter.add(value, attributes))
    } else if (i.kind === 'histogram') {
      // Buckets in seconds, as the core advises (OpenTelemetry's defaults are made for
      // milliseconds); a view of the application's overrides them.
      const advice = { explicitBucketBoundaries: i.boundaries }
      const histogram = meter.createHistogram(i.name, { ...options, advice })
      recorders.set(i.name, (value, attributes) => histogram.record(value, attributes))
    }
  }
  const subscribers = [
    [ACQUIRE, spansOf(api, tracer, 'ddblock.lock.acquire', 'ddblock.lock.outcome')],
    [RELEASE, spansOf(api, tracer, 'ddblock.lock.release', 'ddblock.lock.release_outcome')],
  ]
  for (const [tc, handlers] of subscribers) tc.subscribe(handlers)
  installed = subscribers
  // A measurement still queued when uninstrument() ran is dropped.
  const record = (name, value, attributes) => {
    if (installed === subscribers) recorders.get(name)?.(value, attributes)
  }
  native.listenMetrics(quietly(record))
}

/** Removes what `instrument()` installed: no metric is recorded and no span made afterwards. */
function uninstrument () {
  if (installed === null) return
  native.listenMetrics(null)
  for (const [tc, handlers] of installed) tc.unsubscribe(handlers)
  installed = null
}

module.exports = { Store, Lock, Once, Claim, Versioned, DdblockError, CODES, instrument, uninstrument }
