#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A simulated inference server reporting the conventional inference
metrics: request latency, requests, errors and queue depth.

No model and no network: requests arrive in a loop, "handling" one sleeps
for a repeatable pseudo-random time.  Run it next to a gpuwatch agent:

    python3 clients/python/examples/inference_server.py --requests 2000

--error-every N makes every Nth request fail (its handler raises);
--slow-at N --slow-ms MS makes request N that slow (a latency spike).
At the end it prints one summary line.
"""

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import gpuwatch_metrics as gm  # noqa: E402


class ModelError(Exception):
    pass


def handle(i, ms, fail):
    time.sleep(ms / 1000)  # the model's forward pass
    if fail:
        raise ModelError("request %d failed" % i)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8125)
    ap.add_argument("--socket", help="a Unix datagram socket instead")
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--latency-ms", type=float, default=5.0,
                    help="median handling time")
    ap.add_argument("--error-every", type=int, default=0)
    ap.add_argument("--slow-at", type=int, default=0)
    ap.add_argument("--slow-ms", type=float, default=2000.0)
    ap.add_argument("--model", default="demo")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    if a.socket:
        m = gm.Client(socket_path=a.socket, tags={"model": a.model})
    else:
        m = gm.Client(host=a.host, port=a.port, tags={"model": a.model})
    inf = gm.Inference(m)
    rnd = random.Random(a.seed)
    errors = 0
    for i in range(1, a.requests + 1):
        # A queue that fills and drains: 0..9 waiting.
        inf.queue_depth((i * 7) % 10)
        ms = a.latency_ms * rnd.lognormvariate(0, 0.5)
        if i == a.slow_at:
            ms = a.slow_ms
        fail = a.error_every > 0 and i % a.error_every == 0
        try:
            with inf.request():
                handle(i, ms, fail)
        except ModelError:
            errors += 1  # a real server would answer 500 here
    inf.queue_depth(0)
    m.close()
    print("inference_server: requests=%d errors=%d datagrams=%d dropped=%d"
          % (a.requests, errors, m.sent, m.dropped))


if __name__ == "__main__":
    main()
