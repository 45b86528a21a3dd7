// The Node peer: the ddblock Node binding over the peer protocol (PROTOCOL.md, beside this file).
// One JSON request per stdin line, one JSON answer per stdout line, in order; exits when stdin
// closes.
//
//   DDB_ENDPOINT=http://127.0.0.1:8000 DDB_TABLE=cache DDB_LAYOUT=laravel12 DDB_PREFIX=app_ \
//     node compat-tests/support/peers/peer.mjs
//
// Configuration, read once at start: DDB_ENDPOINT, DDB_TABLE (required), DDB_LAYOUT (laravel8),
// DDB_PREFIX (empty), DDB_REGION (us-east-1), DDB_TIMEOUT (10: the connect and attempt timeouts,
// s); DDB_RETRIES (max attempts - 1) and DDB_MARGIN (clock-skew margin, s) are the core's
// defaults when unset; DDB_BACKOFF_MS is not read (the Node binding takes no backoff option).
// What none of them sets comes from Laravel's variables, as for any Store (DDBLOCK_BACKEND, ...).
// The binding is bindings/node/lib.js, or DDBLOCK_NODE_BINDING when set (an installed package).
// The loops (`cycles`, `chaos`) are in peer_loops.mjs.
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { readFileSync, writeFileSync, appendFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { cycles, chaos } from './peer_loops.mjs'

const require = createRequire(import.meta.url)
const { Store, DdblockError } = require(process.env.DDBLOCK_NODE_BINDING || '../../../bindings/node/lib.js')

function need (name) {
  const v = process.env[name]
  if (!v) {
    process.stderr.write(`peer.mjs: ${name} is required (see compat-tests/support/peers/PROTOCOL.md)\n`)
    process.exit(2)
  }
  return v
}

/** The store the DDB_* variables describe. */
function storeFromEnv () {
  const env = process.env
  const options = {
    table: need('DDB_TABLE'),
    endpoint: need('DDB_ENDPOINT'),
    layout: env.DDB_LAYOUT || 'laravel8',
    prefix: env.DDB_PREFIX ?? '',
    region: env.DDB_REGION || 'us-east-1',
    connectTimeoutMs: Number(env.DDB_TIMEOUT || 10) * 1000,
    attemptTimeoutMs: Number(env.DDB_TIMEOUT || 10) * 1000
  }
  if (env.DDB_RETRIES) options.maxAttempts = Number(env.DDB_RETRIES) + 1
  if (env.DDB_MARGIN) options.clockSkewMarginMs = Number(env.DDB_MARGIN) * 1000
  return new Store(options)
}

function field (req, name) {
  if (!(name in req)) throw new TypeError(`field '${name}' is required`)
  return req[name]
}

// ---- PHP values: base64(serialize(value)) in "v" and "value" ----
//
// The binding has no PHP codec of its own to offer, so this is the small part of serialize()
// the tests use: null, bool, int, float, string (a Buffer for bytes), arrays. PHP objects are
// refused. A whole float crosses as an int: JavaScript does not tell 1.0 from 1.

function phpOut (value) {
  const parts = []
  const str = (b) => parts.push(Buffer.from(`s:${b.length}:"`), b, Buffer.from('";'))
  const key = (k) => /^(0|-?[1-9][0-9]*)$/.test(k) ? parts.push(Buffer.from(`i:${k};`)) : str(Buffer.from(k))
  const walk = (v) => {
    if (v === null || v === undefined) parts.push(Buffer.from('N;'))
    else if (typeof v === 'boolean') parts.push(Buffer.from(`b:${v ? 1 : 0};`))
    else if (typeof v === 'bigint') parts.push(Buffer.from(`i:${v};`))
    else if (typeof v === 'number') {
      if (Number.isInteger(v)) parts.push(Buffer.from(`i:${v};`))
      else if (Number.isNaN(v)) parts.push(Buffer.from('d:NAN;'))
      else if (!Number.isFinite(v)) parts.push(Buffer.from(v > 0 ? 'd:INF;' : 'd:-INF;'))
      else parts.push(Buffer.from(`d:${v};`))
    } else if (typeof v === 'string') str(Buffer.from(v))
    else if (Buffer.isBuffer(v)) str(v)
    else if (Array.isArray(v)) {
      parts.push(Buffer.from(`a:${v.length}:{`))
      v.forEach((x, i) => { parts.push(Buffer.from(`i:${i};`)); walk(x) })
      parts.push(Buffer.from('}'))
    } else if (typeof v === 'object' && !('__phpClass' in v)) {
      const entries = Object.entries(v)
      parts.push(Buffer.from(`a:${entries.length}:{`))
      for (const [k, x] of entries) { key(k); walk(x) }
      parts.push(Buffer.from('}'))
    } else throw new TypeError(`the peer cannot serialize ${typeof v} values`)
  }
  walk(value)
  return Buffer.concat(parts).toString('base64')
}

function phpIn (b64) {
  const b = Buffer.from(b64, 'base64')
  let i = 0
  const until = (ch) => {
    const end = b.indexOf(ch, i)
    if (end < 0) throw new TypeError('truncated serialize() text')
    const text = b.toString('latin1', i, end)
    i = end + 1
    return text
  }
  const read = () => {
    const tag = String.fromCharCode(b[i])
    i += 2 // the tag and its ':' (or ';' for N)
    switch (tag) {
      case 'N': return null
      case 'b': return until(';') === '1'
      case 'i': {
        const n = BigInt(until(';'))
        return n >= Number.MIN_SAFE_INTEGER && n <= Number.MAX_SAFE_INTEGER ? Number(n) : n
      }
      case 'd': {
        const t = until(';')
        return t === 'NAN' ? NaN : t === 'INF' ? Infinity : t === '-INF' ? -Infinity : Number(t)
      }
      case 's': {
        const len = Number(until(':'))
        const bytes = b.subarray(i + 1, i + 1 + len)
        i += len + 3 // the quotes and ';'
        const text = bytes.toString('utf8')
        return Buffer.from(text).equals(bytes) ? text : Buffer.from(bytes)
      }
      case 'a': {
        const n = Number(until(':'))
        i += 1 // '{'
        const entries = []
        for (let k = 0; k < n; k++) entries.push([read(), read()])
        i += 1 // '}'
        if (entries.every(([k], j) => k === j)) return entries.map(([, v]) => v)
        return Object.fromEntries(entries.map(([k, v]) => [String(k), v]))
      }
      default: throw new TypeError(`the peer cannot unserialize '${tag}' values`)
    }
  }
  return read()
}

// ---- the requests ----

const store = storeFromEnv()
const wallNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n

const ops = {
  hello: () => ({ lang: 'node', driver: 'core', now: (performance.timeOrigin + performance.now()) / 1000 }),
  now: () => ({ now: Math.floor(Date.now() / 1000) }),
  'lock.acquire': async (r) => {
    const lock = store.lock(field(r, 'name'), { ttl: field(r, 'ttl'), owner: r.owner ?? undefined })
    const acquired = await lock.acquire()
    return acquired ? { acquired, owner: lock.owner, fence: lock.fence } : { acquired, owner: lock.owner }
  },
  'lock.block': async (r) => {
    // sleep_ms is Laravel's fixed pause; ddblock waits with the store's backoff.
    const lock = store.lock(field(r, 'name'), { ttl: field(r, 'ttl'), owner: r.owner ?? undefined })
    const acquired = await lock.acquire({ wait: { timeoutMs: Number(field(r, 'seconds')) * 1000 } })
    return { acquired, owner: lock.owner }
  },
  'lock.release': async (r) => ({ released: await store.restoreLock(field(r, 'name'), field(r, 'owner')).release() }),
  'lock.refresh': async (r) => ({
    refreshed: await store.restoreLock(field(r, 'name'), field(r, 'owner')).refresh(field(r, 'ttl'))
  }),
  'lock.forceRelease': async (r) => { await store.lock(field(r, 'name')).forceRelease(); return {} },
  'lock.get': async (r) => {
    const h = await store.lock(field(r, 'name')).holder()
    return { value: phpOut(h?.owner ?? null) }
  },
  'lock.key': async (r) => ({ key: store.lock(field(r, 'name')).key }),
  'lock.holder': async (r) => {
    const h = await store.lock(field(r, 'name')).holder()
    return { holder: h === null ? null : { owner: h.owner ?? null, expires_at: h.expiresAt ?? null } }
  },
  get: async (r) => ({ value: phpOut(await store.get(field(r, 'key'))) }),
  put: async (r) => { await store.put(field(r, 'key'), phpIn(field(r, 'v')), field(r, 'ttl')); return { result: true } },
  add: async (r) => ({ result: await store.add(field(r, 'key'), phpIn(field(r, 'v')), field(r, 'ttl')) }),
  forget: async (r) => { await store.forget(field(r, 'key')); return { result: true } },
  increment: async (r) => ({ result: (await store.increment(field(r, 'key'), r.by ?? 1)) ?? false }),
  decrement: async (r) => ({ result: (await store.decrement(field(r, 'key'), r.by ?? 1)) ?? false }),
  once: async (r) => {
    const won = []
    for (const event of field(r, 'events')) {
      const result = await store.once(event, { ttl: field(r, 'ttl') }).run(async () => event)
      if (result.ran) won.push(result.value)
    }
    return { won }
  },
  cas: async (r) => {
    const [key, n] = [field(r, 'key'), Number(field(r, 'n'))]
    let rounds = 0
    for (let i = 0; i < n; i++) {
      await store.update(key, (v) => { rounds += 1; return Number(v) + 1 }, { ttl: 600, attempts: 10000 })
    }
    return { increments: n, conflicts: rounds - n }
  },
  'lock.counter': async (r) => {
    const [name, counter, log, n] = [field(r, 'name'), field(r, 'counter'), field(r, 'log'), Number(field(r, 'n'))]
    for (let i = 0; i < n; i++) {
      await store.withLock(name, { ttl: 30, timeoutMs: 120000 }, async (lock) => {
        const start = wallNs()
        const value = Number(readFileSync(counter, 'utf8'))
        await sleep(10)
        writeFileSync(counter, String(value + 1))
        appendFileSync(log, `node ${lock.fence} ${start} ${wallNs()}\n`)
      })
    }
    return { held: n }
  },
  takeover: async (r) => {
    const won = {}
    for (const name of field(r, 'names')) {
      const lock = store.lock(name, { ttl: field(r, 'ttl') })
      if (await lock.acquire()) won[name] = lock.fence
    }
    return { won }
  },
  cycles: (r) => cycles(store, r),
  chaos: (r) => chaos(store, r)
}

async function answer (line) {
  try {
    const req = JSON.parse(line)
    if (req === null || typeof req !== 'object' || Array.isArray(req)) throw new TypeError('each line must be a JSON object')
    const op = Object.hasOwn(ops, req.op) ? ops[req.op] : undefined
    if (op === undefined) return { ok: false, error: `unsupported: ${req.op}` }
    return { ok: true, ...(await op(req)) }
  } catch (e) {
    const out = { ok: false, error: `${e?.code ?? e?.name}: ${e?.message}` }
    if (e instanceof DdblockError && e.kind) out.kind = e.kind
    return out
  }
}

// JSON has no bigint: an int beyond 2^53 crosses as a number (as PHP's json_encode writes it).
const toJson = (v) => JSON.stringify(v, (_, x) => typeof x === 'bigint' ? Number(x) : x)

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (line.trim() === '') continue
  process.stdout.write(toJson(await answer(line)) + '\n')
}
