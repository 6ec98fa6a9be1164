# SPDX-License-Identifier: MIT
"""Tests of gpuwatch_metrics: a local socket receives what the client sends
and the exact datagrams are compared.  Run: python3 -m unittest -v
test_gpuwatch_metrics (from clients/python)."""

import os
import socket
import tempfile
import unittest
from unittest import mock

import gpuwatch_metrics as gm


class FakeClock:
    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t


class UDPCase(unittest.TestCase):
    def setUp(self):
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.rx.bind(("127.0.0.1", 0))
        self.rx.settimeout(5)
        self.port = self.rx.getsockname()[1]
        self.clients = []

    def tearDown(self):
        for m in self.clients:
            m.close()
        self.rx.close()

    def client(self, **kw):
        m = gm.Client(host="127.0.0.1", port=self.port, **kw)
        self.clients.append(m)
        return m

    def recv(self):
        return self.rx.recv(65536).decode()

    def assertNothingMore(self):
        # Loopback delivers synchronously: anything sent is queued already.
        self.rx.setblocking(False)
        with self.assertRaises(BlockingIOError):
            self.rx.recv(65536)
        self.rx.settimeout(5)


class TestClient(UDPCase):
    def test_types_one_datagram_each(self):
        m = self.client()
        m.counter("jobs.done")
        m.counter("jobs.done", 4)
        m.gauge("queue", 7.5)
        m.timing("lat", 12.25)
        m.distribution("size", 3)
        m.histogram("size2", 0.001)
        for want in ["jobs.done:1|c", "jobs.done:4|c", "queue:7.5|g",
                     "lat:12.25|ms", "size:3|d", "size2:0.001|h"]:
            self.assertEqual(self.recv(), want)
        self.assertNothingMore()
        self.assertEqual(m.sent, 6)
        self.assertEqual(m.dropped, 0)

    def test_number_formats(self):
        m = self.client()
        for v in [2.0, -0.0, 1e-7, 1.5e20, 123456789012, True, 0.1]:
            m.gauge("g", v)
        got = [self.recv() for _ in range(7)]
        self.assertEqual(got, ["g:2|g", "g:0|g", "g:1e-07|g",
                               "g:1.5e+20|g", "g:123456789012|g",
                               "g:1|g", "g:0.1|g"])

    def test_negative_gauge_is_set_not_delta(self):
        m = self.client()
        m.gauge("temp", -5.5, tags={"gpu": 0})
        self.assertEqual(self.recv(),
                         "temp:0|g|#gpu:0\ntemp:-5.5|g|#gpu:0")
        m.gauge("temp", -2, delta=True)
        m.gauge("temp", 3, delta=True)
        self.assertEqual(self.recv(), "temp:-2|g")
        self.assertEqual(self.recv(), "temp:+3|g")

    def test_nonfinite_and_negative_counter_not_sent(self):
        m = self.client()
        self.assertFalse(m.gauge("g", float("nan")))
        self.assertFalse(m.gauge("g", float("inf")))
        self.assertFalse(m.timing("t", float("-inf")))
        self.assertFalse(m.counter("c", -1))
        self.assertFalse(m.distribution("d", None))
        self.assertEqual(m.invalid, 5)
        self.assertNothingMore()

    def test_tags_defaults_and_overrides(self):
        m = self.client(tags={"job": "llama", "rank": 3})
        m.counter("c", tags={"rank": 1, "phase": "eval"})
        m.counter("c", tags=["canary", "url:http://x/y"])
        m.gauge("g", 1)
        self.assertEqual(self.recv(),
                         "c:1|c|#rank:1,phase:eval,job:llama")
        self.assertEqual(self.recv(),
                         "c:1|c|#canary,url:http://x/y,job:llama,rank:3")
        self.assertEqual(self.recv(), "g:1|g|#job:llama,rank:3")

    def test_sanitising_keeps_the_line_intact(self):
        m = self.client(prefix="my app")
        m.counter("a:b|c\nd@e#f,g", tags={"k:e|y": "v|a,l\nue:x"})
        self.assertEqual(self.recv(),
                         "my_app.a_b_c_d_e_f_g:1|c|#k_e_y:v_a_l_ue:x")
        m.gauge("x" * 300, 1, tags={"k": "é" * 200})
        name, _, rest = self.recv().partition(":")
        self.assertEqual(name, "my_app." + "x" * 200)
        value = rest.split("|#k:")[1]
        self.assertEqual(value, "é" * 128)  # 256 bytes, whole characters

    def test_sample_rate(self):
        m = self.client()
        with mock.patch("random.random", side_effect=[0.2, 0.7]):
            m.timing("t", 5, rate=0.5)  # 0.2 < 0.5: sent
            m.timing("t", 6, rate=0.5)  # 0.7 >= 0.5: not sent
        self.assertEqual(self.recv(), "t:5|ms|@0.5")
        self.assertNothingMore()
        with self.assertRaises(ValueError):
            m.counter("c", 1, rate=0)
        with self.assertRaises(ValueError):
            m.counter("c", 1, rate=1.5)

    def test_batch_packs_lines_and_splits_at_max_datagram(self):
        m = self.client(max_datagram=100)
        with m.batch():
            for i in range(7):
                m.counter("metric.%02d" % i, i)  # 13 bytes, 14 with '\n'
            self.assertNothingMore()  # 97 bytes kept
            for i in range(7, 12):
                m.counter("metric.%02d" % i, i)
        got = [self.recv(), self.recv()]
        lines = ["metric.%02d:%d|c" % (i, i) for i in range(12)]
        self.assertEqual(got, ["\n".join(lines[:7]), "\n".join(lines[7:])])
        self.assertTrue(all(len(d) <= 100 for d in got))
        self.assertNothingMore()
        self.assertEqual(m.max_datagram, 100)
        self.assertEqual(self.client().max_datagram, 1432)

    def test_nested_batches_flush_at_the_outermost(self):
        m = self.client()
        with m.batch():
            m.counter("a")
            with m.batch():
                m.counter("b")
            self.assertNothingMore()
            m.counter("c")
        self.assertEqual(self.recv(), "a:1|c\nb:1|c\nc:1|c")

    def test_line_longer_than_a_datagram_is_dropped(self):
        m = self.client(max_datagram=64)
        self.assertFalse(m.counter("c", tags={"k": "v" * 100}))
        self.assertEqual(m.invalid, 1)
        self.assertNothingMore()

    def test_timer_context_times_also_on_exception(self):
        m = self.client()
        with mock.patch("time.perf_counter", side_effect=[1.0, 1.25]):
            with self.assertRaises(KeyError):
                with m.timer("work"):
                    raise KeyError("x")
        self.assertEqual(self.recv(), "work:250|ms")

    def test_closed_client_counts_drops(self):
        m = self.client()
        m.close()
        m.counter("c")
        self.assertEqual(m.dropped, 1)
        self.assertNothingMore()

    def test_environment_defaults(self):
        env = {"GPUWATCH_STATSD_HOST": "127.0.0.1",
               "GPUWATCH_STATSD_PORT": str(self.port)}
        with mock.patch.dict(os.environ, env):
            m = gm.Client()
        self.clients.append(m)
        m.counter("from.env")
        self.assertEqual(self.recv(), "from.env:1|c")


