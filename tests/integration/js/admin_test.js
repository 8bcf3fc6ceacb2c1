// kafkajs 2.2.4 admin client against cohortd.
//   node js/admin_test.js HOST:PORT
// Prints "ok - STEP" / "not ok - STEP: why" for each step and exits 1 if any
// step failed. test_kafkajs.py starts the broker and runs this.
'use strict'
const assert = require('node:assert/strict')
const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs')

const bootstrap = process.argv[2]
if (!bootstrap) {
  console.error('usage: node admin_test.js HOST:PORT')
  process.exit(2)
}
const [host, portStr] = bootstrap.split(':')
const port = Number(portStr)

const kafka = new Kafka({
  clientId: 'cohort-it-kafkajs',
  brokers: [bootstrap],
  logLevel: logLevel.ERROR,
  connectionTimeout: 10000,
  requestTimeout: 20000,
  retry: { retries: 3, initialRetryTime: 100 },
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
    if (e && e.errors) console.log(`    errors: ${JSON.stringify(e.errors.map(x => [x.type, x.message]))}`)
  }
}

// The Kafka error type(s) carried by a kafkajs error.
// (KafkaJSNumberOfRetriesExceeded wraps the last error as .cause: kafkajs
// retries UNKNOWN_TOPIC_OR_PARTITION on deleteTopics.)
function errorTypes(e) {
  while (e && e.name === 'KafkaJSNumberOfRetriesExceeded' && e.cause) e = e.cause
  if (e && Array.isArray(e.errors) && e.errors.length) return e.errors.map(x => x.type)
  return [e && e.type]
}

async function rejectsWith(promise, type) {
  let err = null
  try {
    await promise
  } catch (e) {
    err = e
  }
  assert.ok(err, `expected ${type}, but the call succeeded`)
  assert.deepEqual(errorTypes(err), [type], `expected ${type}, got ${err.message}`)
}

