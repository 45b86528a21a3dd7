// The shared bad-input table (compat-tests/bad-input.json) through Node: each case gets the same
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
const { cases } = JSON.parse(readFileSync(path.join(ROOT, 'compat-tests/bad-input.json'), 'utf8'))
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
    return new Store({ table: c.table ?? table, layout: c.layout, endpoint: c.endpoint ?? at })
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
