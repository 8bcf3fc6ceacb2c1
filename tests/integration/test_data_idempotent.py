"""Idempotent producer state survives a restart (raw protocol, kwire).

cohortd keeps each idempotent producer's epoch and last five batches'
sequences in memory and rebuilds them from the tail of the log when a
partition is opened, as Kafka rebuilds producer state from the log. So:

- a batch produced with acks=all, then cohortd SIGKILLed and restarted, then
  the identical batch (same producer id, epoch, sequence) sent again: the
  answer is the original offset and the log holds it once;
- a sequence gap after the restart is OUT_OF_ORDER_SEQUENCE_NUMBER, the next
  sequence is accepted, an older epoch is INVALID_PRODUCER_EPOCH.

Batches are built here with struct and a table CRC-32C, independent of
cohort's code.
"""
import struct
import time

import kwire
from harness import BrokerTestCase, main

OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(v):
    v = (v << 1) ^ (v >> 63)  # zig-zag
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def batch(pid, epoch, seq, values, ts=None):
    """A v2 record batch, uncompressed, from an idempotent producer."""
    ts = int(time.time() * 1000) if ts is None else ts
    recs = b""
    for i, v in enumerate(values):
        body = b"\x00" + varint(0) + varint(i) + varint(-1) + varint(len(v)) + v + varint(0)
        recs += varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, ts, ts, pid, epoch, seq,
                            len(values)) + recs
    crc = crc32c(after_crc)
    tail = struct.pack(">ibI", -1, 2, crc) + after_crc  # leader epoch, magic, crc
    return struct.pack(">qi", 0, len(tail)) + tail


def init_producer_id(c):
    w = kwire.Writer(False)
    w.string(None).int32(60000)  # TransactionalId null, TransactionTimeoutMs
    r = c.call(22, 1, w.bytes())
    r.int32()  # throttle
    err, pid, epoch = r.int16(), r.int64(), r.int16()
    assert err == 0, err
    return pid, epoch


def produce(c, topic, part, records, acks=-1):
    """Produce v7 (non-flexible); returns (error, base_offset)."""
    w = kwire.Writer(False)
    w.string(None).int16(acks).int32(10000)
    w.array_len(1).string(topic).array_len(1).int32(part)
    w.int32(len(records)).raw(records)
    r = c.call(0, 7, w.bytes())
    assert r.array_len() == 1
    assert r.string() == topic
    assert r.array_len() == 1
    assert r.int32() == part
    err, base = r.int16(), r.int64()
    r.int64()  # log append time
    r.int64()  # log start offset
    r.int32()  # throttle
    return err, base


def end_offset(c, topic, part):
    """ListOffsets v1, latest."""
    w = kwire.Writer(False)
    w.int32(-1).array_len(1).string(topic).array_len(1).int32(part).int64(-1)
    r = c.call(2, 1, w.bytes())
    r.array_len()
    r.string()
    r.array_len()
    r.int32()
    err, _ts, off = r.int16(), r.int64(), r.int64()
    assert err == 0, err
    return off


class IdempotentRestart(BrokerTestCase):
    def restart_hard(self):
        self.broker.kill9()
        self.broker.start()

    def test_retry_after_sigkill_is_a_duplicate(self):
        t = "idem-kill"
        with kwire.Conn(self.broker.port) as c:
            kwire.create_topics(c, [(t, 1, 1)], 4)
            pid, epoch = init_producer_id(c)
            b0 = batch(pid, epoch, 0, [b"a0", b"a1", b"a2"])
            b1 = batch(pid, epoch, 3, [b"b0", b"b1"])
            self.assertEqual(produce(c, t, 0, b0), (0, 0))
            self.assertEqual(produce(c, t, 0, b1), (0, 3))
            # a duplicate before the restart too (sanity)
            self.assertEqual(produce(c, t, 0, b1), (0, 3))
        self.restart_hard()
        with kwire.Conn(self.broker.port) as c:
            self.assertEqual(end_offset(c, t, 0), 5)
            # the identical batches again: their original offsets, nothing appended
            self.assertEqual(produce(c, t, 0, b1), (0, 3))
            self.assertEqual(produce(c, t, 0, b0), (0, 0))
            self.assertEqual(produce(c, t, 0, b1, acks=1), (0, 3))
            self.assertEqual(end_offset(c, t, 0), 5)
            # a gap: sequence 7 where 5 is next
            err, _ = produce(c, t, 0, batch(pid, epoch, 7, [b"gap"]))
            self.assertEqual(err, OUT_OF_ORDER_SEQUENCE_NUMBER)
            self.assertEqual(end_offset(c, t, 0), 5)
            # the right next sequence goes on
            self.assertEqual(produce(c, t, 0, batch(pid, epoch, 5, [b"c0"])), (0, 5))
            # a new epoch starting at 0 fences the old one
            self.assertEqual(produce(c, t, 0, batch(pid, epoch + 1, 0, [b"d0"])), (0, 6))
        self.restart_hard()
        with kwire.Conn(self.broker.port) as c:
            err, _ = produce(c, t, 0, batch(pid, epoch, 6, [b"old"]))
            self.assertEqual(err, INVALID_PRODUCER_EPOCH)
            err, _ = produce(c, t, 0, batch(pid, epoch + 1, 5, [b"gap"]))
            self.assertEqual(err, OUT_OF_ORDER_SEQUENCE_NUMBER)
            self.assertEqual(produce(c, t, 0, batch(pid, epoch + 1, 1, [b"d1"])), (0, 7))
            self.assertEqual(end_offset(c, t, 0), 8)

    def test_many_batches_across_segments(self):
        """Small segments: the producer's last batches sit in the newest
        segments, older ones were rolled away from the active one."""
        t = "idem-segs"
        with kwire.Conn(self.broker.port) as c:
            res = kwire.create_topics(c, [(t, 1, 1, {"segment.bytes": "1024"})], 4)
            self.assertEqual(res["topics"][t]["error_code"], 0, res)
            pid, epoch = init_producer_id(c)
            sent = []
            for i in range(40):
                b = batch(pid, epoch, 2 * i, [b"x%03d" % i * 8, b"y%03d" % i * 8])
                self.assertEqual(produce(c, t, 0, b), (0, 2 * i))
                sent.append(b)
        self.restart_hard()
        with kwire.Conn(self.broker.port) as c:
            for i in range(35, 40):  # the last five batches are remembered
                self.assertEqual(produce(c, t, 0, sent[i]), (0, 2 * i))
            self.assertEqual(end_offset(c, t, 0), 80)
            err, _ = produce(c, t, 0, batch(pid, epoch, 81, [b"gap"]))
            self.assertEqual(err, OUT_OF_ORDER_SEQUENCE_NUMBER)
            self.assertEqual(produce(c, t, 0, batch(pid, epoch, 80, [b"z"])), (0, 80))
        self.broker.restart()  # and a clean stop, too
        with kwire.Conn(self.broker.port) as c:
            self.assertEqual(produce(c, t, 0, batch(pid, epoch, 80, [b"z"])), (0, 80))
            self.assertEqual(end_offset(c, t, 0), 81)


