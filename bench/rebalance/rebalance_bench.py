"""rebalance_bench.py: the cost of a rebalance as the application sees it,
libcohort beside librdkafka 2.0.2 (Debian) and the Java client (kafka-clients
4.4), on one cohortd, in one run. bench/rebalance/run.sh builds what it needs
and runs this; it prints one table.

Members are the test suite's line-protocol programs (tests/integration:
c/cohort_member.c on libcohort, c/group_consumer.c on librdkafka,
java/cohortit/ConsumerDriver.java on kafka-clients), each stamping every
change of what it owns with CLOCK_MONOTONIC (the "OWNS usec parts" lines,
the Java driver's "owns" events), so one clock orders them all. Every kind
gets the same settings: session.timeout.ms 6000, heartbeat.interval.ms 500,
the assignor of the row (range: eager; cooperative-sticky: KIP-429), commits
in the revoke callback, a topic of 12 partitions and GROUP members.

Scenarios (the clock starts at the action; for a join when every new member
said it subscribed, so process and JVM start-up are not counted):
  join      GROUP members subscribe at once to a new group
  scale-out one member joins a stable group of GROUP
  leave     one member of GROUP+1 closes (LeaveGroup)
  crash     one member of GROUP+1 is SIGKILLed (found after the session)
  static    static members (group.instance.id); one is SIGKILLed and a new
            process with its instance id starts at once
Figures, over REPEAT runs of each row (3 by default): "stable" is the median
time until the members' assignments last became an exact cover of the
partitions (each member owning one at least); "pause" is, over the members
that were there before the action, the mean time one of them owned nothing
and the longest seen in any run; "rebalances" (static) is the mean count of
assign/revoke callbacks the other members saw. A pause depends on when each
member's heartbeat happens to learn of the rebalance (500 ms apart at most),
so single runs vary by that much.
"""
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "integration"))

import harness  # noqa: E402
from client_scenarios import member_flags  # noqa: E402
from test_group_helpers import MemberProcess, RdkConsumer, create_topics, parse_parts  # noqa: E402

SESSION_MS = 6000
HEARTBEAT_MS = 500
NPARTS = 12
GROUP = int(os.environ.get("REBALANCE_GROUP", "5"))
TOPIC = "rb"
TIMEOUT = 120
REPEAT = int(os.environ.get("REBALANCE_REPEAT", "3"))


class Member:
    """One member of any kind, with its ownership timeline [(monotonic s, parts)]."""

    def __init__(self, kind, bootstrap, group, name, assignor, instance=None):
        self.kind, self.name = kind, name
        if kind == "libcohort":
            argv = [os.environ["COHORT_MEMBER"], "-X", "heartbeat.interval.ms=%d" % HEARTBEAT_MS,
                    "-q"] + member_flags(bootstrap, group, [TOPIC], name, assignor, instance,
                                         SESSION_MS, True, 0, 0)
            self.p = MemberProcess(argv, name)
        elif kind == "librdkafka":
            self.p = RdkConsumer(bootstrap, group, [TOPIC], assignor, instance, SESSION_MS, name,
                                 commit_on_revoke=True, quiet=True,
                                 extra={"heartbeat.interval.ms": HEARTBEAT_MS})
        else:
            from java_clients import JavaConsumer
            self.p = JavaConsumer(bootstrap, group, [TOPIC], assignor, instance, SESSION_MS,
                                  True, name, {"heartbeat.interval.ms": HEARTBEAT_MS})

    def ready(self):
        if self.kind == "java":
            return bool(self.p.of("ready"))
        return "READY" in self.p.lines

    def owns(self):
        if self.kind == "java":
            return [(e["us"] / 1e6, frozenset(tuple_tp(s) for s in e["assignment"]))
                    for e in self.p.of("owns")]
        out = []
        with self.p.cv:
            lines = list(self.p.lines)
        for line in lines:
            if line.startswith("OWNS "):
                _, us, parts = line.split(" ", 2)
                out.append((int(us) / 1e6, frozenset(parse_parts(parts))))
        return out

    def callbacks_since(self, t):
        """Assign/revoke/lost callbacks after monotonic time t (from the OWNS stamps)."""
        return sum(1 for (ts, _) in self.owns() if ts > t)

    def close(self):
        self.p.send("close")   # every driver's command for a clean close

    def kill(self):
        self.p.proc.send_signal(signal.SIGKILL)

    def cleanup(self):
        try:
            if self.p.proc.poll() is None:
                self.p.proc.kill()
                self.p.proc.wait(10)
        except Exception:
            pass


def tuple_tp(s):
    t, p = s.rsplit(":", 1)
    return (t, int(p))


ALL = frozenset((TOPIC, p) for p in range(NPARTS))


def stable_at(members, since):
    """The monotonic time after `since` at which the members' assignments last
    became an exact cover of ALL with every member owning one; None if they
    are not one now."""
    events = sorted((ts, i, parts) for i, m in enumerate(members) for (ts, parts) in m.owns())
    cur = [frozenset()] * len(members)
    became, ok = None, False
    for ts, i, parts in events:
        cur[i] = parts
        now_ok = (all(cur) and sum(len(c) for c in cur) == NPARTS
                  and frozenset().union(*cur) == ALL)
        if now_ok and not ok:
            became = ts
        ok = now_ok
    if not ok:
        return None
    return max(became, since)


