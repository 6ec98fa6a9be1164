# SPDX-License-Identifier: MIT
"""Send training and inference metrics to the gpuwatch agent.

One file, Python 3.8+, standard library only: copy it next to your code or
put clients/python on PYTHONPATH.  It speaks DogStatsD over UDP (default
127.0.0.1:8125) or a Unix datagram socket; the agent turns what it receives
into Prometheus series (docs/metrics-conventions.md lists the names).

    import gpuwatch_metrics as gm

    m = gm.Client(tags={"job": "llama-7b", "rank": 0})
    train = gm.Training(m, samples_per_step=256)
    for batch in loader:
        loss, gnorm = step(batch)
        train.step(loss=loss, grad_norm=gnorm, epoch=i / len(loader))
    train.checkpoint()

    infer = gm.Inference(m, tags={"model": "llama-7b"})
    with infer.request():
        handle(req)

Contract:
- Sending never raises and never blocks: the socket is non-blocking, and a
  datagram that cannot be sent (nothing listening, buffer full, no route)
  is dropped and counted in Client.dropped (datagrams) with the last error
  in Client.last_error.  A value that cannot be expressed (NaN, Inf, a
  negative counter) is not sent and is counted in Client.invalid.  Wrong
  arguments (a port out of range, a rate outside (0, 1]) raise ValueError.
- Batching: a plain call (counter, gauge, ...) sends its datagram at once.
  Inside "with client.batch():" lines are collected and sent when the
  outermost batch ends, or earlier when the next line would make the
  datagram larger than max_datagram (1432 bytes over UDP, which fits a
  1500-byte MTU; 8192 over a Unix socket).  Training.step() and each
  Inference request are one batch: one datagram per step or request.
  There is no background thread and no timer: nothing is left buffered
  after a call returns, except inside a batch the caller opened.
- Thread safety: a Client may be shared by threads (a lock guards its
  buffer; a batch is per thread).  Training and Inference keep a little
  state each and are meant for one loop; Inference.request() may be used
  from many threads at once.
- NaN and Inf cannot travel in StatsD (the agent rejects them).  Training
  sends a non-finite loss or gradient norm as the counter train.nonfinite
  with the tag what:loss or what:grad_norm (exported as
  train_nonfinite_total{what="..."}) and leaves the gauge at its last value.
- Gauges are re-sent by the helpers (every step or request); the agent
  drops a series that has been quiet for 5 minutes.
"""

import contextlib
import math
import os
import random
import socket
import threading
import time

__all__ = ["Client", "Training", "Inference", "UDP_MAX_DATAGRAM",
           "UNIX_MAX_DATAGRAM"]
__version__ = "0.1.0"

UDP_MAX_DATAGRAM = 1432
UNIX_MAX_DATAGRAM = 8192

_NAME_MAX = 200
_TAG_KEY_MAX = 100
_TAG_VALUE_MAX = 256
# Bytes that would end a name, a field or a line: replaced by '_'.
_NAME_BAD = ":|@#,\n\r\t "
_KEY_BAD = ":|,#\n\r\t "
_VALUE_BAD = "|,"


def _clean(s, bad, limit):
    s = str(s)
    out = []
    for ch in s:
        if ch in bad or ord(ch) < 0x20 or 0x7f <= ord(ch) < 0xa0:
            out.append("_")
        else:
            out.append(ch)
    s = "".join(out)
    b = s.encode("utf-8", "replace")
    if len(b) > limit:
        s = b[:limit].decode("utf-8", "ignore")
    return s


def _name(name):
    return _clean(name, _NAME_BAD, _NAME_MAX) or "_"


def _tag(key, value=None):
    """One DogStatsD tag "key:value" ("key" alone when value is None)."""
    k = _clean(key, _KEY_BAD, _TAG_KEY_MAX)
    if not k:
        return ""
    if value is None:
        return k
    if isinstance(value, bool):
        value = "true" if value else "false"
    return k + ":" + _clean(value, _VALUE_BAD, _TAG_VALUE_MAX)


