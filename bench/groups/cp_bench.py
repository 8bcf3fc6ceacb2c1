"""cp_bench.py: consumer groups of confluent-kafka consumers (librdkafka) on one
broker, with the consumer rebalance protocol (KIP-848, group.protocol=consumer,
the broker's assignor) and, for contrast, the classic one (group.protocol=classic,
cooperative-sticky and range). Run by bench/groups/run-cp.sh against cohortd and
Apache Kafka 4.4 in one run (it prints the side-by-side table).

  cp_bench.py BOOTSTRAP TARGET [-p PROTOCOLS] [-c CHANGE_N] N [N ...]
      PROTOCOLS: comma-separated, of consumer, cooperative-sticky, range
      (default all three); CHANGE_N: the group size of the +1/-1 rows
      (default 100; 0: none)
  ROW lines on stdout: ROW<TAB>target<TAB>row<TAB>value

Per protocol:
- N join at once: N consumers subscribe to a new group on a new topic of N
  partitions at the same moment; the time from the first subscribe until
  every partition is owned by exactly one consumer and every consumer owns
  one.
- +1 / -1: a group of CHANGE_N members on 2 x CHANGE_N partitions, stable;
  one more consumer subscribes (+1), then one of the first members closes
  (-1). Each: the time until the group is stable again (every partition owned
  exactly once and each member's share balanced: floor or ceil of
  partitions/members, which is what the uniform, range and cooperative-sticky
  assignors give one topic), the longest time a partition had no owner, and
  the longest time one of the members that were there before owned nothing
  (what an old member's consumption paused), from the consumers' own
  assignment() as they change.

The consumers live in worker processes of at most PER_WORKER each (1,000
librdkafka instances in one process are ~5,000 threads and a GIL-bound poll
loop); each worker polls its consumers and reports every assignment change
with its CLOCK_MONOTONIC time, which the parent compares across workers.
"""
import multiprocessing as mp
import os
import queue
import sys
import threading
import time

TIMEOUT_S = float(os.environ.get("CP_TIMEOUT_S", "180"))
PER_WORKER = int(os.environ.get("CP_PER_WORKER", "100"))
PROTOCOLS = ("consumer", "cooperative-sticky", "range")


