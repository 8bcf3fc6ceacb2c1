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


if __name__ == "__main__":
    main()
