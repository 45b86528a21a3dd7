// Client CPU per lock cycle (acquire + release), printed, not asserted:
//   ddblock (this binding: one conditional UpdateItem, one DeleteItem conditioned on the owner)
//   vs  @aws-sdk/client-dynamodb sending Laravel's cycle by hand (PutItem conditioned on
//   absent-or-expired, the same DeleteItem): two conditional requests each,
// one run each, same dynalite server, same process, sequential cycles on one lock name.
//
//   source compat-tests/.run/env && node bindings/node/bench.mjs [cycles]
//   NAPI_RS_NATIVE_LIBRARY_PATH=/path/to/ddblock.linux-x64-gnu.node node bench.mjs   # another build
//
// CPU is process.cpuUsage() (user + system, all threads: napi's tokio workers included).
import { createRequire } from 'node:module'
import { randomBytes } from 'node:crypto'
import { DynamoDBClient, PutItemCommand, DeleteItemCommand } from '@aws-sdk/client-dynamodb'
import { freshTable } from './test/helpers.mjs'

const require = createRequire(import.meta.url)
const { Store } = require('./lib.js')
const sdkVersion = require('@aws-sdk/client-dynamodb/package.json').version
const endpoint = process.env.DDBLOCK_TEST_DYNALITE
if (!endpoint) throw new Error('DDBLOCK_TEST_DYNALITE is not set (compat-tests/servers.sh start; source the env file)')
const cycles = Number(process.argv[2] ?? 1000)
const warmup = 100

async function measure (label, cycle) {
  for (let i = 0; i < warmup; i++) await cycle()
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < cycles; i++) await cycle()
  const wall = Number(process.hrtime.bigint() - t0) / 1e3 / cycles
  const cpu = process.cpuUsage(cpu0)
  const r = { label, user: cpu.user / cycles, system: cpu.system / cycles, wall }
  r.total = r.user + r.system
  return r
}

const table = await freshTable(endpoint)

// --- ddblock ---------------------------------------------------------------------------------
const store = new Store({ table, endpoint, prefix: 'app_' })
const lock = store.lock('bench', { ttl: 30 })
const ours = await measure('ddblock (napi binding)', async () => {
  if (!(await lock.acquire())) throw new Error('not acquired')
  if (!(await lock.release())) throw new Error('not released')
})

// --- @aws-sdk/client-dynamodb, the same two requests -------------------------------------------
const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
const owner = randomBytes(8).toString('hex')
const stored = `s:${owner.length}:"${owner}";` // PHP serialize() of the owner, as Laravel stores it
const sdk = await measure(`@aws-sdk/client-dynamodb ${sdkVersion}`, async () => {
  const now = Math.floor(Date.now() / 1000)
  await client.send(new PutItemCommand({
    TableName: table,
    Item: { key: { S: 'app_bench_sdk' }, value: { S: stored }, expires_at: { N: String(now + 30) } },
    ConditionExpression: 'attribute_not_exists(#key) OR #expires_at < :now',
    ExpressionAttributeNames: { '#key': 'key', '#expires_at': 'expires_at' },
    ExpressionAttributeValues: { ':now': { N: String(now) } },
  }))
  await client.send(new DeleteItemCommand({
    TableName: table,
    Key: { key: { S: 'app_bench_sdk' } },
    ConditionExpression: '#value = :owner',
    ExpressionAttributeNames: { '#value': 'value' },
    ExpressionAttributeValues: { ':owner': { S: stored } },
  }))
})
client.destroy()

const fmt = (n) => n.toFixed(0).padStart(8)
console.log(`dynalite ${endpoint}, ${cycles} cycles after ${warmup} warm-up, Node ${process.version}`)
console.log('client                              cpu µs/cycle   user   system   wall µs/cycle')
for (const r of [ours, sdk]) {
  console.log(`${r.label.padEnd(36)}${fmt(r.total)}${fmt(r.user)}${fmt(r.system)}${fmt(r.wall)}`)
}
console.log(`ddblock / sdk CPU: ${(ours.total / sdk.total).toFixed(2)}`)
