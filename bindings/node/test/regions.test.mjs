// Tables that span Regions (docs/semantics.md "Multi-Region"), through the fault proxy, which gives
// DescribeTable a global table's fields or answers a write with MRSC's
// ReplicatedWriteConflictException (no local server has global tables): a global table with eventual
// consistency (MREC) is a CONFIG error unless allowEventualGlobalTable; on MRSC a conflict is sent
// again; one DescribeTable for many stores and locks in this process.
import { test, describe } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { SERVERS, faultProxy, freshTable } from './helpers.mjs'

const { Store, DdblockError } = createRequire(import.meta.url)('../lib.js')
const REPLICAS = [{ RegionName: 'us-east-1' }, { RegionName: 'eu-west-1' }]

async function stats (proxy) {
  return (await (await fetch(proxy.url + '/__proxy/stats')).json()).ops
}

for (const { name: server, endpoint } of SERVERS) {
  describe(`regions on ${server}`, () => {
    test('an eventual global table (MREC) is a CONFIG error; the setting lets locks go on', async () => {
      const table = await freshTable(endpoint)
      const proxy = await faultProxy(endpoint, [])
      try {
        await proxy.faults({ describe_table: { Replicas: REPLICAS } })
        const options = { table, endpoint: proxy.url, region: 'us-east-1' }
        const lock = new Store(options).lock('mrec', { ttl: 10 })
        await assert.rejects(lock.acquire(), (e) => {
          assert.ok(e instanceof DdblockError, String(e))
          assert.equal(e.code, 'CONFIG')
          assert.match(e.message, /multi-Region eventual consistency \(MREC; replicas: us-east-1, eu-west-1\)/)
          return true
        })
        assert.equal((await stats(proxy)).UpdateItem, undefined, 'nothing written')
        const allowed = new Store({ ...options, allowEventualGlobalTable: 'true' }).lock('mrec', { ttl: 10 })
        assert.equal(await allowed.acquire(), true)
        assert.equal(await allowed.release(), true)
      } finally {
        proxy.stop()
      }
    })

    test('MRSC: one DescribeTable for many stores and locks; a replicated write conflict is sent again', async () => {
      const table = await freshTable(endpoint)
      const proxy = await faultProxy(endpoint, [])
      try {
        await proxy.faults({
          describe_table: { Replicas: REPLICAS, MultiRegionConsistency: 'STRONG' },
          sequence: { UpdateItem: ['replicated_conflict'] },
        })
        for (let s = 0; s < 3; s++) {
          const store = new Store({ table, endpoint: proxy.url, region: 'us-east-1' })
          for (let i = 0; i < 3; i++) {
            const lock = store.lock(`mrsc-${s}-${i}`, { ttl: 10 })
            assert.equal(await lock.acquire(), true)
            assert.equal(await lock.release(), true)
          }
        }
        const ops = await stats(proxy)
        assert.deepEqual(ops.DescribeTable, { forwarded_ok: 1 })
        assert.deepEqual(ops.UpdateItem, { replicated_conflict: 1, forwarded_ok: 9 })
        assert.deepEqual(ops.DeleteItem, { forwarded_ok: 9 })
      } finally {
        proxy.stop()
      }
    })
  })
}
