// The shared bad-input table (compat-tests/bad-input.json) through Node: each case gets the same
// kind as in every other front (the rules are the core's); the code is the kind upper-cased.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { SERVERS, ROOT, freshTable } from './helpers.mjs'

const { Store, DdblockError } = createRequire(import.meta.url)('../lib.js')
const { cases } = JSON.parse(readFileSync(path.join(ROOT, 'compat-tests/bad-input.json'), 'utf8'))
const { endpoint } = SERVERS[0]

const nameOf = (c) => (c.name_repeat ? c.name_repeat[0].repeat(c.name_repeat[1]) : c.name ?? '')

async function run (c, table) {
  if (c.op === 'config') {
    return new Store({ table: c.table ?? table, layout: c.layout, endpoint: c.endpoint ?? endpoint })
  }
  const store = new Store({ table: c.table === 'missing' ? 'ddblock_no_such_table' : table, endpoint })
  if (c.op === 'lock') return store.lock(nameOf(c), { ttl: c.ttl })
  if (c.op === 'get') return await store.get(c.key)
  if (c.op === 'put') return await store.put(c.key, c.value, c.ttl)
  if (c.op === 'once') return store.once(nameOf(c), { ttl: c.ttl })
  if (c.op === 'put_if_version') return await store.putIfVersion(c.key, c.value, c.ttl, c.version)
  throw new Error(`unknown op ${c.op}`)
}

for (const c of cases) {
  test(`bad input: ${c.case}`, async () => {
    const table = await freshTable(endpoint)
    await assert.rejects(async () => run(c, table), (e) => {
      assert.ok(e instanceof DdblockError, `not a DdblockError: ${e}`)
      assert.equal(e.code, c.kind.toUpperCase(), e.message)
      return true
    })
  })
}
