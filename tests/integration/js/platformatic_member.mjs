// platformatic_member.mjs: one @platformatic/kafka group consumer, driven line
// by line over stdin/stdout like c/group_consumer.c (same options, events
// and commands; test_group_helpers.MemberProcess parses them).
//
//   node platformatic_member.mjs -b HOST:PORT -g GROUP -t T[,T...] [-a roundrobin]
//        [-i INSTANCE] [-s SESSION_MS] [-n NAME] [-R] [-P N] [-D MS]
//
// The client's classic group protocol is eager and has no revoke callback:
// it tells the assignment of each generation ('consumer:group:join'), printed
// as ASSIGNED + ASSIGNMENT; -R has nothing to hook and is accepted for the
// common command line. Its only assignor is its own round robin (-a other
// than roundrobin is refused). Commits: consumer.commit(), awaited.
// PLATFORMATIC_MEMBER_DEBUG=1 traces the client on stderr (below).
import { Consumer, MessagesStreamModes, MessagesStreamFallbackModes } from '@platformatic/kafka'
import { createInterface } from 'node:readline'

const opts = { a: 'roundrobin', s: 6000, n: 'platformatic-member', P: 0, D: 0, i: '' }
const argv = process.argv.slice(2)
for (let k = 0; k < argv.length; k++) {
  const f = argv[k].replace(/^-/, '')
  if (f === 'R' || f === 'q') opts[f] = true
  else opts[f] = argv[++k]
}
for (const f of ['s', 'P', 'D']) opts[f] = Number(opts[f])
if (opts.a !== 'roundrobin') {
  console.error(`platformatic_member: assignor ${opts.a}: this client only has roundrobin`)
  process.exit(2)
}

const out = (...w) => process.stdout.write(w.join(' ') + '\n')
const nowUs = () => process.hrtime.bigint() / 1000n // CLOCK_MONOTONIC on Linux
const plist = s => [...s].sort().join(',') || '-'
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

const consumer = new Consumer({
  groupId: opts.g,
  clientId: opts.n,
  bootstrapBrokers: [opts.b],
  sessionTimeout: opts.s,
  heartbeatInterval: Math.max(100, Math.floor(opts.s / 10)),
  rebalanceTimeout: 10000,
  autocommit: false,
  ...(opts.i ? { groupInstanceId: opts.i } : {})
})

// PLATFORMATIC_MEMBER_DEBUG=1: the client's fetches and offset look-ups as it
// makes them (its diagnostics channels) and each join, on stderr, stamped
// like MSG: tells a record fetched in this generation from one fetched before.
const debugging = Boolean(process.env.PLATFORMATIC_MEMBER_DEBUG)
const dbg = (...w) => debugging && process.stderr.write(`DEBUG ${nowUs()} gen=${consumer.generationId} ${w.join(' ')}\n`)
if (debugging) {
  const { tracingChannel } = await import('node:diagnostics_channel')
  const parts = ts => (ts ?? []).flatMap(t => t.partitions.map(p => `${p.partition}@${p.fetchOffset}`)).join(',')
  const batches = r => (r?.responses ?? []).flatMap(t => t.partitions.map(p => {
    const b = p.records ?? []
    return b.length ? `${p.partitionIndex}:[${b[0].firstOffset}-${b.at(-1).firstOffset + BigInt(b.at(-1).lastOffsetDelta)}]` : `${p.partitionIndex}:-`
  })).join(',')
  const show = v => JSON.stringify(v, (k, x) => typeof x === 'bigint' ? Number(x) : x instanceof Map ? [...x] : x)
  tracingChannel('plt:kafka:consumer:fetches').subscribe({
    start: c => dbg('FETCH', c.operationId, parts(c.options.topics)),
    asyncStart: c => dbg('FETCHED', c.operationId, c.error ? `error=${c.error.message}` : batches(c.result)),
    end () {}, asyncEnd () {}, error () {}
  })
  tracingChannel('plt:kafka:consumer:offsets').subscribe({
    start: c => dbg(c.operation, show(c.options.topics)),
    asyncStart: c => dbg(c.operation, 'answer', c.error ? `error=${c.error.message}` : show(c.result)),
    end () {}, asyncEnd () {}, error () {}
  })
}

let assignment = new Set()
const pos = new Map() // "t:p" -> next offset to read, only while owned
let sinceCommit = 0
let stream = null // the MessagesStream, once consume() has returned

