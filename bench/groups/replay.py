#!/usr/bin/env python3
"""replay.py: fills a broker's __consumer_offsets with offset commits, then,
after a restart, times until every group's OffsetFetch answers again.

  replay.py fill PORT RECORDS GROUPS PARTITIONS [CONNECTIONS]
  replay.py wait PORT RECORDS GROUPS PARTITIONS [TIMEOUT_S]

fill: simple commits (generation -1, no member: what a consumer without a
group membership or an admin sends) of GROUPS groups x PARTITIONS partitions
of topic "replay" (which must exist with that many partitions), one
OffsetCommit v7 per group and round carrying every partition, so one request
writes PARTITIONS records; rounds until RECORDS records are written, round r
committing offset r. CONNECTIONS connections (default 16), each with up to
32 requests in flight (Kafka reads one at a time per connection, cohortd
pipelines). Any error in an answer stops it. Prints "FILLED records seconds".

wait: connects (retrying while nothing listens) and sends each group an
OffsetFetch v5 for partition 0 until it answers with no error (it answers
COORDINATOR_LOAD_IN_PROGRESS while its __consumer_offsets partition loads)
and the last round's offset: the replay must have read every round. Prints
"READY ms" with the time from the script's start; the caller starts it right
after it restarts the broker.
"""
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../tests/integration"))
import kwire  # noqa: E402

TOPIC = b"replay"
WINDOW = 32
E_LOAD_IN_PROGRESS, E_NOT_AVAILABLE, E_NOT_COORDINATOR = 14, 15, 16


def s16(b):
    return struct.pack(">h", len(b)) + b


def group_name(g):
    return b"replay-%05d" % g


def commit_request(corr, group, parts):
    body = (s16(group) + struct.pack(">i", -1) + s16(b"") + struct.pack(">h", -1) +
            struct.pack(">i", 1) + s16(TOPIC) + parts)
    return kwire.request(kwire.API_OFFSET_COMMIT, 7, corr, body, "replay-fill")


def round_parts(partitions, offset):
    # partition, offset, committed leader epoch -1, metadata ""
    one = struct.Struct(">iqih")
    return struct.pack(">i", partitions) + b"".join(
        one.pack(p, offset, -1, 0) for p in range(partitions))


def check_commit(data, partitions):
    r = kwire.Reader(data)
    r.int32()  # correlation id
    r.int32()  # throttle
    n = 0
    for _ in range(r.array_len()):
        r.string()
        for _ in range(r.array_len()):
            p, err = r.int32(), r.int16()
            if err:
                raise SystemExit("replay fill: partition %d answered error %d" % (p, err))
            n += 1
    if n != partitions:
        raise SystemExit("replay fill: %d partitions answered, %d sent" % (n, partitions))


def coordinator_ready(port, groups):
    """Until FindCoordinator answers for every group (Kafka creates
    __consumer_offsets on the first one, then elects its leaders) and each
    group's partition has loaded (an OffsetFetch without error)."""
    names = [group_name(g).decode() for g in range(groups)]
    with kwire.Conn(port) as conn:
        for _ in range(600):
            errs = [c["error_code"] for c in kwire.find_coordinator(conn, 4, names)]
            if not any(errs):
                break
            time.sleep(0.1)
        else:
            raise SystemExit("replay fill: FindCoordinator still answers %r" % set(errs))
    served(port, groups, None, 60)


def fill(port, records, groups, partitions, conns):
    coordinator_ready(port, groups)
    rounds = -(-records // (groups * partitions))
    parts = [round_parts(partitions, r) for r in range(rounds)]
    failed = []

    def worker(c):
        try:
            mine = [g for g in range(groups) if g % conns == c]
            todo = [(r, g) for r in range(rounds) for g in mine]
            with kwire.Conn(port, timeout=120) as conn:
                sent = done = 0
                while done < len(todo):
                    batch = []
                    while sent < len(todo) and sent - done < WINDOW:
                        r, g = todo[sent]
                        batch.append(commit_request(conn.next_corr(), group_name(g), parts[r]))
                        sent += 1
                    if batch:
                        conn.send(b"".join(batch))
                    check_commit(conn.recv_frame(), partitions)
                    done += 1
        except BaseException as e:  # noqa: B902 (reported by the main thread)
            failed.append(e)

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(c,)) for c in range(conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise SystemExit("replay fill: %s" % failed[0])
    print("FILLED %d %.2f" % (rounds * groups * partitions, time.monotonic() - t0))


def fetch_request(corr, group):
    body = s16(group) + struct.pack(">i", 1) + s16(TOPIC) + struct.pack(">ii", 1, 0)
    return kwire.request(kwire.API_OFFSET_FETCH, 5, corr, body, "replay-wait")


def fetch_answer(data):
    """(offset, error) of the one partition, or (-1, the top-level error)."""
    r = kwire.Reader(data)
    r.int32()  # correlation id
    r.int32()  # throttle
    off, perr = -1, 0
    for _ in range(r.array_len()):
        r.string()
        for _ in range(r.array_len()):
            r.int32()
            off = r.int64()
            r.int32()  # leader epoch
            r.string(nullable=True)
            perr = r.int16()
    top = r.int16()
    return off, top or perr


def served(port, groups, last, timeout):
    """Until every group's OffsetFetch answers without a loading error, with
    offset `last` (None: any)."""
    t0 = time.monotonic()
    pending = list(range(groups))
    conn = None
    while pending:
        if time.monotonic() - t0 > timeout:
            raise SystemExit("replay wait: %d groups not served after %d s" %
                             (len(pending), timeout))
        if conn is None:
            try:
                conn = kwire.Conn(port, timeout=60)
            except OSError:
                time.sleep(0.005)
                continue
        try:
            conn.send(b"".join(fetch_request(conn.next_corr(), group_name(g)) for g in pending))
            still = []
            for g in pending:
                off, err = fetch_answer(conn.recv_frame())
                if err in (E_LOAD_IN_PROGRESS, E_NOT_AVAILABLE, E_NOT_COORDINATOR):
                    still.append(g)
                elif err:
                    raise SystemExit("replay wait: group %d answered error %d" % (g, err))
                elif last is not None and off != last:
                    raise SystemExit("replay wait: group %d has offset %d, expected %d" %
                                     (g, off, last))
        except (OSError, ConnectionError):
            conn.close()
            conn = None
            time.sleep(0.005)
            continue
        if still:
            time.sleep(0.002)
        pending = still
    conn.close()


def wait(port, records, groups, partitions, timeout):
    t0 = time.monotonic()
    served(port, groups, -(-records // (groups * partitions)) - 1, timeout)
    print("READY %d" % ((time.monotonic() - t0) * 1000))


def main():
    if len(sys.argv) < 6 or sys.argv[1] not in ("fill", "wait"):
        sys.exit(__doc__)
    port, records, groups, partitions = (int(a) for a in sys.argv[2:6])
    if sys.argv[1] == "fill":
        fill(port, records, groups, partitions, int(sys.argv[6]) if len(sys.argv) > 6 else 16)
    else:
        wait(port, records, groups, partitions, int(sys.argv[6]) if len(sys.argv) > 6 else 600)


if __name__ == "__main__":
    socket.setdefaulttimeout(120)
    main()