class InitProducerIdWithoutTransactions(BrokerTestCase):
    """InitProducerId without a transactional id, as Kafka answers it
    (KafkaApis.handleInitProducerIdRequest, then
    TransactionCoordinator.handleInitProducerId, transactionalId == null:
    "always blindly accept the request and return a new producerId"):
    (-1, -1) or any (id, epoch) pair -> a fresh id with epoch 0; exactly one
    of them -1 -> INVALID_REQUEST. Above all, a client naming another
    producer's id and epoch (KIP-360 fields, v3+) gets an id of its own, so
    it cannot fence that producer."""

    def test_fresh_ids_every_version(self):
        with kwire.Conn(self.broker.port) as c:
            seen = set()
            for v in range(0, 6):
                with self.subTest(version=v):
                    res = kwire.init_producer_id(c, v)
                    self.assertEqual(res["error_code"], 0, res)
                    self.assertEqual(res["producer_epoch"], 0)
                    self.assertGreaterEqual(res["producer_id"], 0)
                    self.assertNotIn(res["producer_id"], seen)
                    seen.add(res["producer_id"])

    def test_named_id_and_epoch_get_a_new_id(self):
        with kwire.Conn(self.broker.port) as c:
            issued = kwire.init_producer_id(c, 4)["producer_id"]
            cases = [(issued, 0), (issued, 5), (issued, 32767), (issued, -2),
                     (987654321, 3), (0, 0), (-7, 1)]
            for v in (3, 4, 5):
                for pid, epoch in cases:
                    with self.subTest(version=v, producer_id=pid, epoch=epoch):
                        res = kwire.init_producer_id(c, v, None, pid, epoch)
                        self.assertEqual(res["error_code"], 0, res)
                        self.assertEqual(res["producer_epoch"], 0, res)
                        self.assertNotEqual(res["producer_id"], pid, res)
                        self.assertNotEqual(res["producer_id"], issued, res)
                        self.assertGreaterEqual(res["producer_id"], 0, res)

    def test_half_given_id_or_epoch_is_invalid_request(self):
        with kwire.Conn(self.broker.port) as c:
            issued = kwire.init_producer_id(c, 4)["producer_id"]
            for v in (3, 4, 5):
                for pid, epoch in ((-1, 0), (-1, 7), (issued, -1), (12345, -1)):
                    with self.subTest(version=v, producer_id=pid, epoch=epoch):
                        res = kwire.init_producer_id(c, v, None, pid, epoch)
                        self.assertEqual(res["error_code"], kwire.INVALID_REQUEST, res)
                        self.assertEqual((res["producer_id"], res["producer_epoch"]), (-1, -1))

    def test_another_client_cannot_fence_a_producer(self):
        t = "idem-nofence"
        with kwire.Conn(self.broker.port) as victim, kwire.Conn(self.broker.port) as other:
            kwire.create_topics(victim, [(t, 1, 1)], 4)
            pid, epoch = init_producer_id(victim)
            self.assertEqual(produce(victim, t, 0, batch(pid, epoch, 0, [b"v0"])), (0, 0))
            # the other client names the victim's id and epoch, and produces
            # with whatever it is given
            res = kwire.init_producer_id(other, 4, None, pid, epoch)
            self.assertEqual(res["error_code"], 0, res)
            mine = (res["producer_id"], res["producer_epoch"])
            self.assertEqual(produce(other, t, 0, batch(mine[0], mine[1], 0, [b"o0"])), (0, 1))
            # the victim goes on with its epoch and sequence (a bumped epoch
            # handed to the other client would make this INVALID_PRODUCER_EPOCH)
            self.assertEqual(produce(victim, t, 0, batch(pid, epoch, 1, [b"v1"])), (0, 2))
            self.assertEqual(end_offset(victim, t, 0), 3)
            self.assertNotEqual(mine[0], pid)


if __name__ == "__main__":
    main()
