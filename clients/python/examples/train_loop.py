#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A simulated training loop reporting the conventional training metrics.

No GPU and no ML framework: the loss follows a fixed curve, so runs are
repeatable.  Run it next to a gpuwatch agent and watch /metrics:

    python3 clients/python/examples/train_loop.py --steps 500 --step-ms 50

--nan-at STEP makes that step's loss NaN (train_nonfinite_total goes up);
--stall-at STEP --stall-s S sleeps before that step (the step time jumps,
train_steps_total stops moving).  At the end it prints one summary line.
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import gpuwatch_metrics as gm  # noqa: E402


def tag_dict(s):
    tags = {}
    for t in filter(None, s.split(",")):
        k, _, v = t.partition(":")
        tags[k] = v
    return tags


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8125)
    ap.add_argument("--socket", help="a Unix datagram socket instead")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--step-ms", type=float, default=10.0,
                    help="simulated work per step")
    ap.add_argument("--batch", type=int, default=32, help="samples per step")
    ap.add_argument("--steps-per-epoch", type=int, default=100)
    ap.add_argument("--checkpoint-every", type=int, default=50)
    ap.add_argument("--tags", default="", help="k:v,... on every metric")
    ap.add_argument("--nan-at", type=int, default=0)
    ap.add_argument("--stall-at", type=int, default=0)
    ap.add_argument("--stall-s", type=float, default=0.0)
    a = ap.parse_args()

    if a.socket:
        m = gm.Client(socket_path=a.socket, tags=tag_dict(a.tags))
    else:
        m = gm.Client(host=a.host, port=a.port, tags=tag_dict(a.tags))
    train = gm.Training(m, samples_per_step=a.batch)
    loss, checkpoints = 0.0, 0
    for step in range(1, a.steps + 1):
        if step == a.stall_at:
            print("train_loop: stalling %.1f s" % a.stall_s, file=sys.stderr)
            time.sleep(a.stall_s)
        time.sleep(a.step_ms / 1000)  # the forward and backward pass
        loss = 0.1 + 2.4 * math.exp(-step / 100.0)
        if step == a.nan_at:
            loss = float("nan")
        train.step(loss=loss, grad_norm=1.0 + 0.5 * math.sin(step),
                   epoch=step / a.steps_per_epoch)
        if a.checkpoint_every and step % a.checkpoint_every == 0:
            # (torch.save(...) would go here)
            train.checkpoint()
            checkpoints += 1
    train.finish()
    m.close()
    print("train_loop: steps=%d loss=%r checkpoints=%d nonfinite=%d "
          "datagrams=%d dropped=%d" % (a.steps, loss, checkpoints,
                                       train.nonfinite, m.sent, m.dropped))


if __name__ == "__main__":
    main()
