// The shared bad-input table (compat-tests/conformance/bad-input.json) through Node: each case gets the same
// kind as in every other front (the rules are the core's); the code is the kind upper-cased.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { readFileSync, mkdtempSync } from 'node:fs'
import { createServer } from 'node:net'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import os from 'node:os'
import path from 'node:path'
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb'
import { SERVERS, ROOT, freshTable, faultProxy } from './helpers.mjs'

const { Store, DdblockError } = createRequire(import.meta.url)('../lib.js')
const { cases } = JSON.parse(readFileSync(path.join(ROOT, 'compat-tests/conformance/bad-input.json'), 'utf8'))
const { endpoint } = SERVERS[0]

const nameOf = (c) => (c.name_repeat ? c.name_repeat[0].repeat(c.name_repeat[1]) : c.name ?? '')

/** A loopback URL nothing listens on. */
async function closedEndpoint () {
  const server = createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address()
  await new Promise((resolve) => server.close(resolve))
  return `http://127.0.0.1:${port}`
}

/** Runs an acquire in a fresh process with no AWS credentials anywhere; resolves its error code. */
async function withoutCredentials (c, table) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_')))
  Object.assign(env, { HOME: mkdtempSync(path.join(os.tmpdir(), 'ddblock-')), AWS_EC2_METADATA_DISABLED: 'true' })
  const script = `const { Store } = require(${JSON.stringify(path.join(ROOT, 'bindings/node/lib.js'))})
const [c, table, endpoint] = [JSON.parse(process.argv[1]), process.argv[2], process.argv[3]]
new Store({ table, endpoint, region: 'us-east-1' }).lock(c.name, { ttl: c.ttl }).acquire()
  .then(() => console.log('acquired'), (e) => console.log(e.code))`
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, JSON.stringify(c), table, endpoint], { env })
  return stdout.trim()
}

async function run (c, table, at = endpoint) {
  if (c.server === 'unreachable') at = await closedEndpoint()
  if (c.stored !== undefined) {
    const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
    await client.send(new PutItemCommand({ TableName: table, Item: { key: { S: c.key }, value: { S: c.stored } } }))
    client.destroy()
  }
  if (c.op === 'config') {
    const clockSkewMarginMs = c.clock_skew_margin === undefined ? undefined : c.clock_skew_margin * 1000
    return new Store({ table: c.table ?? table, layout: c.layout, endpoint: c.endpoint ?? at, clockSkewMarginMs })
  }
  const store = new Store({ table: c.table === 'missing' ? 'ddblock_no_such_table' : table, endpoint: at, region: 'us-east-1', prefix: '', maxAttempts: 2 })
  if (c.op === 'lock') return store.lock(nameOf(c), { ttl: c.ttl })
  if (c.op === 'acquire') return await store.lock(nameOf(c), { ttl: c.ttl }).acquire()
  if (c.op === 'get') return await store.get(c.key)
  if (c.op === 'put') return await store.put(c.key, c.value, c.ttl)
  if (c.op === 'once') return store.once(nameOf(c), { ttl: c.ttl })
  if (c.op === 'put_if_version') return await store.putIfVersion(c.key, c.value, c.ttl, c.version)
  throw new Error(`unknown op ${c.op}`)
}

for (const c of cases) {
  test(`bad input: ${c.case}`, async () => {
    const table = await freshTable(endpoint)
    if (c.server === 'no_credentials') {
      assert.equal(await withoutCredentials(c, table), c.kind.toUpperCase())
      return
    }
    const proxy = c.server === 'throttling' ? await faultProxy(endpoint, ['--throttle-rate', '1']) : null
    try {
      await assert.rejects(async () => run(c, table, proxy?.url), (e) => {
        assert.ok(e instanceof DdblockError, `not a DdblockError: ${e}`)
        assert.equal(e.code, c.kind.toUpperCase(), e.message)
        return true
      })
    } finally {
      proxy?.stop()
    }
  })
}

// The wait and lease cases of the same table (its `outcomes`): the outcome every front gets.
const { outcomes } = JSON.parse(readFileSync(path.join(ROOT, 'compat-tests/conformance/bad-input.json'), 'utf8'))

/** The case's wait in Node's idiom: `timeoutMs`, Infinity for forever. */
const timeoutMsOf = (c) => (c.wait === 'forever' ? Infinity : c.wait === 'NaN' ? NaN : c.wait * 1000)

/** The case's body: `raise` throws; `lose_lease` force-releases the lock from a second handle
 * and waits until the lease-lost signal aborts; `remove` force-releases it and ends. */
async function body (c, direct, name, signal) {
  if (c.body === 'raise') throw new Error('body')
  if (c.body === 'remove') assert.equal(await direct.lock(name).forceRelease(), true)
  if (c.body === 'lose_lease') {
    await direct.lock(name).forceRelease()
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the heartbeat never saw the lease lost')), 5000)
      signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
    })
  }
}

/** What the case did, in the table's words (its `expect`). */
async function outcome (c, store, direct) {
  const name = c.name
  try {
    if (c.op === 'acquire') {
      if (c.held_by_other) assert.ok(await direct.lock(name, { ttl: 60 }).acquire())
      return { acquired: await store.lock(name, { ttl: c.ttl }).acquire({ wait: { timeoutMs: timeoutMsOf(c) } }) }
    }
    const attached = (e) => {
      if (e instanceof DdblockError) throw e
      return { body_error: true, attached: e.lockError?.code?.toLowerCase() ?? null }
    }
    if (c.op === 'with_lock') {
      try {
        await store.withLock(name, { ttl: c.ttl, timeoutMs: timeoutMsOf(c) }, (_lock, signal) => body(c, direct, name, signal))
      } catch (e) { return attached(e) }
      return { ok: true }
    }
    if (c.op === 'once_run') {
      try {
        await store.once(name, { ttl: c.ttl }).run(() => body(c, direct, name))
      } catch (e) { return attached(e) }
      return { ok: true }
    }
  } catch (e) {
    if (!(e instanceof DdblockError)) throw e
    return { error: e.code.toLowerCase() }
  }
  throw new Error(`unknown op ${c.op}`)
}

for (const c of outcomes) {
  test(`wait and lease: ${c.case}`, async () => {
    const table = await freshTable(endpoint)
    const proxy = await faultProxy(endpoint, [])
    const options = { table, region: 'us-east-1', prefix: '' }
    const direct = new Store({ ...options, endpoint })
    try {
      await proxy.faults(c.faults ?? {})
      const got = await outcome(c, new Store({ ...options, endpoint: proxy.url }), direct)
      // The scripted faults happened (a case that passes without them proves nothing).
      const { ops } = await (await fetch(proxy.url + '/__proxy/stats')).json()
      for (const [op, script] of Object.entries(c.faults?.sequence ?? {})) {
        const want = script.find((f) => f !== 'ok')
        assert.ok((ops[op]?.[want === 'throttle' ? 'throttled' : 'dropped'] ?? 0) > 0, `no ${want} of ${op}`)
      }
      assert.deepEqual(got, c.expect)
    } finally {
      proxy.stop()
    }
    if (c.free_after) assert.equal(await direct.lock(c.name).isLocked(), false)
  })
}
