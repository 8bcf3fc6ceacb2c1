"""py_member.py: one Python group consumer from the project venv
(.deps/venv: confluent-kafka 2.x, kafka-python 2.2, aiokafka), driven line
by line over stdin/stdout like c/group_consumer.c (same options, events and
commands, so test_group_helpers.MemberProcess parses all of them).

    py_member.py --client confluent|kafka-python|aiokafka -b HOST:PORT -g GROUP
                 -t TOPIC[,TOPIC...] [-a ASSIGNOR] [-i INSTANCE] [-s SESSION_MS]
                 [-n NAME] [-R] [-P N] [-q] [-D MS]

-t '^regex' subscribes by pattern. -R commits the consumed positions of
revoked partitions synchronously in the revoke callback; -P N commits every
N messages. Events: READY, ASSIGNED <member> <parts>, REVOKED <parts>,
LOST <parts>, ASSIGNMENT <member> <parts> (after OWNS usec <parts>, the same
assignment stamped), MSG t p o usec,
COMMIT t p o ERROR usec, COMMITTED t p o, ERROR name reason,
FATAL name reason, CLOSED. Commands: close, commit T P O, commitpos,
committed T P..., exit. usec is CLOCK_MONOTONIC, comparable across processes.
"""
import argparse
import asyncio
import os
import queue
import sys
import threading
import time


def now_us():
    return time.monotonic_ns() // 1000


def out(*words):
    if words[0] == "ASSIGNMENT":   # the stamped form first: OWNS usec parts
        sys.stdout.write("OWNS %d %s\n" % (now_us(), words[2]))
    sys.stdout.write(" ".join(str(w) for w in words) + "\n")
    sys.stdout.flush()


def plist(parts):
    return ",".join("%s:%d" % tp for tp in sorted(parts)) or "-"


def stdin_lines():
    """Commands from stdin on a thread; None at EOF."""
    q = queue.Queue()

    def reader():
        for line in sys.stdin:
            q.put(line.strip())
        q.put(None)
    threading.Thread(target=reader, daemon=True).start()
    return q


class Base:
    """What every client does the same way: positions, output, commands."""

    def __init__(self, args):
        self.args = args
        self.assignment = set()
        self.pos = {}          # (t, p) -> next offset to read (consumed + 1)
        self.since_commit = 0
        self.epoch = 0         # bumped by every assignment change
        self.cmds = stdin_lines()
        self.stdin_open = True

    def topics(self):
        return self.args.t.split(",")

    def on_record(self, t, p, o):
        if not self.args.q:
            out("MSG", t, p, o, now_us())
        self.pos[(t, p)] = o + 1
        if self.args.D:
            time.sleep(self.args.D / 1000.0)
        self.since_commit += 1

    def due_commit(self):
        if self.args.P and self.since_commit >= self.args.P:
            self.since_commit = 0
            return True
        return False

    def gained(self, got):
        """Newly assigned: a position is valid only while owned (a stale one
        from an earlier ownership must never be committed)."""
        self.epoch += 1
        self.assignment |= got
        for tp in got:
            self.pos.pop(tp, None)

    def dropped(self, gone):
        self.epoch += 1
        self.assignment -= gone
        for tp in gone:
            self.pos.pop(tp, None)

    def owned_positions(self, parts=None):
        parts = self.assignment if parts is None else parts
        return {tp: self.pos[tp] for tp in parts if tp in self.pos}

    def commit_on_close(self):
        """With -R, commit the owned positions before closing. kafka-python 2.2
        and aiokafka call no rebalance listener when they close (Kafka's Java
        consumer calls onPartitionsRevoked; kafka-python does from 3.0, its PR
        #3020), so a member that left would have its last records read again
        by the next owner; aiokafka's manual-commit example commits before stop()."""
        if self.args.R:
            self.commit(self.owned_positions())

    def print_commit(self, offsets, err):
        us = now_us()
        for (t, p), o in sorted(offsets.items()):
            out("COMMIT", t, p, o, err.get((t, p), "NO_ERROR") if isinstance(err, dict) else err,
                us)

    def next_command(self):
        """One pending command (None if none); 'close' at stdin EOF."""
        if not self.stdin_open:
            return None
        try:
            line = self.cmds.get_nowait()
        except queue.Empty:
            return None
        if line is None:
            self.stdin_open = False
            return "close"
        return line

    def dispatch(self, line):
        """Runs one command; True when the member must close."""
        w = line.split()
        if not w:
            return False
        if w[0] == "close":
            return True
        if w[0] == "exit":
            sys.stdout.flush()
            os._exit(3)
        if w[0] == "commitpos":
            self.commit(self.owned_positions())
        elif w[0] == "commit" and len(w) == 4:
            self.commit({(w[1], int(w[2])): int(w[3])})
        elif w[0] == "committed" and len(w) >= 3:
            for (t, p), o in sorted(self.committed(w[1], [int(x) for x in w[2:]]).items()):
                out("COMMITTED", t, p, o)
        else:
            out("ERROR", "_INVALID_ARG", "unknown command", line)
        return False


