import { Store } from 'ddblock'

// DYNAMODB_CACHE_TABLE, DYNAMODB_ENDPOINT, AWS_DEFAULT_REGION, CACHE_PREFIX, DDBLOCK_LAYOUT:
// the same variables as the Laravel app.
const store = new Store()

// A lock, shared with the PHP apps (same table, prefix and layout).
const lock = store.lock('orders:42', { ttl: 30 })
if (await lock.acquire()) {
  try {
    // ... critical section ...
  } finally {
    await lock.release() // ONE DeleteItem conditioned on our owner
  }
}

// Wait up to 5 s, run, release when the callback settles (its error is rethrown).
const total = await store.withLock('reports:daily', { ttl: 60, timeoutMs: 5000 }, async () => {
  return 42
})

// Cache values are PHP values: Laravel reads what Node writes, and the other way round.
await store.put('settings', { theme: 'dark', limits: [10, 20] }, 3600)
console.log(total, await store.get('settings'))
