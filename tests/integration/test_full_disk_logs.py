"""A full disk must not flood the log: one line per refused append was
1,500 ERROR lines for 1,500 refused commits. Each failing log writes its
first failure in full, then at most one summary per 10 s, then one line when
appends work again, with the exact count of what was refused.

cohortd's data directory lives on a small tmpfs (the tests run as root;
without mount permission the test is skipped). The disk is filled with a
file, then OffsetCommits and Produces are sent until each log has refused
N appends (every one answered with its error), then for 10 s more until a
summary is written, then 3 more whose summary the broker's tick writes; the
file is removed and one more of each succeeds. The recovery line must count
every refusal.
"""
import errno
import os
import re
import subprocess
import time
import unittest

import kwire
from harness import SKIP, Broker, main
from test_group_helpers import wait_until
from test_data_idempotent import batch, produce
from test_full_disk import mount_tmpfs

KAFKA_STORAGE_ERROR = 56
NOT_COORDINATOR = 16
N = 1500


def fill(path):
    """Write `path` until the file system is full."""
    chunk = b"\0" * (64 << 10)
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
                break
        # the last bytes that still fit
        for size in (4096, 512, 1):
            while True:
                try:
                    f.write(b"\0" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break


class FullDisk(unittest.TestCase):

    def setUp(self):
        self.mnt = mount_tmpfs(16 << 20)
        if not self.mnt:
            print("SKIP: cannot mount a tmpfs")
            raise SystemExit(SKIP)
        self.addCleanup(os.rmdir, self.mnt)
        self.addCleanup(subprocess.run, ["umount", "-l", self.mnt])

    def test_refused_appends_are_summarised(self):
        data = os.path.join(self.mnt, "data")
        b = Broker(data_dir=data, name="full-disk",
                   settings={"offsets.topic.num.partitions": "1", "num.partitions": "1"})
        self.addCleanup(b.cleanup)
        b.start()
        with kwire.Conn(b.port) as c:
            res = kwire.create_topics(c, [("fd-t", 1, 1)])
            self.assertEqual(res["topics"]["fd-t"]["error_code"], 0)
            self.assertEqual(produce(c, "fd-t", 0, batch(-1, -1, -1, [b"before"]))[0], 0)
            self.assertEqual(kwire.offset_commit(c, 2, "fd-g", [("fd-t", 0, 1, "")]),
                             {("fd-t", 0): 0})

            filler = os.path.join(self.mnt, "filler")
            fill(filler)

            def commit(i):
                return kwire.offset_commit(c, 2, "fd-g", [("fd-t", 0, 1000 + i, "")])[("fd-t", 0)]

            def produce_one(i):
                return produce(c, "fd-t", 0, batch(-1, -1, -1, [b"x" * 100]), acks=1)[0]

            refusals = {}
            sends = {"__consumer_offsets-0": (commit, NOT_COORDINATOR),
                     "fd-t-0": (produce_one, KAFKA_STORAGE_ERROR)}
            for log, (send, refused) in sends.items():
                # The page a log's tail is in was allocated before the disk
                # filled: appends fit there until it is used up.
                i = 0
                while send(i) == 0:
                    i += 1
                    self.assertLess(i, 1000, "%s: never refused on a full disk" % log)
                for k in range(1, N):
                    self.assertEqual(send(i + k), refused, "%s %d" % (log, k))
                refusals[log] = N

            def full_lines(log):
                return re.findall(r"ERROR \[log\] .*/%s/\d+\.log: append at offset \d+ failed: "
                                  r"No space left on device" % re.escape(log), b.stderr())

            for log in sends:
                self.assertEqual(len(full_lines(log)), 1,
                                 "%d refused appends to %s logged %d full lines"
                                 % (N, log, len(full_lines(log))))

            def summaries(log):
                return [int(n) for n in re.findall(
                    r"ERROR \[log\] appends to .*/%s: (\d+) more failures in the last [\d.]+ s "
                    r"\(No space left on device\)" % re.escape(log), b.stderr())]

            # Refusals go on: a summary at the first one 10 s after the first line.
            deadline = time.monotonic() + 120
            while not all(summaries(log) for log in sends):
                self.assertLess(time.monotonic(), deadline, "no summary line:\n%s"
                                % b.stderr_tail(20))
                for log, (send, refused) in sends.items():
                    self.assertEqual(send(refusals[log]), refused)
                    refusals[log] += 1
                time.sleep(0.05)
            # Three more each, then none: the broker's tick writes a summary
            # of what no line has counted yet, so every refusal is in a line.
            before = {log: len(summaries(log)) for log in sends}
            for log, (send, refused) in sends.items():
                for k in range(3):
                    self.assertEqual(send(refusals[log]), refused)
                    refusals[log] += 1
            wait_until(lambda: all(len(summaries(log)) > before[log] and
                                   1 + sum(summaries(log)) == refusals[log] for log in sends),
                       120, "the tick's summaries")

            os.unlink(filler)
            self.assertEqual(kwire.offset_commit(c, 2, "fd-g", [("fd-t", 0, 99, "")]),
                             {("fd-t", 0): 0})
            self.assertEqual(produce(c, "fd-t", 0, batch(-1, -1, -1, [b"after"]))[0], 0)
            self.assertEqual(kwire.offset_fetch(c, 5, "fd-g", {"fd-t": [0]}),
                             {("fd-t", 0): (99, b"", 0)})
            err = b.stderr()
        b.stop()

        for log in sends:
            with self.subTest(log=log):
                self.assertEqual(len(full_lines(log)), 1)
                got = summaries(log)
                self.assertEqual(len(got), before[log] + 1, got)
                back = re.findall(r"INFO \[log\] appends to .*/%s: working again after (\d+) "
                                  r"failures in [\d.]+ s" % re.escape(log), err)
                # every refusal counted once: the first line, the summaries, the rest
                self.assertEqual(back, [str(refusals[log])], "recovery line for %s" % log)
                self.assertEqual(1 + sum(got), refusals[log])
        # Nothing else on the storage path writes a line per request.
        errors = [l for l in err.splitlines() if " ERROR " in l]
        self.assertLess(len(errors), 20, "\n".join(errors[:40]))


if __name__ == "__main__":
    main()
