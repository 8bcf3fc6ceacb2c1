// kafkajs 2.2.4 consumer group against cohortd.
//   node js/group_test.js HOST:PORT [data]
// Two consumers form a group on a 4-partition topic (every partition assigned
// exactly once), commit offsets, the admin reads them back (fetchOffsets,
// describeGroups, listGroups), one consumer leaves and the other takes all
// partitions, then deleteGroups. With "data", messages produced by the
// kafkajs producer are consumed by the group too.
// Prints "ok - STEP" / "not ok - STEP: why"; exits 1 if any step failed.
// test_group_kafkajs.py starts the broker and runs this.
'use strict'
const assert = require('node:assert/strict')
const { Kafka, logLevel } = require('kafkajs')

const bootstrap = process.argv[2]
const withData = process.argv[3] === 'data'
const TOPIC = 'js-group-t'
const GROUP = 'js-group'
const NPART = 4

const kafka = new Kafka({
  clientId: 'cohort-it-kafkajs-group',
  brokers: [bootstrap],
  logLevel: process.env.KAFKAJS_DEBUG ? logLevel.DEBUG : logLevel.NOTHING,
  connectionTimeout: 10000,
  requestTimeout: 30000,
  retry: { retries: 5, initialRetryTime: 100 },
})
const admin = kafka.admin()

let failed = 0
async function step(name, fn) {
  try {
    await fn()
    console.log(`ok - ${name}`)
  } catch (e) {
    failed++
    console.log(`not ok - ${name}: ${e && e.stack ? e.stack : e}`)
  }
}

const sleep = ms => new Promise(r => setTimeout(r, ms))
async function waitFor(what, fn, timeoutMs = 60000) {
  const end = Date.now() + timeoutMs
  for (;;) {
    if (await fn()) return
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

function member(name) {
  const m = { name, assignment: [], joins: 0, seen: [], crashed: null }
  m.consumer = kafka.consumer({
    groupId: GROUP, sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 20000,
    retry: { retries: 5 },
  })
  const ev = m.consumer.events
  m.consumer.on(ev.GROUP_JOIN, e => {
    m.joins++
    m.memberId = e.payload.memberId
    m.assignment = (e.payload.memberAssignment[TOPIC] || []).slice().sort()
  })
  m.consumer.on(ev.CRASH, e => { m.crashed = e.payload.error })
  return m
}

async function start(m) {
  await m.consumer.connect()
  await m.consumer.subscribe({ topics: [TOPIC], fromBeginning: true })
  await m.consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => { m.seen.push([partition, Number(message.offset)]) },
  })
}

function exactCover(ms) {
  const all = ms.flatMap(m => m.assignment)
  return all.length === NPART && new Set(all).size === NPART && ms.every(m => m.assignment.length > 0)
}

async function main() {
  const a = member('a')
  const b = member('b')
  await step('connect admin, create topic', async () => {
    await admin.connect()
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: NPART }] })
  })
  if (withData) {
    await step('produce 40 messages', async () => {
      const p = kafka.producer()
      await p.connect()
      for (let part = 0; part < NPART; part++)
        await p.send({ topic: TOPIC, messages: Array.from({ length: 10 }, (_, i) => ({ partition: part, value: `m${part}-${i}` })) })
      await p.disconnect()
    })
  }
  await step('first consumer gets every partition', async () => {
    await start(a)
    await waitFor('a assigned', () => exactCover([a]))
  })
  await step('second consumer joins: every partition exactly once', async () => {
    await start(b)
    await waitFor('exact cover by a and b', () => exactCover([a, b]) && !a.crashed && !b.crashed)
  })
  if (withData) {
    await step('every message consumed', async () => {
      await waitFor('40 messages', () => new Set([...a.seen, ...b.seen].map(x => x.join(':'))).size === 40)
    })
  }
  await step('commitOffsets and admin.fetchOffsets', async () => {
    const offs = a.assignment.map(p => ({ topic: TOPIC, partition: p, offset: String(100 + p) }))
    await a.consumer.commitOffsets(offs)
    const got = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
    const parts = got[0].partitions
    for (const p of a.assignment) assert.equal(parts.find(x => x.partition === p).offset, String(100 + p))
    for (const p of b.assignment) assert.equal(parts.find(x => x.partition === p).offset, '-1')
  })
  await step('describeGroups and listGroups', async () => {
    const { groups } = await admin.describeGroups([GROUP])
    assert.equal(groups.length, 1)
    const g = groups[0]
    assert.equal(g.errorCode, 0)
    assert.equal(g.state, 'Stable')
    assert.equal(g.protocolType, 'consumer')
    assert.equal(g.members.length, 2)
    assert.deepEqual(g.members.map(x => x.memberId).sort(), [a.memberId, b.memberId].sort())
    const l = await admin.listGroups()
    assert.ok(l.groups.some(x => x.groupId === GROUP && x.protocolType === 'consumer'), JSON.stringify(l))
  })
  await step('a leaves: b gets every partition', async () => {
    await a.consumer.disconnect()
    await waitFor('b owns all', () => exactCover([b]))
  })
  await step('deleteGroups on a non-empty group fails', async () => {
    let err = null
    try { await admin.deleteGroups([GROUP]) } catch (e) { err = e }
    assert.ok(err, 'deleteGroups succeeded on a group with a member')
    const types = (err.groups || []).map(x => x.error && x.error.type)
    assert.deepEqual(types, ['NON_EMPTY_GROUP'], JSON.stringify(err.groups || err.message))
  })
  await step('b leaves; deleteGroups; offsets gone', async () => {
    await b.consumer.disconnect()
    await waitFor('Empty', async () => (await admin.describeGroups([GROUP])).groups[0].state === 'Empty')
    const r = await admin.deleteGroups([GROUP])
    assert.equal(r[0].errorCode, 0, JSON.stringify(r))
    const got = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
    for (const p of got[0].partitions) assert.equal(p.offset, '-1')
  })
  await admin.disconnect()
  process.exit(failed ? 1 : 0)
}

main().catch(e => { console.log(`not ok - main: ${e.stack}`); process.exit(1) })
