// The examples in docs/node.md are the files in examples/, verbatim, and they run.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { SERVERS, ROOT, freshTable } from './helpers.mjs'

const dir = path.join(ROOT, 'bindings/node/examples')
const doc = readFileSync(path.join(ROOT, 'docs/node.md'), 'utf8')
const run = async (file, endpoint) => {
  const table = await freshTable(endpoint)
  const env = { ...process.env, DYNAMODB_ENDPOINT: endpoint, DYNAMODB_CACHE_TABLE: table, CACHE_PREFIX: 'app_' }
  return (await promisify(execFile)(process.execPath, [path.join(dir, file)], { env })).stdout
}

for (const file of ['quickstart.mjs', 'errors.mjs']) {
  test(`docs/node.md shows examples/${file} verbatim`, () => {
    assert.ok(doc.includes('```js\n' + readFileSync(path.join(dir, file), 'utf8') + '```'), file)
  })
}

for (const { name, endpoint } of SERVERS) {
  test(`examples run on ${name}`, async () => {
    assert.equal(await run('quickstart.mjs', endpoint), "42 { theme: 'dark', limits: [ 10, 20 ] }\n")
    const out = await run('errors.mjs', endpoint)
    assert.match(out, /^false\nbusy: timed out after .* waiting for lock `nightly` \(held by .*\)\ntrue\n$/)
  })
}