def _tags(tags):
    """A list of "k:v" from a dict, a list of "k:v" strings or None."""
    if not tags:
        return []
    if isinstance(tags, dict):
        items = [_tag(k, v) for k, v in tags.items()]
    else:
        items = []
        for t in tags:
            k, sep, v = str(t).partition(":")
            items.append(_tag(k, v if sep else None))
    return [t for t in items if t]


def _merge(first, then):
    """Tags of first, then those of then whose key first does not have."""
    if not first:
        return then
    if not then:
        return first
    keys = {t.partition(":")[0] for t in first}
    return first + [t for t in then if t.partition(":")[0] not in keys]


def _num(v):
    """The decimal text of a finite number ("-0" never: it is "0")."""
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


def _finite(v):
    try:
        return math.isfinite(v)
    except TypeError:
        return False


class Client:
    """A DogStatsD sender.  See the module comment for the contract.

    host, port: where the agent listens for UDP (GPUWATCH_STATSD_HOST,
    GPUWATCH_STATSD_PORT, else 127.0.0.1:8125).  socket_path: a Unix
    datagram socket instead (GPUWATCH_STATSD_SOCKET).  tags: default tags
    on every metric, a dict or a list of "k:v".  prefix: put before every
    name with a '.' (the conventional names assume none).
    """

    def __init__(self, host=None, port=None, socket_path=None, tags=None,
                 prefix="", max_datagram=None):
        env = os.environ
        if socket_path is None and host is None and port is None:
            socket_path = env.get("GPUWATCH_STATSD_SOCKET") or None
        self.dropped = 0
        self.sent = 0
        self.invalid = 0
        self.last_error = None
        self.prefix = _name(prefix) + "." if prefix else ""
        self.tags = _tags(tags)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._buf = []
        self._len = 0
        self._sock = None
        if socket_path:
            self._addr = str(socket_path)
            family = socket.AF_UNIX
            limit = UNIX_MAX_DATAGRAM
        else:
            host = host or env.get("GPUWATCH_STATSD_HOST") or "127.0.0.1"
            port = int(port if port is not None else
                       env.get("GPUWATCH_STATSD_PORT") or 8125)
            if not 0 < port < 65536:
                raise ValueError("port must be in 1..65535")
            family, self._addr = socket.AF_INET, None
            try:
                ai = socket.getaddrinfo(host, port, 0, socket.SOCK_DGRAM)
                family, self._addr = ai[0][0], ai[0][4]
            except OSError as e:
                self.last_error = e
            limit = UDP_MAX_DATAGRAM
        self.max_datagram = int(max_datagram or limit)
        if self.max_datagram < 64:
            raise ValueError("max_datagram must be at least 64")
        if self._addr is not None:
            try:
                self._sock = socket.socket(family, socket.SOCK_DGRAM)
                self._sock.setblocking(False)
            except OSError as e:
                self.last_error = e

    # -- the metric types ---------------------------------------------

    def counter(self, name, value=1, tags=None, rate=1.0):
        """Adds value (>= 0) to NAME_total."""
        if not _finite(value) or value < 0:
            return self._invalid()
        return self._metric(name, _num(value), "c", tags, rate)

    def gauge(self, name, value, tags=None, delta=False):
        """Sets NAME to value, or adds value to it when delta is true."""
        if not _finite(value):
            return self._invalid()
        if delta:
            text = ("-" if value < 0 else "+") + _num(abs(value))
            return self._metric(name, text, "g", tags, 1.0)
        if value < 0:
            # "-v" would be a delta: set 0, then add -v, in one datagram.
            return self._metric(name, "0", "g", tags, 1.0,
                                then="-" + _num(-value))
        return self._metric(name, _num(value), "g", tags, 1.0)

    def timing(self, name, ms, tags=None, rate=1.0):
        """One duration in milliseconds: NAME_seconds summary."""
        if not _finite(ms):
            return self._invalid()
        return self._metric(name, _num(max(ms, 0)), "ms", tags, rate)

    def distribution(self, name, value, tags=None, rate=1.0):
        """One value of a distribution: NAME summary."""
        if not _finite(value):
            return self._invalid()
        return self._metric(name, _num(value), "d", tags, rate)

    def histogram(self, name, value, tags=None, rate=1.0):
        """Same as distribution for the agent (type h)."""
        if not _finite(value):
            return self._invalid()
        return self._metric(name, _num(value), "h", tags, rate)

    @contextlib.contextmanager
    def timer(self, name, tags=None, rate=1.0):
        """Times the block (also when it raises) into NAME_seconds."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.timing(name, (time.perf_counter() - t0) * 1000, tags, rate)

    # -- batching and sending -----------------------------------------

    @contextlib.contextmanager
    def batch(self):
        """Collects this thread's lines into as few datagrams as fit."""
        loc = self._local
        loc.depth = getattr(loc, "depth", 0) + 1
        try:
            yield self
        finally:
            loc.depth -= 1
            if loc.depth == 0:
                self.flush()

    def flush(self):
        """Sends what is buffered now."""
        with self._lock:
            self._flush_locked()

    def close(self):
        """Flushes and closes the socket; later calls are dropped."""
        self.flush()
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            self._addr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _invalid(self):
        with self._lock:
            self.invalid += 1
        return False

    def _line(self, name, text, kind, tags, rate):
        line = self.prefix + _name(name) + ":" + text + "|" + kind
        if rate < 1:
            line += "|@" + _num(rate)
        t = _merge(_tags(tags), self.tags) if tags else self.tags
        if t:
            line += "|#" + ",".join(t)
        return line

    def _metric(self, name, text, kind, tags, rate, then=None):
        if not 0 < rate <= 1:
            raise ValueError("rate must be in (0, 1]")
        if rate < 1 and random.random() >= rate:
            return True
        line = self._line(name, text, kind, tags, rate)
        if then is not None:
            line += "\n" + self._line(name, then, kind, tags, rate)
        data = line.encode("utf-8")
        with self._lock:
            if len(data) > self.max_datagram:
                self.invalid += 1
                return False
            if self._buf and self._len + 1 + len(data) > self.max_datagram:
                self._flush_locked()
            self._buf.append(data)
            self._len += len(data) + (1 if len(self._buf) > 1 else 0)
            if not getattr(self._local, "depth", 0):
                self._flush_locked()
        return True

    def _flush_locked(self):
        if not self._buf:
            return
        data = b"\n".join(self._buf)
        self._buf = []
        self._len = 0
        if self._sock is None:
            self.dropped += 1
            return
        try:
            self._sock.sendto(data, self._addr)
            self.sent += 1
        except OSError as e:
            self.dropped += 1
            self.last_error = e


