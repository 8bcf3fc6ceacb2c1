"""Start, stop and kill cohortd for the integration tests (stdlib only).

    from harness import Broker, BrokerTestCase, main

    b = Broker(settings={"num.partitions": "3"})   # fresh temp data dir, free port
    b.start()                                      # returns when it accepts connections
    b.bootstrap                                    # "127.0.0.1:PORT"
    b.stop()                                       # SIGTERM; asserts exit 0, sanitizer-clean
    b.kill9(); b.start()                           # same port and data dir

The cohortd binary comes from the environment variable COHORTD. Every process
started here is killed when the test process exits, whatever the reason: an
atexit hook, SIGTERM/SIGINT/SIGHUP handlers, and PR_SET_PDEATHSIG in the child
(so even a SIGKILLed test runner leaves no cohortd behind).
"""
import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77  # ctest SKIP_RETURN_CODE

START_TIMEOUT = 60.0   # generous: sanitizer builds start slower
STOP_TIMEOUT = 30.0

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                   "runtime error:", "UndefinedBehaviorSanitizer",
                   "ThreadSanitizer", "MemorySanitizer")

_live = set()       # Broker objects with a running process
_all = []           # every Broker made in this process, for failure reports


def cohortd_path():
    return os.environ.get("COHORTD", "")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pdeathsig():
    """preexec_fn: the child gets SIGKILL if the test process dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


def _remove_workdirs():
    if os.environ.get("COHORT_IT_KEEP"):
        return
    for b in _all:
        shutil.rmtree(b.workdir, ignore_errors=True)


def _kill_all():
    for b in list(_live):
        b._hard_kill()


def _on_signal(signum, _frame):
    _kill_all()
    _remove_workdirs()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


atexit.register(_remove_workdirs)
atexit.register(_kill_all)   # atexit runs in reverse order: kill first
for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    try:
        signal.signal(_sig, _on_signal)
    except (ValueError, OSError):
        pass


def can_connect(port, timeout=0.5):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class BrokerError(AssertionError):
    pass


class Broker:
    """One cohortd process. data_dir None: a fresh temp dir, removed at the end."""

    def __init__(self, data_dir=None, port=None, settings=None, config_file=None,
                 extra_args=None, name="cohortd", defaults=True):
        self.binary = cohortd_path()
        self.name = name
        self.workdir = tempfile.mkdtemp(prefix="cohort-it-")
        self.own_data_dir = data_dir is None
        self.data_dir = data_dir or os.path.join(self.workdir, "data")
        self.fixed_port = port is not None
        self.port = port or free_port()
        self.settings = dict(settings or {})
        self.config_file = config_file
        self.extra_args = list(extra_args or [])
        self.defaults = defaults  # --set listeners=... log.dirs=... from port/data_dir
        self.proc = None
        self.starts = 0
        self.stderr_path = None
        self._stderr_f = None
        _all.append(self)

    # -- properties
    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def argv(self):
        argv = [self.binary]
        if self.config_file:
            argv += ["-c", self.config_file]
        s = {}
        if self.defaults:
            # The admin HTTP listener is off unless a test asks for it (its
            # default port 9644 would be shared by every broker of the suite).
            s = {"listeners": "PLAINTEXT://127.0.0.1:%d" % self.port, "log.dirs": self.data_dir,
                 "admin.listeners": ""}
        s.update(self.settings)
        for k, v in s.items():
            argv += ["--set", "%s=%s" % (k, v)]
        return argv + self.extra_args

    def admin_port(self):
        """The admin listener's port of the latest run, from its startup line
        (start with admin.listeners=http://127.0.0.1:0 for a free one)."""
        import re
        # cohortd logs the line after replaying __consumer_offsets, a moment
        # after the Kafka listener accepts (which is all start() waits for)
        deadline = time.monotonic() + 30
        while True:
            m = re.findall(r"admin API on http://\S*:(\d+)$", self.stderr(), re.M)
            if m:
                return int(m[-1])
            if time.monotonic() > deadline or not self.running():
                raise BrokerError("%s logged no admin listener:\n%s"
                                  % (self.name, self.stderr_tail()))
            time.sleep(0.02)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    # -- lifecycle
    def start(self, timeout=START_TIMEOUT):
        if not self.binary or not os.access(self.binary, os.X_OK):
            raise BrokerError("COHORTD is not an executable: %r" % self.binary)
        if self.running():
            raise BrokerError("already running")
        for attempt in range(3):
            self._spawn()
            if self._wait_ready(timeout):
                return self
            rc = self.proc.poll()
            err = self.stderr()
            # A race on the free port: someone else took it; try another one.
            # Only on a first start with a harness-chosen port: a restart must
            # get its old port back (Kafka sets SO_REUSEADDR).
            if (rc is not None and "address already in use" in err.lower() and attempt < 2
                    and self.starts == 1 + attempt and self.defaults and not self.fixed_port):
                self._close_stderr()
                self.proc = None
                self.port = free_port()
                continue
            self._hard_kill()
            if rc is not None:
                raise BrokerError("%s exited with code %s during startup:\n%s"
                                  % (self.name, rc, self.stderr_tail()))
            raise BrokerError("%s did not accept connections on port %d within %.0fs:\n%s"
                              % (self.name, self.port, timeout, self.stderr_tail()))
        raise BrokerError("unreachable")

    def _spawn(self):
        os.makedirs(self.data_dir, exist_ok=True)
        self.starts += 1
        self.stderr_path = os.path.join(self.workdir, "stderr.%d.log" % self.starts)
        self._stderr_f = open(self.stderr_path, "wb")
        env = dict(os.environ)
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=self._stderr_f, stderr=self._stderr_f,
                                     cwd=self.workdir, env=env, preexec_fn=_pdeathsig)
        _live.add(self)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if can_connect(self.port):
                # (if another process holds the port, ours exits: look again)
                time.sleep(0.05)
                return self.proc.poll() is None
            time.sleep(0.05)
        return False

    def _close_stderr(self):
        if self._stderr_f:
            self._stderr_f.close()
            self._stderr_f = None

    def _reap(self):
        _live.discard(self)
        self._close_stderr()

    def stop(self, check=True, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """Graceful stop; with check, assert exit code 0 and no sanitizer report."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._hard_kill()
                self._reap()
                raise BrokerError("%s did not exit within %.0fs of %s:\n%s"
                                  % (self.name, timeout, signal.Signals(sig).name,
                                     self.stderr_tail()))
        rc = self.proc.returncode
        self._reap()
        if check:
            self.check_clean(rc, "after %s" % signal.Signals(sig).name)
        return rc

    def check_clean(self, rc, when=""):
        err = self.stderr()
        marks = [m for m in SANITIZER_MARKS if m in err]
        if rc != 0 or marks:
            raise BrokerError("%s exit code %s %s (expected 0)%s:\n%s"
                              % (self.name, rc, when,
                                 "; sanitizer report: %s" % marks if marks else "",
                                 self.stderr_tail(80)))

    def kill9(self):
        """SIGKILL, like a power cut; the data dir stays."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT)
        self._reap()

    def _hard_kill(self):
        try:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(STOP_TIMEOUT)
        except Exception:
            pass
        self._reap()

    def restart(self):
        self.stop()
        return self.start()

    def cleanup(self):
        """Kill if still running; the work dir (stderr logs, own data dir) is
        removed when the test process exits, after failure reports."""
        self._hard_kill()

    # -- diagnostics
    def stderr(self):
        """Everything this broker wrote to stderr in its latest run."""
        if not self.stderr_path or not os.path.exists(self.stderr_path):
            return ""
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stderr_tail(self, n=40):
        lines = self.stderr().splitlines()
        return "\n".join("    | " + l for l in lines[-n:])

    def assert_alive(self):
        """The process runs and answers ApiVersions v0 and Metadata v1 on a new connection."""
        import kwire
        if not self.running():
            raise BrokerError("%s is not running (exit %s):\n%s"
                              % (self.name, self.proc and self.proc.poll(), self.stderr_tail()))
        with kwire.Conn(self.port) as c:
            av = kwire.api_versions(c, 0)
            if av["error_code"] != 0 or kwire.API_METADATA not in av["api_keys"]:
                raise BrokerError("ApiVersions v0 answered %r" % av)
            md = kwire.metadata(c, 1)
            if len(md["brokers"]) != 1:
                raise BrokerError("Metadata v1 answered brokers %r" % md["brokers"])


def start_clean(broker):
    """broker.start(); its files and processes cleaned up if that fails.
    Returns broker (a cohortd Broker, a KafkaRef or a KafkaCluster)."""
    try:
        broker.start()
    except BaseException:
        broker.cleanup()
        raise
    return broker


def stop_clean(broker):
    """broker.stop(), then its files removed even when stopping fails."""
    try:
        broker.stop()
    finally:
        broker.cleanup()


class BrokerTestCase(unittest.TestCase):
    """One broker per test class (self.broker), stopped cleanly at the end:
    exit code 0 on SIGTERM is part of every test class."""

    broker_settings = {}

    @classmethod
    def setUpClass(cls):
        cls.broker = start_clean(Broker(settings=cls.broker_settings, name=cls.__name__))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)

    def new_broker(self, **kw):
        """A broker owned by one test, always cleaned up."""
        b = Broker(**kw)
        self.addCleanup(b.cleanup)
        return b


