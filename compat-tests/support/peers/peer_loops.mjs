// The loops of the Node peer (peer.mjs): `cycles`, the load worker, and `chaos`, the chaos worker
// (docs/reliability.md). Each appends one JSON line per cycle to a file that several peers may
// share (PROTOCOL.md). Node has no flock: each line is one write(2) to a file opened O_APPEND,
// which Linux makes atomic against every other append (the others' writes under their flock
// included), so lines never interleave either.
import { appendFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'

/** Seconds of lease a chaos worker wants left before a guarded write (as every language's). */
const LEASE_SAFETY_MS = 1500
/** The guarded write: the same conditional UpdateItem on `res_<key>` in every language. */
const UPDATE = 'SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one'
const CONDITION = 'attribute_not_exists(#fence) OR #fence <= :fence'

/** Appends `record` as one line to `path`, in one write. */
function append (path, record) {
  appendFileSync(path, JSON.stringify(record) + '\n')
}

/** Wall-clock Unix seconds, to the microsecond. */
const wall = () => (performance.timeOrigin + performance.now()) / 1000

/** A small seeded generator (mulberry32), so a seed gives the same choices every run. */
function rng (seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * The load worker: per cycle a fresh lock on a name, one acquire (or with `block` a wait until
 * `until`), hold `work_ms`, release; a 5-20 ms pause when not acquired. The same record as
 * compat-tests/laravel/harness.php's.
 */
export async function cycles (store, r) {
  const names = r.names.filter((n) => n)
  const { ttl, record } = r
  const work = Number(r.work_ms ?? 0)
  const think = Number(r.think_ms ?? 0)
  const until = r.until == null ? null : Number(r.until)
  const block = Boolean(r.block)
  const pid = process.pid
  const seeded = r.seed != null
  const random = seeded ? rng(Number(r.seed) + pid) : Math.random
  await store.lock(names[0], { ttl }).holder() // the client is built and connected before the start
  await sleep(Math.max(0, (Number(r.start_at ?? 0) - wall()) * 1000))
  const summary = { cycles: 0, acquired: 0, released: 0, release_false: 0, errors: 0 }
  for (let i = 0; i < Number(r.cycles); i++) {
    if (until !== null && wall() >= until) break
    const name = seeded ? names[Math.floor(random() * names.length)] : names[(pid + i) % names.length]
    const lock = store.lock(name, { ttl })
    const rec = {
      lang: 'node',
      driver: 'core',
      pid,
      name,
      owner: lock.owner,
      acquired: false,
      t_try: wall(),
      t_acq: null,
      t_rel: null,
      t_rel_end: null,
      released: false
    }
    try {
      if (block) {
        const timeoutMs = until === null ? Infinity : Math.max(0, (until - wall()) * 1000)
        rec.acquired = await lock.acquire({ wait: { timeoutMs } })
      } else {
        rec.acquired = await lock.acquire()
      }
      if (rec.acquired) {
        rec.t_acq = wall()
        await sleep(work)
        rec.t_rel = wall()
        rec.released = await lock.release() // false: stuck until it expires
        rec.t_rel_end = wall()
      }
    } catch (e) {
      rec.error = `${e?.code ?? e?.name}: ${String(e?.message).slice(0, 300)}`
      summary.errors += 1
    }
    summary.cycles += 1
    summary.acquired += rec.acquired ? 1 : 0
    summary.released += rec.released ? 1 : 0
    summary.release_false += rec.acquired && !rec.released && rec.error === undefined ? 1 : 0
    append(record, rec)
    if (!rec.acquired && !block) await sleep(5 + random() * 15)
    else if (rec.acquired && think > 0) await sleep(think)
  }
  return summary
}

/**
 * The chaos worker: wait -> guarded write -> work -> guarded write -> release on random keys
 * until `acquisitions` or `duration_ms`; one record per cycle with the fields of
 * compat-tests/chaos/src/checker.rs `Cycle`. The guarded writes go through
 * @aws-sdk/client-dynamodb (bindings/node's development dependency).
 */
export async function chaos (store, r) {
  const sdk = createRequire(new URL('../../../bindings/node/package.json', import.meta.url))
  const { DynamoDBClient, UpdateItemCommand, GetItemCommand, PutItemCommand, ConditionalCheckFailedException } = sdk('@aws-sdk/client-dynamodb')
  const keys = r.keys
  const ttl = Number(r.ttl)
  const workMs = Number(r.work_ms)
  const waitMs = Number(r.wait_ms)
  const until = performance.now() + Number(r.duration_ms)
  const target = Number(r.acquisitions)
  const worker = String(r.worker)
  const random = rng(Number(r.seed))
  const table = process.env.DDB_TABLE
  const client = new DynamoDBClient({
    endpoint: process.env.DDB_ENDPOINT,
    region: process.env.DDB_REGION || 'us-east-1',
    credentials: {
      accessKeyId: process.env.AWS_ACCESS_KEY_ID || 'test',
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY || 'test'
    },
    maxAttempts: 3,
    requestHandler: { connectionTimeout: 2000, requestTimeout: 3000 }
  })

  async function guardedWrite (name, owner, fence) {
    try {
      await client.send(new UpdateItemCommand({
        TableName: table,
        Key: { key: { S: `res_${name}` } },
        UpdateExpression: UPDATE,
        ConditionExpression: CONDITION,
        ExpressionAttributeNames: { '#fence': 'fence', '#owner': 'owner', '#writes': 'writes' },
        ExpressionAttributeValues: {
          ':fence': { N: String(fence) },
          ':owner': { S: owner },
          ':zero': { N: '0' },
          ':one': { N: '1' }
        }
      }))
      return 'accepted'
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return 'refused'
      throw e
    }
  }

  // The counter's client, straight to the server (no fault proxy): an unguarded
  // read-modify-write in each critical section (compat-tests/chaos, "counter").
  const direct = process.env.DDB_COUNTER_ENDPOINT
    ? new DynamoDBClient({
      endpoint: process.env.DDB_COUNTER_ENDPOINT,
      region: process.env.DDB_REGION || 'us-east-1',
      credentials: {
        accessKeyId: process.env.AWS_ACCESS_KEY_ID || 'test',
        secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY || 'test'
      }
    })
    : null

  async function count (name) {
    const Key = { key: { S: `cnt_${name}` } }
    const got = await direct.send(new GetItemCommand({ TableName: table, Key, ConsistentRead: true }))
    const n = got.Item ? Number(got.Item.n.N) : 0
    await sleep(workMs)
    await direct.send(new PutItemCommand({ TableName: table, Item: { ...Key, n: { N: String(n + 1) } } }))
  }

  let cycles = 0
  let acquired = 0
  try {
    while (acquired < target && performance.now() < until) {
      const name = keys[Math.floor(random() * keys.length)]
      const lock = store.lock(name, { ttl })
      const c = { lang: 'node', worker, name, owner: lock.owner, writes: [], errors: [], untyped: [] }
      const failed = (op, e) => {
        if (e && typeof e.code === 'string' && e.code.length > 0) c.errors.push([op, e.code])
        else if (e && e.$metadata) c.errors.push([op, e.name])
        else c.untyped.push(`${op}: ${e && e.name}: ${e && e.message}`)
      }
      let got = false
      try {
        const left = Math.max(0, Math.min(waitMs, until - performance.now()))
        got = await lock.acquire({ wait: { timeoutMs: left } })
        c.acquire = got ? 'acquired' : 'held'
      } catch (e) {
        c.acquire = 'error'
        failed('acquire', e)
      }
      if (got) {
        acquired += 1
        c.fence = lock.fence
        for (let i = 0; i < 2; i++) {
          if (i === 1) {
            const left = lock.remainingMs()
            if (direct && left !== null && left >= LEASE_SAFETY_MS) {
              try {
                await count(name)
                c.counter = 'counted'
              } catch (e) {
                c.counter = 'error'
                failed('counter', e)
              }
            } else await sleep(workMs)
          }
          const remaining = lock.remainingMs()
          const fence = lock.fence
          if (fence === null || remaining === null || remaining < LEASE_SAFETY_MS) {
            c.writes.push('skipped')
            continue
          }
          try {
            c.writes.push(await guardedWrite(name, lock.owner, fence))
          } catch (e) {
            c.writes.push('error')
            failed('guarded_write', e)
          }
        }
        try {
          c.release = (await lock.release()) ? 'released' : 'not_held'
        } catch (e) {
          c.release = 'error'
          failed('release', e)
        }
      }
      cycles += 1
      append(r.out, c)
    }
  } finally {
    client.destroy()
  }
  return { cycles, acquired }
}