async function main() {
  let nodeId = null
  await step('connect', () => admin.connect())

  await step('describeCluster', async () => {
    const c = await admin.describeCluster()
    assert.equal(c.brokers.length, 1, JSON.stringify(c))
    assert.equal(c.brokers[0].host, host)
    assert.equal(c.brokers[0].port, port)
    nodeId = c.brokers[0].nodeId
    assert.equal(c.controller, nodeId, 'controller is this broker')
    assert.ok(c.clusterId, 'cluster id')
  })

  await step('createTopics', async () => {
    const created = await admin.createTopics({
      topics: [
        { topic: 'js-a', numPartitions: 3, replicationFactor: 1 },
        { topic: 'js-b', numPartitions: 1, replicationFactor: 1 },
        { topic: 'js-c', numPartitions: 2, replicationFactor: 1,
          configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
      ],
      timeout: 10000,
    })
    assert.equal(created, true)
  })

  await step('createTopics existing topic resolves false', async () => {
    const created = await admin.createTopics({
      topics: [{ topic: 'js-a', numPartitions: 3, replicationFactor: 1 }],
      timeout: 10000,
    })
    assert.equal(created, false)
  })

  await step('createTopics validateOnly', async () => {
    await admin.createTopics({
      topics: [{ topic: 'js-validate', numPartitions: 1, replicationFactor: 1 }],
      validateOnly: true, waitForLeaders: false,
    })
    assert.ok(!(await admin.listTopics()).includes('js-validate'), 'validateOnly created it')
  })

  await step('createTopics invalid replication factor', () =>
    rejectsWith(admin.createTopics({
      topics: [{ topic: 'js-rf3', numPartitions: 1, replicationFactor: 3 }],
      waitForLeaders: false,
    }), 'INVALID_REPLICATION_FACTOR'))

  await step('createTopics invalid name', () =>
    rejectsWith(admin.createTopics({
      topics: [{ topic: 'js bad name', numPartitions: 1, replicationFactor: 1 }],
      waitForLeaders: false,
    }), 'INVALID_TOPIC_EXCEPTION'))

  await step('listTopics', async () => {
    const topics = await admin.listTopics()
    for (const t of ['js-a', 'js-b', 'js-c']) assert.ok(topics.includes(t), `${t} in ${topics}`)
    assert.ok(!topics.includes('js-rf3'), 'a rejected topic was created')
  })

  await step('fetchTopicMetadata', async () => {
    const md = await admin.fetchTopicMetadata({ topics: ['js-a', 'js-b'] })
    const byName = Object.fromEntries(md.topics.map(t => [t.name, t]))
    assert.deepEqual(Object.keys(byName).sort(), ['js-a', 'js-b'])
    for (const [name, n] of [['js-a', 3], ['js-b', 1]]) {
      const parts = byName[name].partitions
      assert.deepEqual(parts.map(p => p.partitionId).sort(), [...Array(n).keys()])
      for (const p of parts) {
        assert.equal(p.partitionErrorCode, 0)
        assert.equal(p.leader, nodeId)
        assert.deepEqual(p.replicas, [nodeId])
        assert.deepEqual(p.isr, [nodeId])
      }
    }
  })

  await step('fetchTopicMetadata all topics', async () => {
    const md = await admin.fetchTopicMetadata()
    const names = md.topics.map(t => t.name)
    for (const t of ['js-a', 'js-b', 'js-c']) assert.ok(names.includes(t), `${t} in ${names}`)
  })

  await step('createPartitions', async () => {
    await admin.createPartitions({ topicPartitions: [{ topic: 'js-b', count: 4 }] })
    const md = await admin.fetchTopicMetadata({ topics: ['js-b'] })
    assert.equal(md.topics[0].partitions.length, 4)
  })

  await step('createPartitions decrease', () =>
    rejectsWith(admin.createPartitions({ topicPartitions: [{ topic: 'js-b', count: 2 }] }),
      'INVALID_PARTITIONS'))

  await step('describeConfigs topic', async () => {
    const r = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'js-c' }], includeSynonyms: false,
    })
    assert.equal(r.resources.length, 1)
    const res = r.resources[0]
    assert.equal(res.errorCode, 0, res.errorMessage)
    assert.equal(res.resourceName, 'js-c')
    assert.ok(res.configEntries.length > 0, 'no config entries')
    const cp = res.configEntries.find(e => e.configName === 'cleanup.policy')
    assert.ok(cp, 'cleanup.policy given at creation is not described')
    assert.equal(cp.configValue, 'compact')
  })

  await step('describeConfigs topic, named key', async () => {
    const r = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'js-c', configNames: ['cleanup.policy'] }],
      includeSynonyms: false,
    })
    assert.deepEqual(r.resources[0].configEntries.map(e => e.configName), ['cleanup.policy'])
  })

  await step('describeConfigs broker', async () => {
    const r = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: String(nodeId) }], includeSynonyms: false,
    })
    const res = r.resources[0]
    assert.equal(res.errorCode, 0, res.errorMessage)
    assert.ok(res.configEntries.some(e => e.configName === 'num.partitions'), 'num.partitions')
  })

  const topicConfig = async (name, key) => {
    const r = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name, configNames: [key] }],
      includeSynonyms: false,
    })
    return r.resources[0].configEntries[0]
  }

  await step('alterConfigs topic, described with its source', async () => {
    await admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'js-b',
        configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
    })
    const e = await topicConfig('js-b', 'retention.ms')
    assert.equal(e.configValue, '3600000')
    assert.equal(e.configSource, 1) // DYNAMIC_TOPIC_CONFIG
    await admin.alterConfigs({ validateOnly: true,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'js-b',
        configEntries: [{ name: 'retention.ms', value: '60000' }] }] })
    assert.equal((await topicConfig('js-b', 'retention.ms')).configValue, '3600000')
  })

  await step('alterConfigs unknown key', () =>
    rejectsWith(admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: 'js-b',
        configEntries: [{ name: 'no.such.config', value: '1' }] }],
    }), 'INVALID_CONFIG'))

  await step('alterConfigs read-only broker key', () =>
    rejectsWith(admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: String(nodeId),
        configEntries: [{ name: 'num.partitions', value: '3' }] }],
    }), 'INVALID_REQUEST'))

  await step('alterConfigs broker', async () => {
    await admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: String(nodeId),
        configEntries: [{ name: 'log.retention.ms', value: '7200000' }] }],
    })
    const r = await admin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: String(nodeId),
        configNames: ['log.retention.ms'] }], includeSynonyms: false,
    })
    const e = r.resources[0].configEntries[0]
    assert.equal(e.configValue, '7200000')
    assert.equal(e.configSource, 2) // DYNAMIC_BROKER_CONFIG
    assert.equal(e.readOnly, false)
    await admin.alterConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name: String(nodeId), configEntries: [] }],
    })
  })

  await step('deleteTopicRecords', async () => {
    const producer = kafka.producer()
    await producer.connect()
    await producer.send({ topic: 'js-b', messages: [0, 1, 2, 3, 4].map(i => ({
      value: `m${i}`, partition: 0 })) })
    await producer.disconnect()
    await admin.deleteTopicRecords({ topic: 'js-b', partitions: [{ partition: 0, offset: '3' }] })
    const offs = await admin.fetchTopicOffsets('js-b')
    const p0 = offs.find(o => o.partition === 0)
    assert.equal(p0.low, '3')
    assert.equal(p0.high, '5')
  })

  await step('deleteTopics', async () => {
    await admin.deleteTopics({ topics: ['js-a', 'js-c'], timeout: 10000 })
    const topics = await admin.listTopics()
    assert.ok(!topics.includes('js-a') && !topics.includes('js-c'), `still there: ${topics}`)
    assert.ok(topics.includes('js-b'))
  })

  await step('deleteTopics unknown topic', () =>
    rejectsWith(admin.deleteTopics({ topics: ['js-never'], timeout: 5000 }),
      'UNKNOWN_TOPIC_OR_PARTITION'))

  await step('disconnect', () => admin.disconnect())
}

main()
  .catch(e => {
    failed++
    console.log(`not ok - unexpected: ${e && e.stack}`)
  })
  .finally(() => {
    console.log(failed ? `${failed} step(s) failed` : 'all steps passed')
    process.exit(failed ? 1 : 0)
  })
