"""examples/cstorch/cbfloat16.py against a real csd: 002's claim that with cbfloat16 "dynamic loss
scaling is not necessary on many networks", shown on a regression whose float16 gradients
underflow. Without a scaler the float16 run's weight gradients go to zero entry by entry and its
loss stalls; the cbfloat16 run, also without a scaler, keeps no zero gradient and trains on, as
far as float16 does with dynamic loss scaling."""

import os
import re
import subprocess
import sys

from tests.harness import ROOT

EXAMPLE = os.path.join(ROOT, "examples", "cstorch", "cbfloat16.py")


def trajectory(ws_csd, tmp_path, *args) -> dict[int, tuple[float, float]]:
    """step → (loss, fraction of the weight gradient's entries that are zero), every 10 steps."""
    # One intra-op thread: beside other tests, OpenMP threads waiting for a descheduled partner
    # made its small steps 20 times slower (conftest.py says the same of the in-process tests).
    done = subprocess.run([sys.executable, "-m", "csadmin.cstorch", EXAMPLE, "--model-dir", str(tmp_path), *args],
                          env={**ws_csd.env(), "OMP_NUM_THREADS": "1"}, cwd=ROOT, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    return {int(step): (float(loss), float(zeros))
            for step, loss, zeros in re.findall(r"step (\d+) loss (\S+) zero_grads (\S+)", out)}


def test_cbfloat16_trains_without_loss_scaling_where_float16_gradients_underflow(ws_csd, tmp_path):
    fp16 = trajectory(ws_csd, tmp_path / "fp16", "--half", "float16")
    cb16 = trajectory(ws_csd, tmp_path / "cb16", "--half", "cbfloat16")
    scaled = trajectory(ws_csd, tmp_path / "scaled", "--half", "float16", "--loss-scale", "dynamic")
    assert sorted(fp16) == sorted(cb16) == sorted(scaled) == list(range(10, 121, 10))

    # float16, no scaler: the gradients underflow to zero and the loss stalls.
    assert fp16[10][1] < 0.1 and fp16[120][1] > 0.9
    assert fp16[120][0] > fp16[80][0] / 2
    # cbfloat16, no scaler: no gradient underflows, and it trains on, far below float16's plateau.
    assert all(zeros == 0 for _, zeros in cb16.values())
    assert cb16[120][0] < cb16[80][0] / 10 and cb16[120][0] < fp16[120][0] / 100
    # What float16 needs a dynamic loss scale for.
    assert all(zeros == 0 for _, zeros in scaled.values())
    assert scaled[120][0] < 2 * cb16[120][0] and cb16[120][0] < 2 * scaled[120][0]
