// The Node chaos worker: loops wait -> guarded write -> work -> guarded write -> release on
// random keys through the ddblock binding, one JSON line per cycle (the same fields as the Rust
// worker, see compat-tests/chaos/src/checker.rs `Cycle`). Configured by the CHAOS_* environment.
// The guarded writes go through @aws-sdk/client-dynamodb with the same request as every worker.
import { appendFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { createRequire } from 'node:module'

const here = new URL('.', import.meta.url).pathname
const require = createRequire(`${here}../../../bindings/node/package.json`)
const { Store } = require('./lib.js')
const { DynamoDBClient, UpdateItemCommand, ConditionalCheckFailedException } = require('@aws-sdk/client-dynamodb')

const env = (name) => {
  const v = process.env[name]
  if (!v) throw new Error(`${name} is required`)
  return v
}

const LEASE_SAFETY_MS = 1500
const UPDATE = 'SET #fence = :fence, #owner = :owner, #writes = if_not_exists(#writes, :zero) + :one'
const CONDITION = 'attribute_not_exists(#fence) OR #fence <= :fence'

// A small seeded generator (mulberry32), so a seed gives the same key choices every run.
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

const endpoint = env('CHAOS_ENDPOINT')
const table = env('CHAOS_TABLE')
const keys = env('CHAOS_KEYS').split(',')
const worker = env('CHAOS_WORKER')
const ttl = Number(env('CHAOS_TTL'))
const workMs = Number(env('CHAOS_WORK_MS'))
const waitMs = Number(env('CHAOS_WAIT_MS'))
const until = performance.now() + Number(env('CHAOS_DURATION_MS'))
const target = Number(env('CHAOS_ACQUISITIONS'))
const random = rng(Number(env('CHAOS_SEED')))
const out = env('CHAOS_OUT')

const store = new Store({
  table,
  endpoint,
  prefix: env('CHAOS_PREFIX'),
  layout: 'laravel12',
  clockSkewMarginMs: Number(env('CHAOS_MARGIN')) * 1000
})
const client = new DynamoDBClient({
  endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
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

let acquired = 0
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
      if (i === 1) await sleep(workMs)
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
  appendFileSync(out, JSON.stringify(c) + '\n')
}
client.destroy()