class Training:
    """The conventional training metrics, one datagram per step.

    samples_per_step: added to train.samples at each step unless step()
    gets samples.  tags: added to the client's tags.  clock: a monotonic
    clock in seconds (time.perf_counter), wall: the time of day
    (time.time), both replaceable for tests.
    """

    KEEPALIVE_S = 30.0

    def __init__(self, client, samples_per_step=None, tags=None,
                 clock=time.perf_counter, wall=time.time):
        self.client = client
        self.samples_per_step = samples_per_step
        self.tags = _tags(tags)
        self.nonfinite = 0
        self._clock = clock
        self._wall = wall
        self._mark = clock()
        self._measured = None
        self._ckpt = None
        self._ckpt_sent = 0.0

    def start(self):
        """Restarts the step clock (after evaluation, a pause, a restore)."""
        self._mark = self._clock()
        self._measured = None

    @contextlib.contextmanager
    def step_timer(self):
        """Times the block as the step time of the next step() call."""
        t0 = self._clock()
        try:
            yield
        finally:
            self._measured = self._clock() - t0

    def step(self, loss=None, grad_norm=None, epoch=None, samples=None,
             seconds=None):
        """Records one finished step.

        The step time is seconds if given, else what the last step_timer()
        block measured, else the time since the previous step() (or
        start(), or the helper's creation).  Sends train.steps, train.samples
        (samples or samples_per_step), train.step, the gauges given, and
        train.step_timestamp_seconds and train.running (1), by which a
        stalled job is told from a finished one (see finish()).
        """
        now = self._clock()
        if seconds is None:
            seconds = (self._measured if self._measured is not None
                       else now - self._mark)
        self._mark = now
        self._measured = None
        if samples is None:
            samples = self.samples_per_step
        c, tags = self.client, self.tags
        with c.batch():
            c.counter("train.steps", 1, tags)
            if samples is not None:
                c.counter("train.samples", samples, tags)
            c.timing("train.step", seconds * 1000, tags)
            self._value("loss", loss)
            self._value("grad_norm", grad_norm)
            if epoch is not None:
                c.gauge("train.epoch", epoch, tags)
            wall = self._wall()
            if (self._ckpt is not None and
                    wall - self._ckpt_sent >= self.KEEPALIVE_S):
                self._send_checkpoint_time(wall)
            c.gauge("train.step_timestamp_seconds", wall, tags)
            c.gauge("train.running", 1, tags)

    def finish(self):
        """The run is over: sends train.running 0, so that the agent's
        stall alert (no step for several step times) stays quiet."""
        self.client.gauge("train.running", 0, self.tags)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.finish()
        return False

    def _value(self, what, v):
        if v is None:
            return
        v = float(v)  # also a NumPy scalar or a one-element tensor
        if math.isfinite(v):
            self.client.gauge("train." + what, v, self.tags)
        else:
            self.nonfinite += 1
            self.client.counter("train.nonfinite", 1,
                                _merge(["what:" + what], self.tags))

    def checkpoint(self, timestamp=None):
        """A checkpoint was written (at timestamp, default now)."""
        ts = self._wall() if timestamp is None else timestamp
        self._ckpt = ts
        c = self.client
        with c.batch():
            c.counter("train.checkpoints", 1, self.tags)
            self._send_checkpoint_time(self._wall())

    def _send_checkpoint_time(self, wall):
        self._ckpt_sent = wall
        self.client.gauge("train.checkpoint_timestamp_seconds", self._ckpt,
                          self.tags)