def wait_stable(members, since, quiet_s=1.5):
    """Wait until the members form a stable cover that has not changed for
    quiet_s (a cooperative second round may follow the first cover)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        t = stable_at(members, since)
        if t is not None and time.monotonic() - t > quiet_s and \
                max(ts for m in members for (ts, _) in m.owns()) < time.monotonic() - quiet_s:
            return t
        time.sleep(0.05)
    raise AssertionError("no stable group within %d s: %s"
                         % (TIMEOUT, [(m.name, m.owns()[-1:]) for m in members]))


def pauses(members, since, until):
    """Per member, the time it owned nothing between since and until."""
    out = []
    for m in members:
        empty, owned_now, t_prev = 0.0, None, since
        for ts, parts in m.owns():
            if ts <= since:
                owned_now = parts
                continue
            if ts > until:
                break
            if owned_now is not None and not owned_now:
                empty += ts - t_prev
            owned_now, t_prev = parts, ts
        if owned_now is not None and not owned_now:
            empty += until - t_prev
        out.append(empty)
    return out


def wait_ready(members):
    deadline = time.monotonic() + TIMEOUT
    while not all(m.ready() for m in members):
        if time.monotonic() > deadline:
            raise AssertionError("members not ready")
        time.sleep(0.01)
    return time.monotonic()


def run_scenario(broker, kind, assignor, scenario, seq):
    group = "rb-%s-%s-%s-%d" % (kind, assignor, scenario, seq)
    members = []
    static = scenario == "static"

    def spawn(i):
        m = Member(kind, broker.bootstrap, group, "%s-%d" % (group, i), assignor,
                   "inst-%d" % i if static else None)
        members.append(m)
        return m

    try:
        if scenario == "join":
            ms = [spawn(i) for i in range(GROUP)]
            t0 = wait_ready(ms)
            t = wait_stable(ms, t0)
            return t - t0, None, None
        base = GROUP + (0 if scenario == "scale-out" else 1)
        ms = [spawn(i) for i in range(base)]
        wait_ready(ms)
        wait_stable(ms, 0)
        if scenario == "scale-out":
            new = spawn(base)
            t0 = wait_ready([new])
            group_now, old = ms + [new], ms
        elif scenario in ("leave", "crash"):
            gone = ms[-1]
            t0 = time.monotonic()
            gone.close() if scenario == "leave" else gone.kill()
            group_now = old = ms[:-1]
        else:  # static
            gone = ms[-1]
            t0 = time.monotonic()
            gone.kill()
            new = spawn(base - 1)
            group_now, old = ms[:-1] + [new], ms[:-1]
        t = wait_stable(group_now, t0)
        p = pauses(old, t0, t)
        rebal = sum(m.callbacks_since(t0) for m in old) if static else None
        return t - t0, p, rebal
    finally:
        for m in members:
            m.cleanup()


def main():
    kinds = os.environ.get("REBALANCE_KINDS", "libcohort librdkafka java").split()
    scenarios = os.environ.get("REBALANCE_SCENARIOS", "join scale-out leave crash static").split()
    broker = harness.start_clean(harness.Broker(settings={
        "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "500",
        "offsets.topic.num.partitions": "5", "num.partitions": str(NPARTS)}, name="bench"))
    try:
        create_topics(broker.port, {TOPIC: NPARTS})
        print("group of %d (+1), %d partitions, session %d ms, heartbeat %d ms; cohortd at %s"
              % (GROUP, NPARTS, SESSION_MS, HEARTBEAT_MS, broker.bootstrap))
        print("%d runs per row" % REPEAT)
        print("%-10s %-19s %-10s %9s %22s %11s" % ("scenario", "assignor", "client", "stable",
                                                   "pause mean / max", "rebalances"))
        seq = 0
        for scenario in scenarios:
            for assignor in ("range", "cooperative-sticky"):
                for kind in kinds:
                    runs, failed = [], None
                    for _ in range(REPEAT):
                        seq += 1
                        try:
                            runs.append(run_scenario(broker, kind, assignor, scenario, seq))
                        except AssertionError as e:
                            failed = e
                    if not runs:
                        print("%-10s %-19s %-10s failed: %s" % (scenario, assignor, kind, failed))
                        continue
                    stable = sorted(r[0] for r in runs)
                    pm = [sum(r[1]) / len(r[1]) for r in runs if r[1]]
                    px = [max(r[1]) for r in runs if r[1]]
                    ps = "%7.0f / %5.0f ms" % (1e3 * sum(pm) / len(pm), 1e3 * max(px)) if pm else "-"
                    rebal = [r[2] for r in runs if r[2] is not None]
                    print("%-10s %-19s %-10s %7.0f ms %22s %11s%s" % (
                        scenario, assignor, kind, 1e3 * stable[len(stable) // 2], ps,
                        "%.1f" % (sum(rebal) / len(rebal)) if rebal else "-",
                        "" if not failed else "  (%d of %d failed)" % (REPEAT - len(runs), REPEAT)),
                        flush=True)
    finally:
        harness.stop_clean(broker)


if __name__ == "__main__":
    main()