def conf_of(bs, group, protocol):
    conf = {"bootstrap.servers": bs, "group.id": group, "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        # the classic protocol: the client-side assignor; the heartbeat as the
        # consumer-protocol members get it from the broker (500 ms)
        conf.update({"group.protocol": "classic", "partition.assignment.strategy": protocol,
                     "heartbeat.interval.ms": 500, "session.timeout.ms": 45000})
    return conf


# ---- worker process: owns some consumers, polls them, reports assignment changes


def worker(wid, cmds, events):
    from confluent_kafka import Consumer

    cs = {}  # global index -> Consumer
    stop = {}  # global index -> Event: close the consumer
    threads = []

    # One thread per subscribed consumer, blocked in poll() (the GIL
    # released; its rebalance callbacks run inside it as they come, it
    # returns after 1 s): a sweep of poll(0) over 100 consumers every few ms
    # took a core at 1,000 consumers, and poll(0.1) 1,000 wakeups a second
    # put the load average near 100. The thread starts after
    # subscribe() (which blocks while another thread polls the same
    # consumer) and closes the consumer itself. What a consumer owns is
    # followed in its rebalance callbacks, as they run (the default assign
    # or unassign follows each at once): one poll() may serve a revoke and
    # the next assign, and assignment() is a round trip to the client's
    # own thread.
    def callbacks(i, incremental):
        own = [frozenset()]

        def change(a):
            if a != own[0]:
                own[0] = a
                events.put(("asg", i, time.monotonic(), a))

        # what is assigned is paused: nothing to fetch (the topic is empty),
        # and 1,000 consumers long-polling Fetch twice a second each were
        # as many requests as their heartbeats
        def on_assign(c, parts):
            got = frozenset(tp.partition for tp in parts)
            if incremental:
                c.incremental_assign(parts)
            else:
                c.assign(parts)
            if parts:
                c.pause(parts)
            change(own[0] | got if incremental else got)

        def on_revoke(c, parts):
            change(own[0] - frozenset(tp.partition for tp in parts) if incremental
                   else frozenset())

        return on_assign, on_revoke

    def run(i, c, stop_ev):
        while not stop_ev.is_set():
            c.poll(1.0)
        events.put(("closing", i, time.monotonic()))
        c.close()
        events.put(("closed", i, time.monotonic()))

    while True:
        cmd = cmds.recv()
        op = cmd[0]
        if op == "create":  # (op, conf, [indexes])
            # incremental: the consumer protocol and cooperative-sticky
            # (callbacks name what changes); range is eager (all, each time)
            incremental = cmd[1].get("partition.assignment.strategy") != "range"
            for i in cmd[2]:
                cs[i] = Consumer(cmd[1])
            events.put(("created", wid))
        elif op == "subscribe":  # (op, topic, [indexes])
            for i in cmd[2]:
                on_assign, on_revoke = callbacks(i, incremental)
                cs[i].subscribe([cmd[1]], on_assign=on_assign, on_revoke=on_revoke,
                                on_lost=on_revoke)
                stop[i] = threading.Event()
                t = threading.Thread(target=run, args=(i, cs[i], stop[i]), daemon=True)
                t.start()
                threads.append(t)
        elif op == "close":  # (op, [indexes]): "closing" and "closed" events follow
            for i in cmd[1]:
                stop[i].set()
        elif op == "exit":
            for e in stop.values():
                e.set()
            for t in threads:
                t.join()
            for i, c in cs.items():
                if i not in stop:  # never subscribed
                    c.close()
            events.put(("exited", wid))
            return


class Group:
    """Consumers of one group over worker processes; the parent's view of who owns what."""

    def __init__(self, bs, group, protocol, n):
        self.ctx = mp.get_context("spawn")
        self.events = self.ctx.Queue()
        self.n = n
        nw = max(1, (n + PER_WORKER - 1) // PER_WORKER)
        self.workers = []  # (process, pipe)
        self.where = {}  # index -> worker
        conf = conf_of(bs, group, protocol)
        for w in range(nw):
            a, b = self.ctx.Pipe()
            p = self.ctx.Process(target=worker, args=(w, b, self.events), daemon=True)
            p.start()
            self.workers.append((p, a))
        idx = {w: [] for w in range(nw)}
        for i in range(n):
            idx[i % nw].append(i)
            self.where[i] = i % nw
        for w, (_, pipe) in enumerate(self.workers):
            pipe.send(("create", conf, idx[w]))
        self.wait_for("created", nw)
        self.owned = {}  # live, subscribed index -> frozenset
        self.log = []  # (t, index, frozenset)

    def wait_for(self, what, count):
        seen = 0
        deadline = time.monotonic() + TIMEOUT_S
        while seen < count:
            ev = self.events.get(timeout=max(1, deadline - time.monotonic()))
            if ev[0] == what:
                seen += 1
            elif ev[0] == "asg":
                self.on_asg(ev)

    def on_asg(self, ev):
        _, i, t, a = ev
        if i in self.owned:
            self.owned[i] = a
            self.log.append((t, i, a))

    def _send(self, op, arg, indexes):
        per = {}
        for i in indexes:
            per.setdefault(self.where[i], []).append(i)
        for w, lst in per.items():
            self.workers[w][1].send((op, arg, lst) if arg is not None else (op, lst))

    def subscribe(self, topic, indexes):
        """Subscribes members; None (the caller takes the time)."""
        for i in indexes:
            self.owned[i] = frozenset()
        self._send("subscribe", topic, indexes)

    def close(self, i):
        """Closes member i; the time its close() began."""
        self.owned.pop(i, None)
        self._send("close", None, [i])
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            ev = self.events.get(timeout=max(1, deadline - time.monotonic()))
            if ev[0] == "closing" and ev[1] == i:
                return ev[2]
            if ev[0] == "asg":
                self.on_asg(ev)

    def drain(self):
        """Takes every event already queued."""
        while True:
            try:
                ev = self.events.get_nowait()
            except queue.Empty:
                return
            if ev[0] == "asg":
                self.on_asg(ev)

    def stable(self, parts):
        if not self.owned:
            return False
        lo, hi = parts // len(self.owned), (parts + len(self.owned) - 1) // len(self.owned)
        seen = 0
        got = set()
        for a in self.owned.values():
            if not lo <= len(a) <= hi:
                return False
            seen += len(a)
            got |= a
        return seen == parts and len(got) == parts

    def until_stable(self, parts, t0):
        """The first event time from t0 on at which the group is stable; -1 on timeout."""
        if self.stable(parts):
            return t0
        while time.monotonic() - t0 < TIMEOUT_S:
            try:
                ev = self.events.get(timeout=0.5)
            except queue.Empty:
                continue
            if ev[0] != "asg":
                continue
            self.on_asg(ev)
            self.drain()  # every change already queued before judging
            if self.stable(parts):
                return max(t for t, _, _ in self.log)
        return -1

    def shutdown(self):
        for _, pipe in self.workers:
            pipe.send(("exit",))
        try:
            self.wait_for("exited", len(self.workers))
        except queue.Empty:
            pass
        for p, _ in self.workers:
            p.join(10)
            if p.is_alive():
                p.kill()


def gaps(log, before, t0, t1, parts, old):
    """From the assignment log between t0 and t1 (the state before t0 in
    `before`: index -> set): the longest time a partition had no owner, and
    the longest time a member of `old` owned nothing, in ms."""
    owner_count = [0] * parts
    for a in before.values():
        for p in a:
            owner_count[p] += 1
    state = dict(before)
    free_since = [None if owner_count[p] else t0 for p in range(parts)]
    idle_since = {i: (None if state.get(i) else t0) for i in old}
    gap_p = gap_m = 0.0
    for t, i, a in sorted(e for e in log if t0 <= e[0] <= t1):
        prev = state.get(i, frozenset())
        for p in prev - a:
            owner_count[p] -= 1
            if owner_count[p] == 0:
                free_since[p] = t
        for p in a - prev:
            if owner_count[p] == 0 and free_since[p] is not None:
                gap_p = max(gap_p, t - free_since[p])
                free_since[p] = None
            owner_count[p] += 1
        state[i] = a
        if i in idle_since:
            if not a and idle_since[i] is None:
                idle_since[i] = t
            elif a and idle_since[i] is not None:
                gap_m = max(gap_m, t - idle_since[i])
                idle_since[i] = None
    for p in range(parts):  # still free at t1 (cannot be when stable)
        if free_since[p] is not None:
            gap_p = max(gap_p, t1 - free_since[p])
    return gap_p * 1000, gap_m * 1000


def create_topic(bs, name, parts):
    from confluent_kafka.admin import AdminClient, NewTopic

    from confluent_kafka import KafkaException

    a = AdminClient({"bootstrap.servers": bs})
    # a broker still busy with the last 1,000 members may time out the
    # first attempt (seen on Kafka); the topic may then exist already
    for attempt in range(3):
        try:
            a.create_topics([NewTopic(name, parts, 1)], request_timeout=60)[name].result(90)
            break
        except KafkaException as e:
            if "TOPIC_ALREADY_EXISTS" in str(e) or "already exists" in str(e):
                break
            if attempt == 2:
                raise
        except TimeoutError:
            if attempt == 2:
                raise
        time.sleep(5)
    # wait until the metadata shows every partition (Kafka creates them a moment later)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        md = a.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t and not t.error and len(t.partitions) == parts:
            return
        time.sleep(0.1)
    raise RuntimeError("topic %s did not appear" % name)


def label(protocol):
    return "consumer protocol" if protocol == "consumer" else "classic " + protocol


def row(target, name, v):
    print("ROW\t%s\t%s\t%.0f" % (target, name, v), flush=True)


def join_at_once(bs, target, protocol, n, seq):
    topic = group = "cp-%d-%s-%d-%d" % (os.getpid(), protocol, n, seq)
    create_topic(bs, topic, n)
    g = Group(bs, group, protocol, n)
    t0 = time.monotonic()
    g.subscribe(topic, range(n))
    t1 = g.until_stable(n, t0)
    g.shutdown()
    row(target, "%s: %d members join at once, time to every partition owned (ms)" % (label(protocol), n),
        (t1 - t0) * 1000 if t1 >= 0 else -1)


def one_joins_one_leaves(bs, target, protocol, n, seq):
    parts = 2 * n
    topic = group = "cp-%d-chg-%s-%d-%d" % (os.getpid(), protocol, n, seq)
    create_topic(bs, topic, parts)
    g = Group(bs, group, protocol, n + 1)
    g.subscribe(topic, range(n))
    if g.until_stable(parts, time.monotonic()) < 0:
        g.shutdown()
        for what in ("+1 joins", "-1 leaves"):
            row(target, "%s: %s a group of %d, time to stable (ms)" % (label(protocol), what, n), -1)
        return
    time.sleep(2)  # a few heartbeats in the stable group
    # +1: from the subscribe; -1: from the moment the member's close() began
    for what, act, size in (("+1 joins", lambda: g.subscribe(topic, [n]), n),
                            ("-1 leaves", lambda: g.close(0), n + 1)):
        g.drain()  # what came in meanwhile (nothing should: the group is stable)
        before = dict(g.owned)
        old = [i for i in before if i != 0 or what == "+1 joins"]
        g.log = []
        t0 = time.monotonic()
        t0 = act() or t0
        t1 = g.until_stable(parts, t0)
        name = "%s: %s a group of %d (%d partitions)" % (label(protocol), what, size, parts)
        if t1 < 0:
            row(target, name + ", time to stable (ms)", -1)
            continue
        gp, gm = gaps(g.log, {i: before.get(i, frozenset()) for i in g.owned},
                      t0, t1, parts, [i for i in old if i in g.owned])
        moved = sum(len(before.get(i, frozenset()) - a) for i, a in g.owned.items())
        moved += len(before.get(0, frozenset())) if what == "-1 leaves" else 0
        row(target, name + ", time to stable (ms)", (t1 - t0) * 1000)
        row(target, name + ", longest time a partition had no owner (ms)", gp)
        row(target, name + ", longest time an old member owned nothing (ms)", gm)
        row(target, name + ", partitions that moved", moved)
        time.sleep(1)
    g.shutdown()


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    bs, target = args[0], args[1]
    args = args[2:]
    protocols, change = list(PROTOCOLS), 100
    while args and args[0].startswith("-"):
        if args[0] == "-p":
            protocols = args[1].split(",")
        elif args[0] == "-c":
            change = int(args[1])
        else:
            sys.exit(__doc__)
        args = args[2:]
    sizes = [int(x) for x in args]
    seq = 0
    # a scenario that fails (the broker does not answer) is reported and the
    # next one runs
    for protocol in protocols:
        for n in sizes:
            try:
                join_at_once(bs, target, protocol, n, seq)
            except Exception as e:  # noqa: BLE001
                print("cp_bench: %s %s join %d: %r" % (target, protocol, n, e), file=sys.stderr)
                row(target, "%s: %d members join at once, time to every partition owned (ms)"
                    % (label(protocol), n), -1)
            seq += 1
        if change:
            try:
                one_joins_one_leaves(bs, target, protocol, change, seq)
            except Exception as e:  # noqa: BLE001
                print("cp_bench: %s %s +1/-1: %r" % (target, protocol, e), file=sys.stderr)
            seq += 1


if __name__ == "__main__":
    main()