class _Request:
    __slots__ = ("failed",)

    def __init__(self):
        self.failed = False

    def fail(self):
        """Counts the request as an error without raising."""
        self.failed = True


class Inference:
    """The conventional inference metrics, one datagram per request.

    tags: added to the client's tags.  rate: a sample rate in (0, 1] for
    the request timer and counter (the agent scales them back); errors and
    the queue depth are always sent.  clock: monotonic seconds.
    """

    def __init__(self, client, tags=None, rate=1.0, clock=time.perf_counter):
        if not 0 < rate <= 1:
            raise ValueError("rate must be in (0, 1]")
        self.client = client
        self.tags = _tags(tags)
        self.rate = rate
        self._clock = clock
        self._depth = None

    @contextlib.contextmanager
    def request(self, tags=None):
        """Times the block as one request; an exception in it counts an
        error and is raised again.  The object given by "as" has fail()."""
        r = _Request()
        t0 = self._clock()
        try:
            yield r
        except BaseException:
            r.failed = True
            raise
        finally:
            self.record(self._clock() - t0, r.failed, tags)

    def record(self, seconds, error=False, tags=None):
        """One request that took seconds (for code that times itself)."""
        c = self.client
        t = _merge(_tags(tags), self.tags) if tags else self.tags
        with c.batch():
            c.timing("inference.request", seconds * 1000, t, self.rate)
            c.counter("inference.requests", 1, t, self.rate)
            if error:
                c.counter("inference.errors", 1, t)
            if self._depth is not None:
                c.gauge("inference.queue_depth", self._depth, self.tags)

    def queue_depth(self, n):
        """Requests waiting now; re-sent with every request after."""
        self._depth = n
        self.client.gauge("inference.queue_depth", n, self.tags)
