// A Node peer for the PHP driver's cross-language tests (bindings/php/tests/CrossLanguageTest.php):
// the ddblock Node binding (bindings/node, path in DDBLOCK_NODE_BINDING) over JSON lines, with the
// same commands and answers as peer.py.
//
//   node peer.mjs '{"table": "t", "prefix": "app_", "layout": "laravel8", "endpoint": "http://..."}'
import { createRequire } from 'node:module'
import readline from 'node:readline'

const require = createRequire(import.meta.url)
const { Store } = require(process.env.DDBLOCK_NODE_BINDING)
const cfg = JSON.parse(process.argv[2])
const store = new Store({ table: cfg.table, prefix: cfg.prefix, layout: cfg.layout, endpoint: cfg.endpoint })

async function run (cmd) {
  switch (cmd.op) {
    case 'acquire': {
      const lock = store.lock(cmd.name, { ttl: cmd.ttl, ...(cmd.owner == null ? {} : { owner: cmd.owner }) })
      return { acquired: await lock.acquire(), owner: lock.owner }
    }
    case 'release':
      return { released: await store.restoreLock(cmd.name, cmd.owner).release() }
    case 'holder': {
      const h = await store.lock(cmd.name).holder()
      return { holder: h === null ? null : { owner: h.owner ?? null, expires_at: h.expiresAt ?? null } }
    }
    case 'lock_key':
      return { key: store.lock(cmd.name).key ?? null }
    default:
      throw new Error(`unknown op ${cmd.op}`)
  }
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  let answer
  try {
    answer = { ok: true, ...(await run(JSON.parse(line))) }
  } catch (e) {
    answer = { ok: false, error: `${e.code ?? e.name}: ${e.message}` }
  }
  process.stdout.write(JSON.stringify(answer) + '\n')
}
