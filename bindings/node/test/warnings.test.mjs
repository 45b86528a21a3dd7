// The core's warnings reach Node as process warnings of type 'DdblockWarning': a host whose clock
// is 5 s ahead of DynamoDB's (libfaketime, as the CLI's clock test) is told so on its first lock
// request; a host in sync is told nothing. Each runs as its own process, since faketime must wrap
// node from its start.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import path from 'node:path'
import { SERVERS, ROOT, freshTable } from './helpers.mjs'

const SCRIPT = `const { Store } = require(${JSON.stringify(path.join(ROOT, 'bindings/node/lib.js'))})
const warnings = []
process.on('warning', (w) => warnings.push({ name: w.name, message: w.message }))
const [table, endpoint] = process.argv.slice(1)
const lock = new Store({ table, endpoint }).lock('clock-check', { ttl: 10 })
lock.acquire()
  .then(async (got) => { if (!got) throw new Error('not acquired'); await lock.release() })
  .then(() => setImmediate(() => console.log(JSON.stringify(warnings))))`

async function warningsUnder (skew, endpoint) {
  const table = await freshTable(endpoint)
  const node = [process.execPath, '-e', SCRIPT, table, endpoint]
  // DONT_FAKE_MONOTONIC: the runtime's timers keep the real monotonic clock (as in the CLI tests).
  const [program, ...args] = skew === undefined ? node : ['faketime', '-f', skew, ...node]
  const { stdout } = await promisify(execFile)(program, args, { env: { ...process.env, DONT_FAKE_MONOTONIC: '1' } })
  return JSON.parse(stdout)
}

for (const { name, endpoint } of SERVERS) {
  test(`a clock 5 s ahead is a DdblockWarning [${name}]`, async () => {
    const warnings = await warningsUnder('+5s', endpoint)
    assert.equal(warnings.length, 1, JSON.stringify(warnings))
    assert.equal(warnings[0].name, 'DdblockWarning')
    assert.match(warnings[0].message, /^this host's clock is between \+/)
    assert.match(warnings[0].message, /Sync the clock \(NTP\)/)
  })

  test(`a clock in sync warns of nothing [${name}]`, async () => {
    assert.deepEqual(await warningsUnder(undefined, endpoint), [])
  })
}