consumer.on('consumer:group:join', p => {
  const got = new Set()
  for (const a of p.assignments ?? []) for (const q of a.partitions) got.add(`${a.topic}:${q}`)
  for (const tp of assignment) if (!got.has(tp)) pos.delete(tp)
  for (const tp of got) if (!assignment.has(tp)) pos.delete(tp)
  // Workaround for the client (1.35.0, also its main branch): on a join its
  // stream re-reads committed offsets, but where the group has none (-1) it
  // keeps the fetch position it had from an earlier ownership instead of
  // falling back to 'earliest'. Records it fetched then and delivered after
  // losing the partition are never read again by it as owner, so nobody
  // commits them (seen against cohortd and Apache Kafka 4.4.0 alike;
  // docs/NOTES.md). So keep a position only for a partition owned before and
  // after the join, as Kafka's own consumer does: the stream's refresh
  // (asynchronous, started by this same event) refills the others from the
  // committed offset, else from fallbackMode.
  if (stream) {
    for (const tp of [...stream.offsetsToFetch.keys()]) {
      if (!(got.has(tp) && assignment.has(tp))) stream.offsetsToFetch.delete(tp)
    }
  }
  assignment = got
  out('ASSIGNED', p.memberId, plist(got))
  dbg('JOIN', `leader=${p.isLeader}`, plist(got))
  out('ASSIGNMENT', p.memberId, plist(got))
})
consumer.on('consumer:heartbeat:error', p => out('ERROR', 'HEARTBEAT', String(p.error?.message ?? p.error).replace(/\s+/g, '_')))

async function commit (offsets) { // offsets: Map "t:p" -> next offset
  if (offsets.size === 0) return
  const list = [...offsets].map(([tp, o]) => {
    const i = tp.lastIndexOf(':')
    return { topic: tp.slice(0, i), partition: Number(tp.slice(i + 1)), offset: BigInt(o), leaderEpoch: -1 }
  })
  let err = 'NO_ERROR'
  try {
    await consumer.commit({ offsets: list })
  } catch (e) {
    err = (e.errors?.[0]?.apiId ?? e.code ?? 'ERROR').toString()
  }
  const us = nowUs()
  for (const x of list) out('COMMIT', x.topic, x.partition, x.offset, err, us)
}
const owned = () => new Map([...pos].filter(([tp]) => assignment.has(tp)))

stream = await consumer.consume({
  topics: opts.t.split(','),
  mode: MessagesStreamModes.COMMITTED,
  fallbackMode: MessagesStreamFallbackModes.EARLIEST,
  autocommit: false,
  maxWaitTime: 100
})
out('READY')

// Records and commands run one at a time, in arrival order.
let chain = Promise.resolve()
const serial = fn => (chain = chain.then(fn).catch(e => out('ERROR', 'EXCEPTION', String(e).replace(/\s+/g, '_'))))
let closing = false

async function command (line) {
  const w = line.split(/\s+/)
  if (w[0] === 'close') {
    if (!closing) {
      closing = true
      await stream.close() // ends the for-await below
    }
  } else if (w[0] === 'exit') {
    process.exit(3)
  } else if (w[0] === 'commitpos') {
    await commit(owned())
  } else if (w[0] === 'commit' && w.length === 4) {
    await commit(new Map([[`${w[1]}:${w[2]}`, Number(w[3])]]))
  } else if (w[0] === 'committed' && w.length >= 3) {
    const ps = w.slice(2).map(Number)
    const r = await consumer.listCommittedOffsets({ topics: [{ topic: w[1], partitions: ps }] })
    const offs = r.get(w[1]) ?? []
    ps.forEach((p, k) => out('COMMITTED', w[1], p, offs[k] === undefined || offs[k] < 0n ? -1001 : offs[k]))
  } else if (w[0]) {
    out('ERROR', '_INVALID_ARG', 'unknown command', line)
  }
}
const rl = createInterface({ input: process.stdin })
rl.on('line', line => serial(() => command(line.trim())))
rl.on('close', () => serial(() => command('close')))

for await (const m of stream) {
  await serial(async () => {
    if (closing) return
    out('MSG', m.topic, m.partition, m.offset, nowUs())
    pos.set(`${m.topic}:${m.partition}`, Number(m.offset) + 1)
    if (opts.D) await sleep(opts.D)
    if (opts.P && ++sinceCommit >= opts.P) {
      sinceCommit = 0
      await commit(owned())
    }
  })
}
await chain
await consumer.close()
out('CLOSED')
process.exit(0)
