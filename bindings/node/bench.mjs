// Lock cycles (acquire + release) of the Node binding, printed, not asserted:
//   --mode cpu      ddblock (this binding) vs @aws-sdk/client-dynamodb sending the same two requests
//                   (the acquire UpdateItem with ddblock's attempt id and fence, the owner-conditioned
//                   DeleteItem), alternately, same process, same server (the default)
//   --mode cycles   N plain cycles with the binding (compat-tests/bench/run.sh counts their requests)
//   --mode scaling  --locks N concurrent cycles of N distinct locks for --secs seconds
//
//   source compat-tests/.run/env && node bindings/node/bench.mjs [--cycles 2000] [--json]
//   NAPI_RS_NATIVE_LIBRARY_PATH=/path/to/ddblock.linux-x64-gnu.node node bench.mjs   # another build
//
// CPU is process.cpuUsage() (user + system, all threads: napi's tokio workers included).
import { createRequire } from 'node:module'
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { DynamoDBClient, UpdateItemCommand, DeleteItemCommand } from '@aws-sdk/client-dynamodb'
import { freshTable } from './test/helpers.mjs'

const require = createRequire(import.meta.url)
const { Store } = require('./lib.js')
const sdkVersion = require('@aws-sdk/client-dynamodb/package.json').version
const { values: opt } = parseArgs({
  options: {
    mode: { type: 'string', default: 'cpu' },
    cycles: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '100' },
    endpoint: { type: 'string', default: process.env.DDBLOCK_TEST_DYNALITE },
    table: { type: 'string' },
    locks: { type: 'string', default: '1' },
    secs: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false }
  }
})
const endpoint = opt.endpoint
if (!endpoint) throw new Error('DDBLOCK_TEST_DYNALITE is not set (compat-tests/servers/servers.sh start; source the env file)')
const cycles = Number(opt.cycles)
const warmup = Number(opt.warmup)
const table = opt.table ?? await freshTable(endpoint)
const store = new Store({ table, endpoint, prefix: '', region: 'us-east-1' })

async function measure (cycle, n) {
  for (let i = 0; i < warmup; i++) await cycle()
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) await cycle()
  const wall = Number(process.hrtime.bigint() - t0) / 1e3 / n
  const cpu = process.cpuUsage(cpu0)
  return { cpu: (cpu.user + cpu.system) / n, wall }
}

function ddblockCycle (lock) {
  return async () => {
    if (!(await lock.acquire())) throw new Error('not acquired')
    if (!(await lock.release())) throw new Error('not released')
  }
}

const result = { node: process.version, sdk: sdkVersion }
if (opt.mode === 'cycles') {
  const cycle = ddblockCycle(store.lock('node-bench', { ttl: 30 }))
  for (let i = 0; i < cycles; i++) await cycle()
  result.cycles = cycles
} else if (opt.mode === 'scaling') {
  const locks = Number(opt.locks)
  const stop = performance.now() + Number(opt.secs) * 1000
  let done = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  await Promise.all(Array.from({ length: locks }, async (_, i) => {
    const cycle = ddblockCycle(store.lock(`node${i}`, { ttl: 10 }))
    while (performance.now() < stop) {
      await cycle()
      done++
    }
  }))
  const cpu = process.cpuUsage(cpu0)
  const n = Math.max(done, 1)
  Object.assign(result, { cycles: done, cycles_per_sec: n / ((performance.now() - t0) / 1000), cpu_us: (cpu.user + cpu.system) / n })
} else {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
  const owner = randomBytes(8).toString('hex')
  const stored = { S: `s:${owner.length}:"${owner}";` } // PHP serialize() of the owner, as Laravel stores it
  const key = { key: { S: 'node-bench-sdk' } }
  const sdkCycle = async () => {
    const now = Math.floor(Date.now() / 1000)
    await client.send(new UpdateItemCommand({
      TableName: table,
      Key: key,
      UpdateExpression: 'SET #value = :owner, #expires_at = :expires_at, #attempt = :attempt, #fence = if_not_exists(#fence, :fence_base) + :one',
      ConditionExpression: 'attribute_not_exists(#key) OR #expires_at < :now',
      ExpressionAttributeNames: { '#key': 'key', '#value': 'value', '#expires_at': 'expires_at', '#attempt': 'ddblock_attempt', '#fence': 'ddblock_fence' },
      ExpressionAttributeValues: {
        ':owner': stored,
        ':expires_at': { N: String(now + 30) },
        ':attempt': { S: randomBytes(8).toString('hex') },
        ':fence_base': { N: String(BigInt(Date.now()) * 1000n) },
        ':one': { N: '1' },
        ':now': { N: String(now - 2) }
      },
      ReturnValues: 'UPDATED_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD'
    }))
    await client.send(new DeleteItemCommand({
      TableName: table,
      Key: key,
      ConditionExpression: '#value = :owner',
      ExpressionAttributeNames: { '#value': 'value' },
      ExpressionAttributeValues: { ':owner': stored },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD'
    }))
  }
  const ours = ddblockCycle(store.lock('node-bench', { ttl: 30 }))
  // Alternate the two to spread any drift in the server's speed.
  const half = Math.max(Math.floor(cycles / 2), 1)
  const runs = []
  for (let round = 0; round < 2; round++) runs.push([await measure(ours, half), await measure(sdkCycle, half)])
  client.destroy()
  const avg = (i, f) => (runs[0][i][f] + runs[1][i][f]) / 2
  Object.assign(result, {
    cycles: 2 * half,
    ddblock_cpu_us: avg(0, 'cpu'),
    ddblock_wall_us: avg(0, 'wall'),
    sdk_cpu_us: avg(1, 'cpu'),
    sdk_wall_us: avg(1, 'wall')
  })
}

if (opt.json) {
  console.log(JSON.stringify(result))
} else if (opt.mode === 'cpu') {
  const fmt = (n) => n.toFixed(0).padStart(10)
  console.log(`${endpoint}, ${result.cycles} cycles after ${warmup} warm-up, Node ${process.version}`)
  console.log('client                              cpu µs/cycle  wall µs/cycle')
  console.log(`${'ddblock (napi binding)'.padEnd(36)}${fmt(result.ddblock_cpu_us)}${fmt(result.ddblock_wall_us)}`)
  console.log(`${('@aws-sdk/client-dynamodb ' + sdkVersion).padEnd(36)}${fmt(result.sdk_cpu_us)}${fmt(result.sdk_wall_us)}`)
  console.log(`ddblock / sdk CPU: ${(result.ddblock_cpu_us / result.sdk_cpu_us).toFixed(2)}`)
} else {
  console.log(result)
}