class Confluent(Base):
    """confluent-kafka 2.x: on_assign / on_revoke / on_lost callbacks, which
    run inside poll() on this thread."""

    def __init__(self, args):
        super().__init__(args)
        import confluent_kafka as ck
        self.ck = ck
        conf = {"bootstrap.servers": args.b, "group.id": args.g, "client.id": args.n,
                "enable.auto.commit": False, "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 2000,
                "error_cb": self.on_error}
        if args.protocol == "consumer":
            # KIP-848: the broker assigns (-a names its assignor) and sets
            # the session timeout and heartbeat interval
            conf["group.protocol"] = "consumer"
            conf["group.remote.assignor"] = args.a
        else:
            conf.update({"partition.assignment.strategy": args.a,
                         "session.timeout.ms": args.s,
                         "heartbeat.interval.ms": max(100, args.s // 10)})
        if args.i:
            conf["group.instance.id"] = args.i
        kw = {}
        if args.debug_log:
            # librdkafka's partition-state log, for the check that tells its
            # stale offset-query timer from a broker's fault (test_consumer_protocol)
            import logging
            conf["debug"] = "topic"
            log = logging.getLogger("librdkafka-" + args.n)
            log.addHandler(logging.FileHandler(args.debug_log))
            log.setLevel(logging.DEBUG)
            log.propagate = False
            kw["logger"] = log
        self.c = ck.Consumer(conf, **kw)
        self.c.subscribe(self.topics(), on_assign=self.on_assign, on_revoke=self.on_revoke,
                         on_lost=self.on_lost)

    @staticmethod
    def tps(parts):
        return {(tp.topic, tp.partition) for tp in parts}

    def member(self):
        return self.c.memberid() or "-"

    def on_error(self, err):
        if err.fatal():
            out("FATAL", err.name(), err.str())
        else:
            out("ERROR", err.name(), err.str())

    def on_assign(self, c, parts):
        got = self.tps(parts)
        out("ASSIGNED", self.member(), plist(got))
        self.gained(got)
        out("ASSIGNMENT", self.member(), plist(self.assignment))

    def on_revoke(self, c, parts):
        gone = self.tps(parts)
        out("REVOKED", plist(gone))
        if self.args.R:
            self.commit(self.owned_positions(gone))
        self.dropped(gone)
        out("ASSIGNMENT", self.member(), plist(self.assignment))

    def on_lost(self, c, parts):
        gone = self.tps(parts)
        out("LOST", plist(gone))
        self.dropped(gone)
        out("ASSIGNMENT", self.member(), plist(self.assignment))

    def commit(self, offsets):
        if not offsets:
            return
        tps = [self.ck.TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        try:
            res = self.c.commit(offsets=tps, asynchronous=False)
            err = {(tp.topic, tp.partition): tp.error.name() if tp.error else "NO_ERROR"
                   for tp in res}
        except self.ck.KafkaException as e:
            err = e.args[0].name()
        self.print_commit(offsets, err)

    def committed(self, t, ps):
        res = self.c.committed([self.ck.TopicPartition(t, p) for p in ps], timeout=20)
        return {(tp.topic, tp.partition): tp.offset for tp in res}

    def run(self):
        out("READY")
        while True:
            m = self.c.poll(0.05)
            if m is not None:
                if m.error():
                    e = m.error()
                    if e.code() != self.ck.KafkaError._PARTITION_EOF:
                        out("FATAL" if e.fatal() else "ERROR", e.name(), e.str())
                else:
                    self.on_record(m.topic(), m.partition(), m.offset())
                    if self.due_commit():
                        self.commit(self.owned_positions())
            cmd = self.next_command()
            if cmd and self.dispatch(cmd):
                break
        self.c.close()   # revokes (on_revoke commits with -R) and leaves the group
        out("CLOSED")


class KafkaPython(Base):
    """kafka-python 2.2: a ConsumerRebalanceListener, called inside poll()."""

    ASSIGNORS = {"range": "RangePartitionAssignor", "roundrobin": "RoundRobinPartitionAssignor",
                 "sticky": "StickyPartitionAssignor"}

    def __init__(self, args):
        super().__init__(args)
        import kafka
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                    "sticky": StickyPartitionAssignor}[args.a]
        self.kafka = kafka
        self.c = kafka.KafkaConsumer(
            bootstrap_servers=args.b, group_id=args.g, client_id=args.n,
            partition_assignment_strategy=[assignor], session_timeout_ms=args.s,
            heartbeat_interval_ms=max(100, args.s // 10), max_poll_interval_ms=60000,
            enable_auto_commit=False, auto_offset_reset="earliest", request_timeout_ms=30000,
            metadata_max_age_ms=2000)
        me = self

        class Listener(kafka.ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                gone = {(tp.topic, tp.partition) for tp in revoked}
                if not gone:
                    return   # called before every join, also with nothing assigned
                out("REVOKED", plist(gone))
                if me.args.R:
                    me.commit(me.owned_positions(gone))
                me.dropped(gone)
                out("ASSIGNMENT", me.member(), plist(me.assignment))

            def on_partitions_assigned(self, assigned):
                got = {(tp.topic, tp.partition) for tp in assigned}
                out("ASSIGNED", me.member(), plist(got))
                me.gained(got)
                out("ASSIGNMENT", me.member(), plist(me.assignment))
        if args.t.startswith("^"):
            self.c.subscribe(pattern=args.t, listener=Listener())
        else:
            self.c.subscribe(self.topics(), listener=Listener())

    def member(self):
        g = self.c._coordinator._generation
        return getattr(g, "member_id", None) or "-"

    def commit(self, offsets):
        if not offsets:
            return
        from kafka.structs import OffsetAndMetadata, TopicPartition
        try:
            self.c.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                           for (t, p), o in offsets.items()})
            err = "NO_ERROR"
        except self.kafka.errors.KafkaError as e:
            err = type(e).__name__
        self.print_commit(offsets, err)

    def committed(self, t, ps):
        from kafka.structs import TopicPartition
        res = {}
        for p in ps:
            o = self.c.committed(TopicPartition(t, p))
            res[(t, p)] = -1001 if o is None else o
        return res

    def run(self):
        out("READY")
        while True:
            recs = self.c.poll(timeout_ms=50, max_records=10)
            for tp, rs in recs.items():
                for r in rs:
                    self.on_record(r.topic, r.partition, r.offset)
                    if self.due_commit():
                        self.commit(self.owned_positions())
            cmd = self.next_command()
            if cmd and self.dispatch(cmd):
                break
        self.commit_on_close()
        self.c.close()   # commits nothing (auto commit off), calls no listener: LeaveGroup
        out("CLOSED")


class AioKafka(Base):
    """aiokafka: an async ConsumerRebalanceListener; getmany() on one task."""

    def __init__(self, args):
        super().__init__(args)
        self.loop = asyncio.new_event_loop()

    def member(self):
        return getattr(self.c._coordinator, "member_id", None) or "-"

    async def acommit(self, offsets):
        if not offsets:
            return
        import aiokafka
        from aiokafka.errors import KafkaError
        try:
            await self.c.commit({aiokafka.TopicPartition(t, p): o for (t, p), o in offsets.items()})
            err = "NO_ERROR"
        except KafkaError as e:
            err = type(e).__name__
        self.print_commit(offsets, err)

    def commit(self, offsets):
        self.loop.run_until_complete(self.acommit(offsets))

    def committed(self, t, ps):
        import aiokafka

        async def f():
            res = {}
            for p in ps:
                o = await self.c.committed(aiokafka.TopicPartition(t, p))
                res[(t, p)] = -1001 if o is None else o
            return res
        return self.loop.run_until_complete(f())

    async def main(self):
        import aiokafka
        from aiokafka.coordinator.assignors.range import RangePartitionAssignor
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from aiokafka.coordinator.assignors.sticky.sticky_assignor import (
            StickyPartitionAssignor)
        args = self.args
        assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                    "sticky": StickyPartitionAssignor}[args.a]
        self.c = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=args.b, group_id=args.g, client_id=args.n,
            group_instance_id=args.i or None,
            partition_assignment_strategy=(assignor,), session_timeout_ms=args.s,
            heartbeat_interval_ms=max(100, args.s // 10), max_poll_interval_ms=60000,
            enable_auto_commit=False, auto_offset_reset="earliest", request_timeout_ms=30000,
            metadata_max_age_ms=2000)
        me = self

        class Listener(aiokafka.ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                gone = {(tp.topic, tp.partition) for tp in revoked}
                if not gone:
                    return   # called before every join, also with nothing assigned
                out("REVOKED", plist(gone))
                if me.args.R:
                    await me.acommit(me.owned_positions(gone))
                me.dropped(gone)
                out("ASSIGNMENT", me.member(), plist(me.assignment))

            async def on_partitions_assigned(self, assigned):
                got = {(tp.topic, tp.partition) for tp in assigned}
                out("ASSIGNED", me.member(), plist(got))
                me.gained(got)
                out("ASSIGNMENT", me.member(), plist(me.assignment))
        await self.c.start()
        if args.t.startswith("^"):
            self.c.subscribe(pattern=args.t, listener=Listener())
        else:
            self.c.subscribe(self.topics(), listener=Listener())
        out("READY")
        while True:
            recs = await self.c.getmany(timeout_ms=50, max_records=10)
            epoch = self.epoch
            for tp, rs in recs.items():
                for r in rs:
                    # a commit's await lets a rebalance run: the rest of this
                    # batch is then stale (its positions were reset)
                    if self.epoch != epoch:
                        break
                    self.on_record(r.topic, r.partition, r.offset)
                    if self.due_commit():
                        await self.acommit(self.owned_positions())
            cmd = self.next_command()
            if not cmd:
                continue
            w = cmd.split()
            if w and w[0] == "commitpos":
                await self.acommit(self.owned_positions())
            elif w and w[0] == "commit" and len(w) == 4:
                await self.acommit({(w[1], int(w[2])): int(w[3])})
            elif w and w[0] == "committed" and len(w) >= 3:
                for p in w[2:]:
                    o = await self.c.committed(aiokafka.TopicPartition(w[1], int(p)))
                    out("COMMITTED", w[1], p, -1001 if o is None else o)
            elif self.dispatch(cmd):
                break
        if self.args.R:
            await self.acommit(self.owned_positions())   # see Base.commit_on_close
        await self.c.stop()   # commits nothing (auto commit off), calls no listener: LeaveGroup
        out("CLOSED")

    def run(self):
        self.loop.run_until_complete(self.main())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--client", required=True, choices=["confluent", "kafka-python", "aiokafka"])
    ap.add_argument("-b", required=True)
    ap.add_argument("-g", required=True)
    ap.add_argument("-t", required=True)
    ap.add_argument("-a", default="range")
    ap.add_argument("-i", default="")
    ap.add_argument("-s", type=int, default=6000)
    ap.add_argument("-n", default="py-member")
    ap.add_argument("-R", action="store_true")
    ap.add_argument("-P", type=int, default=0)
    ap.add_argument("-q", action="store_true")
    ap.add_argument("-D", type=int, default=0)
    ap.add_argument("--protocol", default="classic", choices=["classic", "consumer"],
                    help="group.protocol (confluent only)")
    ap.add_argument("--debug-log", default="",
                    help="write librdkafka's debug=topic log to this file (confluent only)")
    args = ap.parse_args()
    {"confluent": Confluent, "kafka-python": KafkaPython, "aiokafka": AioKafka}[args.client](
        args).run()


if __name__ == "__main__":
    main()
