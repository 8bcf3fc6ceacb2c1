"""isolation.level in libcohort (c/cohort_member.c, -X isolation.level=...):

- Apache Kafka 4.4 with confluent-kafka's transactional producers: committed
  and aborted transactions of two producers, interleaved with plain records.
  read_committed reads exactly the committed and plain records, none of the
  aborted; read_uncommitted reads them all; both positions end past the log's
  last batch, an ABORT marker. A transaction left open: read_committed's end
  offset and seek to end are its first offset (the LSO, ListOffsets at
  isolation level 1, also through cohort_admin_list_offsets_isolation) and
  its fetches stop there; after the commit its records come.
- cohortd has no transactions: read_committed (Fetch and ListOffsets at
  level 1) reads every record, the end offset is the log end.
"""
import os

from harness import BrokerTestCase, main, start_clean, stop_clean
from kafka_ref import KafkaRef
from test_client_libcohort_admin import CohortAdmin
from test_group_helpers import MemberProcess, create_topics, wait_until

MEMBER = os.environ.get("COHORT_MEMBER", "")
TOPIC = "txn"


def member(bootstrap, name, level):
    m = MemberProcess([MEMBER, "-b", bootstrap, "-g", "", "-A", TOPIC + ":0", "-n", name,
                       "-q", "-V", "-X", "isolation.level=" + level], name)
    return m


def values(m):
    """{offset: value} of the records m returned (its REC lines)."""
    with m.cv:
        recs = [l.split(" ") for l in m.lines if l.startswith("REC ")]
    return {int(r[3]): bytes.fromhex(r[5]).decode() for r in recs}


def ask(m, cmd, kind):
    """Sends `cmd TOPIC 0`; the offset of the answer line `kind TOPIC 0 O NO_ERROR`."""
    n = len(m.lines)
    m.send("%s %s 0" % (cmd, TOPIC))
    line = m.wait(lambda s: next((l for l in s.lines[n:] if l.startswith(kind + " ")), None),
                  30, kind)
    w = line.split(" ")
    if w[4] != "NO_ERROR":
        raise AssertionError("%s: %s" % (m.name, line))
    return int(w[3])


def admin_latest(bootstrap, *level):
    """cohort_admin_list_offsets(_isolation): the partition's LATEST offset."""
    admin = CohortAdmin(bootstrap)
    try:
        r = admin.call("listOffsets", *level, TOPIC + ":0=latest")
    finally:
        admin.close()
    return r["ok"][TOPIC + ":0"]["offset"]


def end_after(m, offset, what):
    """m's end offset once it is past offset (the broker writes a transaction's marker
    after EndTxn has answered; a read_committed end offset, the LSO, waits for it)."""
    ends = []
    wait_until(lambda: ends.append(ask(m, "endoffset", "ENDOFFSET")) or ends[-1] > offset,
               60, what)
    return ends[-1]


