"""cp_bench.py: the consumer rebalance protocol (KIP-848) joining at once,
on one broker: N confluent-kafka consumers (librdkafka, group.protocol=consumer)
subscribe to a new group on a topic of N partitions at the same moment; the
figure is the wall time from the first subscribe to the moment every
partition is owned by exactly one consumer and every consumer owns one.
Run by bench/groups/run-cp.sh against cohortd and Apache Kafka 4.4 in one
run (it prints the side-by-side table).

  cp_bench.py BOOTSTRAP TARGET N [N ...]      ROW lines: ROW<TAB>target<TAB>row<TAB>ms
"""
import sys
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT_S = 120


def create_topic(bs, name, parts):
    a = AdminClient({"bootstrap.servers": bs})
    a.create_topics([NewTopic(name, parts, 1)])[name].result(30)
    # wait until the metadata shows every partition (Kafka creates them a moment later)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = a.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t and not t.error and len(t.partitions) == parts:
            return
        time.sleep(0.1)
    raise RuntimeError("topic %s did not appear" % name)


def join_at_once(bs, n, seq):
    topic, group = "cp-%d-%d" % (n, seq), "cp-group-%d-%d" % (n, seq)
    create_topic(bs, topic, n)
    conf = {"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
            "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000}
    cs = [Consumer(conf) for _ in range(n)]
    t0 = time.monotonic()
    for c in cs:
        c.subscribe([topic])
    ms = -1.0
    while time.monotonic() - t0 < TIMEOUT_S:
        for c in cs:
            c.poll(0)
        seen = set()
        ok = True
        for c in cs:
            a = c.assignment()
            if not a:
                ok = False
                break
            for tp in a:
                if tp.partition in seen:
                    ok = False
                seen.add(tp.partition)
        if ok and len(seen) == n:
            ms = (time.monotonic() - t0) * 1000
            break
        time.sleep(0.001)
    for c in cs:
        c.close()
    return ms


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    bs, target = sys.argv[1], sys.argv[2]
    for seq, n in enumerate(int(x) for x in sys.argv[3:]):
        ms = join_at_once(bs, n, seq)
        print("ROW\t%s\t%d consumer-protocol members join at once: time to every partition owned (ms)\t%.0f"
              % (target, n, ms), flush=True)


if __name__ == "__main__":
    main()
