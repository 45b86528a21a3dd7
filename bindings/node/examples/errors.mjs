import { Store, DdblockError } from 'ddblock'

const store = new Store()
const holder = store.lock('nightly', { ttl: 60 })
await holder.acquire()

// acquire() answers false when the lock stays held for the whole wait...
console.log(await store.lock('nightly', { ttl: 60 }).acquire({ wait: { timeoutMs: 200 } })) // false

// ...block() (Laravel's name) rejects with LOCK_TIMEOUT instead.
try {
  await store.lock('nightly', { ttl: 60 }).block(200)
} catch (e) {
  if (e instanceof DdblockError && e.code === 'LOCK_TIMEOUT') {
    console.log('busy:', e.message)
  } else {
    throw e
  }
}

// Hand the owner to another process; it releases with restoreLock.
const owner = holder.owner
console.log(await store.restoreLock('nightly', owner).release()) // true