def which(tool):
    return shutil.which(tool)


def run(argv, timeout=120, **kw):
    """subprocess.run with captured text output; the child dies with us."""
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout,
                          preexec_fn=_pdeathsig, **kw)


def main(requires_tools=(), requires_modules=()):
    """unittest.main, with exit code 77 (ctest: skipped) when something needed
    is missing, and broker stderr tails printed when a test failed."""
    if not cohortd_path():
        print("SKIP: COHORTD is not set")
        sys.exit(SKIP)
    for t in requires_tools:
        if not which(t):
            print("SKIP: %s is not installed (tools/install-deps.sh test installs it)" % t)
            sys.exit(SKIP)
    for m in requires_modules:
        try:
            __import__(m)
        except ImportError:
            print("SKIP: python module %s is not installed for %s (tools/install-deps.sh test)"
                  % (m, sys.executable))
            sys.exit(SKIP)
    prog = unittest.main(verbosity=2, exit=False)
    ok = prog.result.wasSuccessful()
    if not ok:
        for b in _all:
            if b.stderr_path:
                print("\n--- stderr of %s (port %d, run %d):\n%s"
                      % (b.name, b.port, b.starts, b.stderr_tail(60)), file=sys.stderr)
    _kill_all()
    sys.exit(0 if ok else 1)
