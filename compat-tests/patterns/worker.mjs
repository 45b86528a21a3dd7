// A Node process of the mixed-language concurrency test (concurrency.py): the binding's once-only
// guard or compare-and-set `update`, started on a signal.
//
//   node worker.mjs once EVENT...   claims each event (`once.run`), done when won
//   node worker.mjs cas KEY N       N increments of KEY through `store.update`
//
// Configuration from Laravel's variables. Prints `ready`, waits for a line on stdin, then prints
// one JSON line.
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'

const { Store } = createRequire(import.meta.url)('../../bindings/node/lib.js')
const [mode, ...args] = process.argv.slice(2)
const store = new Store()
const lines = createInterface({ input: process.stdin })
const go = new Promise((resolve) => lines.once('line', resolve))
console.log('ready')
await go
lines.close()
if (mode === 'once') {
  const won = []
  for (const event of args) {
    const r = await store.once(event, { ttl: 60 }).run(async () => event)
    if (r.ran) won.push(r.value)
  }
  console.log(JSON.stringify({ lang: 'node', won }))
} else if (mode === 'cas') {
  const [key, n] = [args[0], Number(args[1])]
  let rounds = 0
  for (let i = 0; i < n; i++) {
    await store.update(key, (v) => { rounds += 1; return Number(v) + 1 }, { ttl: 600, attempts: 10000 })
  }
  console.log(JSON.stringify({ lang: 'node', increments: n, conflicts: rounds - n }))
} else {
  throw new Error(`unknown mode ${mode}`)
}