class TestUnix(unittest.TestCase):
    def test_unix_socket_and_no_listener(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "statsd.sock")
            m = gm.Client(socket_path=path)
            self.assertEqual(m.max_datagram, 8192)
            # Nothing bound yet: dropped, counted, not raised.
            self.assertTrue(m.counter("c"))
            self.assertEqual(m.dropped, 1)
            self.assertIsInstance(m.last_error, OSError)
            rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            rx.bind(path)
            rx.settimeout(5)
            try:
                m.gauge("g", 2, tags={"gpu": 1})
                self.assertEqual(rx.recv(65536), b"g:2|g|#gpu:1")
                self.assertEqual(m.sent, 1)
            finally:
                m.close()
                rx.close()

    def test_full_receive_queue_never_blocks(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s")
            rx = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            rx.bind(path)
            try:
                m = gm.Client(socket_path=path)
                for _ in range(5000):  # far beyond the queue's length
                    m.counter("flood")
                self.assertGreater(m.dropped, 0)
                self.assertEqual(m.sent + m.dropped, 5000)
                m.close()
            finally:
                rx.close()


class TestTraining(UDPCase):
    def test_step_sends_one_datagram(self):
        m = self.client(tags={"job": "j"})
        clock, wall = FakeClock(10.0), FakeClock(1700000000.0)
        t = gm.Training(m, samples_per_step=32, tags={"rank": 0},
                        clock=clock, wall=wall)
        clock.t = 10.5
        t.step(loss=2.25, grad_norm=0.5, epoch=0.01)
        tg = "|#rank:0,job:j"
        self.assertEqual(self.recv(), "\n".join([
            "train.steps:1|c" + tg,
            "train.samples:32|c" + tg,
            "train.step:500|ms" + tg,
            "train.loss:2.25|g" + tg,
            "train.grad_norm:0.5|g" + tg,
            "train.epoch:0.01|g" + tg,
            "train.step_timestamp_seconds:1700000000|g" + tg, "train.running:1|g" + tg]))
        # Time since the previous step, then a step_timer block, then an
        # explicit duration; samples given per step.
        clock.t = 10.75
        t.step(loss=2.0)
        with t.step_timer():
            clock.t = 11.0
        clock.t = 20.0  # time after the block is not step time
        t.step(samples=7)
        t.step(seconds=0.002)
        self.assertEqual(self.recv(), "\n".join([
            "train.steps:1|c" + tg, "train.samples:32|c" + tg,
            "train.step:250|ms" + tg, "train.loss:2|g" + tg, "train.step_timestamp_seconds:1700000000|g" + tg, "train.running:1|g" + tg]))
        self.assertEqual(self.recv(), "\n".join([
            "train.steps:1|c" + tg, "train.samples:7|c" + tg,
            "train.step:250|ms" + tg, "train.step_timestamp_seconds:1700000000|g" + tg, "train.running:1|g" + tg]))
        self.assertEqual(self.recv(), "\n".join([
            "train.steps:1|c" + tg, "train.samples:32|c" + tg,
            "train.step:2|ms" + tg, "train.step_timestamp_seconds:1700000000|g" + tg, "train.running:1|g" + tg]))
        self.assertNothingMore()

    def test_nonfinite_loss_is_counted_not_sent(self):
        m = self.client()
        clock, wall = FakeClock(), FakeClock(1700000000.0)
        t = gm.Training(m, clock=clock, wall=wall)
        t.step(loss=float("nan"), grad_norm=float("inf"), epoch=1)
        self.assertEqual(self.recv(), "\n".join([
            "train.steps:1|c", "train.step:0|ms",
            "train.nonfinite:1|c|#what:loss",
            "train.nonfinite:1|c|#what:grad_norm",
            "train.epoch:1|g",
            "train.step_timestamp_seconds:1700000000|g",
            "train.running:1|g"]))
        self.assertEqual(t.nonfinite, 2)
        self.assertEqual(m.invalid, 0)

    def test_checkpoint_and_keepalive(self):
        m = self.client()
        clock, wall = FakeClock(), FakeClock(1700000000.0)
        t = gm.Training(m, clock=clock, wall=wall)
        t.checkpoint()
        self.assertEqual(self.recv(), "train.checkpoints:1|c\n"
                         "train.checkpoint_timestamp_seconds:1700000000|g")
        wall.t += 10
        t.step()
        self.assertEqual(self.recv(), "train.steps:1|c\ntrain.step:0|ms\n"
                         "train.step_timestamp_seconds:1700000010|g\n"
                         "train.running:1|g")
        wall.t += 25  # 35 s since it was sent: sent again, same value
        t.step()
        self.assertEqual(self.recv(), "train.steps:1|c\ntrain.step:0|ms\n"
                         "train.checkpoint_timestamp_seconds:1700000000|g\n"
                         "train.step_timestamp_seconds:1700000035|g\n"
                         "train.running:1|g")
        # The end of the run.
        with t:
            pass
        self.assertEqual(self.recv(), "train.running:0|g")
        t.checkpoint(timestamp=1700000100.5)
        self.assertEqual(self.recv(), "train.checkpoints:1|c\n"
                         "train.checkpoint_timestamp_seconds:1700000100.5|g")


class TestInference(UDPCase):
    def test_request_ok_error_and_fail(self):
        m = self.client(tags={"job": "srv"})
        clock = FakeClock(0.0)
        inf = gm.Inference(m, tags={"model": "m1"}, clock=clock)
        with inf.request():
            clock.t += 0.012
        self.assertEqual(self.recv(), "\n".join([
            "inference.request:12|ms|#model:m1,job:srv",
            "inference.requests:1|c|#model:m1,job:srv"]))
        with self.assertRaises(ValueError):
            with inf.request(tags={"route": "/gen"}):
                clock.t += 0.5
                raise ValueError("bad input")
        tg = "|#route:/gen,model:m1,job:srv"
        self.assertEqual(self.recv(), "\n".join([
            "inference.request:500|ms" + tg,
            "inference.requests:1|c" + tg,
            "inference.errors:1|c" + tg]))
        inf.queue_depth(4)
        self.assertEqual(self.recv(),
                         "inference.queue_depth:4|g|#model:m1,job:srv")
        with inf.request() as r:
            r.fail()
        self.assertEqual(self.recv(), "\n".join([
            "inference.request:0|ms|#model:m1,job:srv",
            "inference.requests:1|c|#model:m1,job:srv",
            "inference.errors:1|c|#model:m1,job:srv",
            "inference.queue_depth:4|g|#model:m1,job:srv"]))
        self.assertNothingMore()

    def test_sampled_requests_keep_every_error(self):
        m = self.client()
        inf = gm.Inference(m, rate=0.25, clock=FakeClock())
        with mock.patch("random.random", side_effect=[0.9, 0.9]):
            inf.record(0.003, error=True)
        self.assertEqual(self.recv(), "inference.errors:1|c")
        with mock.patch("random.random", side_effect=[0.1, 0.1]):
            inf.record(0.003)
        self.assertEqual(self.recv(), "inference.request:3|ms|@0.25\n"
                         "inference.requests:1|c|@0.25")


if __name__ == "__main__":
    unittest.main()
