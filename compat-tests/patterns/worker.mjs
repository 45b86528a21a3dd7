// A Node process of the mixed-language concurrency test (concurrency.py): the binding's once-only
// guard or compare-and-set `update`, started on a signal.
//
//   node worker.mjs once EVENT...   claims each event (`once.run`), done when won
//   node worker.mjs cas KEY N       N increments of KEY through `store.update`
//   node worker.mjs lock NAME COUNTER LOG N
//                                   N times under lock NAME (`withLock`): increment the number in
//                                   file COUNTER (read, pause, write), append
//                                   `lang fence start_ns end_ns` to file LOG
//   node worker.mjs takeover NAME...  one attempt at each lock (expired ones): what it won
//
// Configuration from Laravel's variables. Prints `ready`, waits for a line on stdin, then prints
// one JSON line.
import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'
import { readFileSync, writeFileSync, appendFileSync } from 'node:fs'

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
} else if (mode === 'lock') {
  const [name, counter, log, n] = [args[0], args[1], args[2], Number(args[3])]
  // Wall-clock nanoseconds (the other languages' clock), to the microsecond.
  const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n
  for (let i = 0; i < n; i++) {
    await store.withLock(name, { ttl: 30, timeoutMs: 120000 }, async (lock) => {
      const start = nowNs()
      const value = Number(readFileSync(counter, 'utf8'))
      await new Promise((resolve) => setTimeout(resolve, 10))
      writeFileSync(counter, String(value + 1))
      appendFileSync(log, `node ${lock.fence} ${start} ${nowNs()}\n`)
    })
  }
  console.log(JSON.stringify({ lang: 'node', held: n }))
} else if (mode === 'takeover') {
  const won = {}
  for (const name of args) {
    const lock = store.lock(name, { ttl: 30 })
    if (await lock.acquire()) won[name] = lock.fence
  }
  console.log(JSON.stringify({ lang: 'node', won }))
} else {
  throw new Error(`unknown mode ${mode}`)
}
