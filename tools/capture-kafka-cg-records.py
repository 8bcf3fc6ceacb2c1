#!/usr/bin/env python3
"""Records Apache Kafka 4.4 itself writes for a consumer-protocol group, as a
C fixture for group_cg_store's golden test (src/group/tests/kafka44_cg_records.h).

Runs the reference broker (tools/kafka-ref.sh, through kafka_ref.py) with one
__consumer_offsets partition, and confluent-kafka consumers (.deps/venv,
group.protocol=consumer) in group "golden" on topic "gold" (3 partitions):
a static member with a rack joins, a dynamic one joins, the dynamic one
closes (its tombstones), then the static one closes (epoch -2). Kafka is
stopped, its __consumer_offsets-0 segment read, and every record of the
group's consumer-group types (3-8, 16) printed in log order with the topic
id of "gold".

    .deps/venv/bin/python tools/capture-kafka-cg-records.py > src/group/tests/kafka44_cg_records.h
"""
import glob
import os
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from confluent_kafka import Consumer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import harness  # noqa: E402
from kafka_ref import KafkaRef  # noqa: E402

GROUP, TOPIC = "golden", "gold"


def uvarint(b, i):
    shift = v = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if not c & 0x80:
            return v, i
        shift += 7


def varint(b, i):
    v, i = uvarint(b, i)
    return (v >> 1) ^ -(v & 1), i


def records(path):
    """(key, value or None) of every record of a v2 segment, in order."""
    data = open(path, "rb").read()
    pos = 0
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        batch = data[pos + 12:pos + 12 + length]
        pos += 12 + length
        magic = batch[4]
        attrs = struct.unpack_from(">h", batch, 9)[0]
        if magic != 2 or attrs & 0x07:
            raise SystemExit("batch at %d: magic %d, attributes %#x not handled" % (base, magic, attrs))
        if attrs & 0x20:   # control batch
            continue
        count = struct.unpack_from(">i", batch, 45)[0]
        i = 49
        for _ in range(count):
            n, i = varint(batch, i)
            end = i + n
            i += 1                     # attributes
            _, i = varint(batch, i)    # timestamp delta
            _, i = varint(batch, i)    # offset delta
            kl, i = varint(batch, i)
            key = batch[i:i + kl] if kl >= 0 else None
            i += max(kl, 0)
            vl, i = varint(batch, i)
            val = batch[i:i + vl] if vl >= 0 else None
            i = end
            yield key, val


def poll_until(consumers, cond, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if cond():
            return
    raise SystemExit("timed out waiting for " + what)


def consumer(k, name, **extra):
    conf = {"bootstrap.servers": k.bootstrap, "group.id": GROUP, "group.protocol": "consumer",
            "client.id": name, "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    conf.update(extra)
    c = Consumer(conf)
    c.subscribe([TOPIC])
    return c


def c_bytes(b):
    return "{" + ", ".join("0x%02x" % x for x in b) + "}"


def main():
    k = KafkaRef("4", settings={
        "offsets.topic.num.partitions": "1",
        "group.consumer.min.session.timeout.ms": "6000",
        "group.consumer.session.timeout.ms": "6000",
        "group.consumer.min.heartbeat.interval.ms": "500",
        "group.consumer.heartbeat.interval.ms": "500",
    }, name="capture")
    k.start()
    try:
        adm = AdminClient({"bootstrap.servers": k.bootstrap})
        adm.create_topics([NewTopic(TOPIC, 3, 1)])[TOPIC].result()
        topic_id = adm.describe_topics(
            __import__("confluent_kafka").TopicCollection([TOPIC]))[TOPIC].result().topic_id
        a = consumer(k, "gold-a", **{"group.instance.id": "inst-a", "client.rack": "r1"})
        poll_until([a], lambda: len(a.assignment()) == 3, "a to own 3 partitions")
        b = consumer(k, "gold-b")
        poll_until([a, b], lambda: len(a.assignment()) + len(b.assignment()) == 3
                   and b.assignment(), "a and b to share 3 partitions")
        b.close()
        poll_until([a], lambda: len(a.assignment()) == 3, "a to own 3 partitions again")
        a.close()
        time.sleep(1)
    finally:
        k.stop()
    segs = sorted(glob.glob(os.path.join(k.workdir, "**", "__consumer_offsets-0", "*.log"),
                            recursive=True))
    if not segs:
        raise SystemExit("no __consumer_offsets-0 segment under " + k.workdir)
    out = []
    for seg in segs:
        for key, val in records(seg):
            t = struct.unpack_from(">h", key)[0]
            if (3 <= t <= 8 or t == 16) and key[4:4 + len(GROUP)] == GROUP.encode():
                out.append((key, val))
    print("/* Generated by tools/capture-kafka-cg-records.py from Apache Kafka 4.4.0's")
    print(" * __consumer_offsets-0: group \"%s\" (static member inst-a, rack r1, then a" % GROUP)
    print(" * dynamic one that left; inst-a closed last), topic \"%s\" (3 partitions). */" % TOPIC)
    tid = (topic_id.get_most_significant_bits().to_bytes(8, "big", signed=True) +
           topic_id.get_least_significant_bits().to_bytes(8, "big", signed=True))
    print("static const uint8_t kafka44_topic_id[16] = %s;" % c_bytes(tid))
    print("static const struct kafka44_rec {")
    print("\tconst uint8_t *key, *val; /* val NULL: tombstone */")
    print("\tsize_t klen, vlen;")
    print("} kafka44_recs[] = {")
    for key, val in out:
        kb = "(const uint8_t[])" + c_bytes(key)
        vb = "(const uint8_t[])" + c_bytes(val) if val is not None else "NULL"
        print("\t{%s, %s, %d, %d}," % (kb, vb, len(key), len(val) if val is not None else 0))
    print("};")


if __name__ == "__main__":
    main()
