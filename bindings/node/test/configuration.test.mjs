// What a new user meets first (issue 16): the configuration rule, clear errors, the table from
// Node, and the package used from an app (ESM and CommonJS).
import { test, describe, before } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { SERVERS, ROOT, freshTable, freshStore, unique } from './helpers.mjs'

const { Store, DdblockError } = createRequire(import.meta.url)('../lib.js')
const run = promisify(execFile)

const code = (c, pattern) => (e) => {
  assert.ok(e instanceof DdblockError, `not a DdblockError: ${e}`)
  assert.equal(e.code, c, e.message)
  if (pattern) assert.match(e.message, pattern)
  return true
}

const { endpoint } = SERVERS[0]

test('Laravel variables fill what is not given; explicit options win', async () => {
  const table = await freshTable(endpoint)
  const saved = { ...process.env }
  try {
    process.env.DYNAMODB_ENDPOINT = endpoint
    process.env.DYNAMODB_CACHE_TABLE = table
    process.env.CACHE_PREFIX = 'app_'
    const store = new Store()
    assert.deepEqual([store.endpoint, store.table, store.prefix], [endpoint, table, 'app_'])
    await store.put('k', 'v', 60) // the local server, not AWS
    assert.equal(await store.get('k'), 'v')
    const other = new Store({ endpoint: 'http://127.0.0.1:9', prefix: '' })
    assert.deepEqual([other.endpoint, other.prefix, other.table], ['http://127.0.0.1:9', '', table])
    // Without CACHE_PREFIX: Laravel's own default, from APP_NAME and the layout.
    delete process.env.CACHE_PREFIX
    process.env.APP_NAME = 'My Shop'
    assert.equal(new Store().prefix, 'my-shop-cache-')
    assert.equal(new Store({ layout: 'laravel8' }).prefix, 'my_shop_cache')
    process.env.APP_NAME = 'Café'
    assert.throws(() => new Store(), code('CONFIG', /set CACHE_PREFIX/))
    // The runtime's worker threads are a row of the same table: a bad count is refused here.
    process.env.DDBLOCK_WORKER_THREADS = 'two'
    assert.throws(() => new Store({ prefix: '' }), code('CONFIG', /DDBLOCK_WORKER_THREADS must be/))
  } finally {
    for (const k of ['DYNAMODB_ENDPOINT', 'DYNAMODB_CACHE_TABLE', 'CACHE_PREFIX', 'APP_NAME', 'DDBLOCK_WORKER_THREADS']) {
      if (saved[k] === undefined) delete process.env[k]
      else process.env[k] = saved[k]
    }
  }
})

describe('on a fresh table', () => {
  let store
  before(async () => { store = await freshStore(endpoint) })

  test('a ttl that is not a whole number says so', async () => {
    await assert.rejects(store.put('k', 'v', '30'), code('INVALID_TTL', /not a string/))
    await assert.rejects(store.put('k', 'v', 1.5), code('INVALID_TTL', /whole number of seconds/))
    assert.throws(() => store.lock('l', { ttl: '30' }), code('INVALID_TTL', /not a string/))
  })

  test('increment by a fraction does what Laravel and Python do', async () => {
    await store.put('n', 1, 60)
    assert.equal(await store.increment('n', 1.5), 2)
    assert.equal(await store.get('n'), 2.5)
  })

  test('createTable and doctor; a missing table says how to create it', async () => {
    const fresh = new Store({ table: unique('fresh_'), endpoint })
    await assert.rejects(fresh.get('k'), code('TABLE_NOT_FOUND', /await store\.createTable\(\)/))
    const report = await fresh.createTable()
    assert.equal(report.created, true)
    assert.equal(report.ready, true)
    assert.equal((await fresh.createTable()).created, false)
    const doctor = await fresh.doctor()
    assert.equal(doctor.healthy, true, JSON.stringify(doctor))
    // The clock check (last): this host against the server's Date headers; the same clock here, so
    // ok (or warn, when slow answers leave the interval wider than the allowance), never fail.
    assert.equal(doctor.checks.at(-1).id, 'clock')
    assert.ok(['ok', 'warn'].includes(doctor.checks.at(-1).status), JSON.stringify(doctor.checks.at(-1)))
    assert.equal(doctor.clock.allowed, 0.5)
    assert.equal(doctor.clock.answers, 5)
    assert.ok(doctor.clock.low <= 0 && doctor.clock.high >= 0, JSON.stringify(doctor.clock))
    await fresh.put('k', 'v', 60)
    assert.equal(await fresh.get('k'), 'v')
  })
})

test('the package works from an app, as ESM and as CommonJS', async () => {
  const app = mkdtempSync(path.join(tmpdir(), 'ddblock-app-'))
  try {
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }))
    await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', path.join(ROOT, 'bindings/node')], { cwd: app })
    const table = await freshTable(endpoint)
    const env = { ...process.env, DYNAMODB_ENDPOINT: endpoint, DYNAMODB_CACHE_TABLE: table }
    writeFileSync(path.join(app, 'app.mjs'), "import { Store } from 'ddblock'\nconst s = new Store()\nawait s.put('k', 'esm', 60)\nconsole.log(await s.get('k'))\n")
    writeFileSync(path.join(app, 'app.cjs'), "const { Store } = require('ddblock')\nconst s = new Store()\ns.get('k').then((v) => console.log(v))\n")
    assert.equal((await run(process.execPath, ['app.mjs'], { cwd: app, env })).stdout, 'esm\n')
    assert.equal((await run(process.execPath, ['app.cjs'], { cwd: app, env })).stdout, 'esm\n')
  } finally {
    rmSync(app, { recursive: true, force: true })
  }
})
