// kafkajs 2.2.4 on cohortd's data path.
//   node js/data_test.js HOST:PORT
// Prints "ok - STEP" / "not ok - STEP: why" and exits 1 if any step failed.
'use strict'
const assert = require('node:assert/strict')
const { Kafka, logLevel, CompressionTypes } = require('kafkajs')

const bootstrap = process.argv[2]
const kafka = new Kafka({
  clientId: 'cohort-it-kafkajs-data',
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  retry: { retries: 5, initialRetryTime: 100 },
})
const admin = kafka.admin()
const topic = 'kjs-data'
const N = 2000

let failed = 0
async function step(name, fn) {
  try {
    await fn()
    console.log('ok - ' + name)
  } catch (e) {
    failed++
    console.log('not ok - ' + name + ': ' + (e && e.stack ? e.stack : e))
  }
}

async function main() {
  await admin.connect()
  await step('create topic', async () => {
    assert.equal(await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] }), true)
  })
  const t0 = Date.now() - 100000
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  await step('idempotent producer, acks=all, gzip', async () => {
    for (let b = 0; b < N / 100; b++) {
      const messages = []
      for (let i = b * 100; i < (b + 1) * 100; i++)
        messages.push({ key: 'k' + (i % 13), value: 'v' + i, partition: i % 2,
                        timestamp: String(t0 + i), headers: { seq: String(i) } })
      const res = await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP,
                                        messages })
      for (const r of res) assert.equal(r.errorCode, 0)
    }
  })
  await producer.disconnect()
  await step('plain producer, acks=1', async () => {
    const plain = kafka.producer()
    await plain.connect()
    const res = await plain.send({ topic, acks: 1, messages: [{ value: 'plain', partition: 0 }] })
    assert.equal(res[0].errorCode, 0)
    await plain.disconnect()
  })
  await step('fetchTopicOffsets (earliest/latest)', async () => {
    const offs = await admin.fetchTopicOffsets(topic)
    offs.sort((a, b) => a.partition - b.partition)
    assert.deepEqual(offs.map((o) => [o.partition, o.low, o.high]),
      [[0, '0', String(N / 2 + 1)], [1, '0', String(N / 2)]])
  })
  await step('fetchTopicOffsetsByTimestamp', async () => {
    const offs = await admin.fetchTopicOffsetsByTimestamp(topic, t0 + 1000)
    offs.sort((a, b) => a.partition - b.partition)
    assert.deepEqual(offs.map((o) => o.offset), ['500', '500'])
  })
  let groupsWork = true
  await step('consume from the beginning (consumer group)', async () => {
    const consumer = kafka.consumer({ groupId: 'kjs-data-group', sessionTimeout: 10000,
                                      heartbeatInterval: 500, maxWaitTimeInMs: 200 })
    try {
      await consumer.connect()
      await consumer.subscribe({ topic, fromBeginning: true })
    } catch (e) {
      groupsWork = false
      console.log('# no group APIs yet: ' + e.message)
      return
    }
    const seen = new Set()
    const last = {}
    let bad = null
    const done = new Promise((resolve) => {
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          const off = Number(message.offset)
          if (last[partition] !== undefined && off !== last[partition] + 1)
            bad = bad || `gap at ${partition}/${off}`
          last[partition] = off
          if (message.value.toString() !== 'plain') {
            if (message.headers.seq.toString() !== message.value.toString().slice(1))
              bad = bad || 'header mismatch'
            seen.add(message.value.toString())
          }
          if (seen.size === N) resolve()
        },
      })
    })
    const timeout = new Promise((_, rej) => setTimeout(() => rej(new Error(`only ${seen.size}`)), 60000))
    try {
      await Promise.race([done, timeout])
    } finally {
      await consumer.disconnect()
    }
    assert.equal(bad, null)
    assert.equal(seen.size, N)
  })
  await admin.disconnect()
  process.exit(failed ? 1 : 0)
}

main().catch((e) => {
  console.log('not ok - main: ' + e.stack)
  process.exit(1)
})