class TxnKafka(BrokerTestCase):
    """Apache Kafka 4.4.0 and confluent-kafka's transactions."""

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        cls.broker = start_clean(KafkaRef("4", name=cls.__name__, settings={
            "transaction.state.log.num.partitions": "1",
            "offsets.topic.num.partitions": "1"}))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)

    def test_isolation(self):
        import confluent_kafka
        bs = self.broker.bootstrap
        create_topics(self.broker.port, {TOPIC: 1})
        plain = confluent_kafka.Producer({"bootstrap.servers": bs, "acks": "all",
                                          "enable.idempotence": False, "linger.ms": 0})
        t1, t2 = [confluent_kafka.Producer({"bootstrap.servers": bs, "transactional.id": tid,
                                            "linger.ms": 0}) for tid in ("t1", "t2")]
        for p in (t1, t2):
            p.init_transactions(60)

        def send(p, *vals):
            for v in vals:
                p.produce(TOPIC, value=v.encode(), partition=0)
            self.assertEqual(p.flush(30), 0)

        send(plain, "p0")
        t1.begin_transaction()
        send(t1, "c1", "c2")
        t1.commit_transaction(30)
        t1.begin_transaction()            # aborted, a plain record inside it
        send(t1, "a1")
        send(plain, "p1")
        send(t1, "a2")
        t1.abort_transaction(30)
        t2.begin_transaction()            # two producers interleaved: t2 commits, t1 aborts
        send(t2, "c3")
        t1.begin_transaction()
        send(t1, "a3")
        send(plain, "p2")
        t2.commit_transaction(30)
        t1.abort_transaction(30)
        t1.begin_transaction()            # the log ends with an ABORT marker
        send(t1, "a4")
        t1.abort_transaction(30)

        rc = member(bs, "rc", "read_committed")
        ru = member(bs, "ru", "read_uncommitted")
        for m in (rc, ru):
            self.addCleanup(m.cleanup)
        everything = ["p0", "c1", "c2", "a1", "p1", "a2", "c3", "a3", "p2", "a4"]
        committed = ["p0", "c1", "c2", "p1", "c3", "p2"]
        wait_until(lambda: "a4" in values(ru).values(), 60, "read_uncommitted reads a4")
        off_a4 = [o for o, v in values(ru).items() if v == "a4"][0]
        # the LSO passes a4 once the marker after it is written: then it is the log end
        end = end_after(rc, off_a4, "the ABORT marker")
        self.assertEqual(end, off_a4 + 2)
        self.assertEqual(ask(ru, "endoffset", "ENDOFFSET"), end)
        for m in (rc, ru):   # past every batch, the closing ABORT marker included
            wait_until(lambda: ask(m, "position", "POSITION") == end, 60, m.name + " at the end")
        got = values(rc)
        self.assertEqual([got[o] for o in sorted(got)], committed)
        got = values(ru)
        self.assertEqual([got[o] for o in sorted(got)], everything)

        # an open transaction: read_committed stops at its first offset (the LSO)
        t1.begin_transaction()
        send(t1, "o1")
        send(plain, "p3")
        wait_until(lambda: "p3" in values(ru).values(), 60, "read_uncommitted reads p3")
        off_o1 = [o for o, v in values(ru).items() if v == "o1"][0]
        self.assertEqual(off_o1, end)
        self.assertEqual(ask(ru, "endoffset", "ENDOFFSET"), off_o1 + 2)
        self.assertEqual(ask(rc, "endoffset", "ENDOFFSET"), off_o1)
        self.assertEqual(admin_latest(bs, "readCommitted"), off_o1)   # the admin API too
        self.assertEqual(admin_latest(bs), off_o1 + 2)
        n = len(rc.lines)
        rc.send("seekend %s 0" % TOPIC)
        rc.wait(lambda s: any(l.startswith("SEEK ") for l in s.lines[n:]), 30, "SEEK")
        wait_until(lambda: ask(rc, "position", "POSITION") >= 0, 60, "the seek's lookup")
        self.assertEqual(ask(rc, "position", "POSITION"), off_o1)
        self.assertFalse({"o1", "p3"} & set(values(rc).values()))
        t1.commit_transaction(30)
        wait_until(lambda: {"o1", "p3"} <= set(values(rc).values()), 60,
                   "read_committed reads the committed o1 and p3")
        got = values(rc)
        self.assertEqual([got[o] for o in sorted(got)], committed + ["o1", "p3"])
        final = end_after(rc, off_o1 + 2, "the COMMIT marker")
        self.assertEqual(final, off_o1 + 3)
        wait_until(lambda: ask(rc, "position", "POSITION") == final, 60,
                   "rc past the COMMIT marker")
        for m in (rc, ru):
            self.assertIsNone(m.fatal)
            self.assertEqual(m.errors, [])
            self.assertEqual(m.close(), 0)


class TxnCohortd(BrokerTestCase):
    """cohortd, no transactions: read_committed is read_uncommitted."""

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        super().setUpClass()

    def test_read_committed(self):
        import confluent_kafka
        bs = "127.0.0.1:%d" % self.broker.port
        create_topics(self.broker.port, {TOPIC: 1})
        for idem in (False, True):   # plain, then idempotent (a producer id)
            p = confluent_kafka.Producer({"bootstrap.servers": bs, "acks": "all",
                                          "enable.idempotence": idem, "linger.ms": 0})
            for i in range(3):
                p.produce(TOPIC, value=b"%s%d" % (b"i" if idem else b"p", i), partition=0)
            self.assertEqual(p.flush(30), 0)
        rc = member(bs, "rc", "read_committed")
        self.addCleanup(rc.cleanup)
        wait_until(lambda: len(values(rc)) == 6, 60, "every record")
        got = values(rc)
        self.assertEqual([got[o] for o in sorted(got)], ["p0", "p1", "p2", "i0", "i1", "i2"])
        self.assertEqual(ask(rc, "endoffset", "ENDOFFSET"), 6)
        self.assertEqual(admin_latest(bs, "readCommitted"), 6)
        wait_until(lambda: ask(rc, "position", "POSITION") == 6, 60, "position 6")
        self.assertIsNone(rc.fatal)
        self.assertEqual(rc.close(), 0)


if __name__ == "__main__":
    main()
