// kafkajs 2.2.4 over TLS against cohortd: one consumer group member reads a
// topic and commits, over SASL_SSL with SCRAM-SHA-512 or SSL with a client
// certificate; or one connection attempt that must fail (wrong password).
//   node js/security_test.js HOST:PORT sasl|ssl|sasl-fail CA [CERT KEY|USER PASSWORD] TOPIC GROUP COUNT
// Prints one JSON line: {"consumed":N,"committed":"OFFSET"} or {"error":"..."}.
// test_security.py starts the broker and runs this.
'use strict'
const fs = require('node:fs')
const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, mode, ca, a, b, topic, group, count] = process.argv.slice(2)
const ssl = { ca: [fs.readFileSync(ca, 'utf8')] }
const opts = {
  clientId: 'cohort-it-kafkajs-security',
  brokers: [bootstrap],
  logLevel: logLevel.NOTHING,
  connectionTimeout: 10000,
  requestTimeout: 30000,
  retry: { retries: mode === 'sasl-fail' ? 0 : 5, initialRetryTime: 100 },
  ssl,
}
if (mode === 'ssl') {
  ssl.cert = fs.readFileSync(a, 'utf8')
  ssl.key = fs.readFileSync(b, 'utf8')
} else {
  opts.sasl = { mechanism: 'scram-sha-512', username: a, password: b }
}
const kafka = new Kafka(opts)

async function main() {
  if (mode === 'sasl-fail') {
    const admin = kafka.admin()
    try {
      await admin.connect()
      console.log(JSON.stringify({ error: null }))
    } catch (e) {
      console.log(JSON.stringify({ error: `${e.type || e.name}: ${e.message}` }))
    }
    return
  }
  const want = Number(count)
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 6000, heartbeatInterval: 300 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let seen = 0
  let last = -1
  let resolve
  const done = new Promise(r => { resolve = r })
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ message }) => {
      seen++
      last = Number(message.offset)
      if (seen === want) resolve()
    },
  })
  const timer = setTimeout(() => resolve(), 60000)
  await done
  clearTimeout(timer)
  await consumer.commitOffsets([{ topic, partition: 0, offset: String(last + 1) }])
  const admin = kafka.admin()
  await admin.connect()
  const offs = await admin.fetchOffsets({ groupId: group, topics: [topic] })
  await admin.disconnect()
  await consumer.disconnect()
  console.log(JSON.stringify({ consumed: seen, committed: offs[0].partitions[0].offset }))
}
main().catch(e => { console.log(JSON.stringify({ error: String(e && e.stack ? e.stack : e) })); process.exit(1) })
