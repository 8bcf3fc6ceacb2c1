"""Deleting a topic on a completely full disk frees space, as an operator expects.

The data directory is a small tmpfs, filled by producing until cohortd
answers KAFKA_STORAGE_ERROR. Creating a topic then fails (it needs space),
but deleting one works: the topic registry keeps space in reserve for its
next rewrite (src/meta/ch_topics.c, THE RESERVE). The deleted topic's space
is freed, producing works again, and the deletion stays deleted across a
clean restart and kill -9.

Mounting needs root; without it the test is skipped (77) and the logic is
still covered by meta_registry_crash t_full_disk (a quota file layer) and
t_fault_every_step (ENOSPC at every step of a change).
"""
import os
import subprocess
import sys
import tempfile

import kwire
import test_data_idempotent as idem
from harness import Broker, BrokerTestCase, main

KAFKA_STORAGE_ERROR = 56
DISK = 24 << 20


def mount_tmpfs(size):
    """A fresh tmpfs of size bytes, or None when mounting is not allowed."""
    where = tempfile.mkdtemp(prefix="cohort-fulldisk-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%d" % size, "tmpfs", where],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        os.rmdir(where)
        return None
    return where


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def du(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


class FullDisk(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        cls.mnt = mount_tmpfs(DISK)
        cls.broker = Broker(data_dir=os.path.join(cls.mnt, "data"), name=cls.__name__,
                            settings={"log.segment.bytes": str(1 << 20)})
        try:
            cls.broker.start()
        except BaseException:
            cls.broker.cleanup()
            subprocess.run(["umount", cls.mnt])
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            super().tearDownClass()
        finally:
            subprocess.run(["umount", cls.mnt])
            os.rmdir(cls.mnt)

    def create(self, c, name):
        return kwire.create_topics(c, [(name, 1, 1)])["topics"][name]["error_code"]

    def delete(self, c, name):
        return kwire.delete_topics(c, [name])["results"][0]["error_code"]

    def topics(self, c):
        return set(kwire.metadata(c, 1, topics=None)["topics"])

    def fill(self, c, topic):
        """Produces acks=1 until the disk refuses; returns the errors seen."""
        errors = set()
        for size in (256 << 10, 16 << 10, 1 << 10):
            value = b"x" * size
            for _ in range(4 * DISK // size):
                err, _ = idem.produce(c, topic, 0, idem.batch(-1, -1, -1, [value]), acks=1)
                if err:
                    errors.add(err)
                    break
        return errors

    def test_delete_on_full_disk(self):
        b = self.broker
        with kwire.Conn(b.port) as c:
            for t in ("big", "keep"):
                self.assertEqual(self.create(c, t), 0)
            self.assertEqual(self.fill(c, "big"), {KAFKA_STORAGE_ERROR})
            self.assertLess(free_bytes(self.mnt), 64 << 10)
            big = du(os.path.join(b.data_dir, "big-0"))
            self.assertGreater(big, DISK // 2)
            # Creating needs space the disk does not have...
            self.assertEqual(self.create(c, "more"), KAFKA_STORAGE_ERROR)
            self.assertNotIn("more", self.topics(c))
            # ...deleting is how space is freed.
            self.assertEqual(self.delete(c, "big"), 0)
            self.assertNotIn("big", self.topics(c))
            self.assertFalse(os.path.exists(os.path.join(b.data_dir, "big-0")))
            self.assertGreater(free_bytes(self.mnt), big // 2)
            err, _ = idem.produce(c, "keep", 0, idem.batch(-1, -1, -1, [b"after"]), acks=-1)
            self.assertEqual(err, 0)
        b.stop()
        b.start()
        with kwire.Conn(b.port) as c:
            self.assertEqual(self.topics(c), {"keep"})
            # Full again, then a deletion and at once kill -9.
            self.assertEqual(self.create(c, "big2"), 0)
            self.assertEqual(self.fill(c, "big2"), {KAFKA_STORAGE_ERROR})
            self.assertEqual(self.delete(c, "big2"), 0)
        b.kill9()
        b.start()
        with kwire.Conn(b.port) as c:
            self.assertEqual(self.topics(c), {"keep"})
            self.assertEqual(self.create(c, "more"), 0)


if __name__ == "__main__":
    probe = mount_tmpfs(1 << 20)
    if probe is None:
        print("SKIP: cannot mount a tmpfs (needs root); meta_registry_crash covers the logic")
        sys.exit(77)
    subprocess.run(["umount", probe])
    os.rmdir(probe)
    main()
