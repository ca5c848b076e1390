"""terms.one_element_queue: the mean-value analysis of a one-element kernel's warps between their loads' latency and
the L1's data stage, on cases worked by hand, its limits, and the H200 record docs/model.md quotes (no GPU)."""
import json
from pathlib import Path

import numpy as np
import pytest

from perfmodel import Figures, KernelConfig, facts, predict
from perfmodel.model import terms

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "results" / "20261202-222500-h200-source-kernels" / "source-kernels.json"


def test_two_warps_by_hand():
    # steps 1, 2 warps, t_smem 4 (D = 2 a warp), t_lat 10 (Z = 8): n = 1: R = 2, X = 1/10, Q = 0.2;
    # n = 2: R = 2 * 1.2 = 2.4, X = 2 / 10.4; a batch takes 2 / X = 10.4 cycles
    assert terms.one_element_queue(np.array([10.0]), np.array([4.0]), 2, 1)[0] == pytest.approx(10.4)


def test_limits():
    t_lat = np.array([200.0, 200.0, 100.0, 200.0])
    t_smem = np.array([0.0, 1000.0, 100.0, 190.0])
    out = terms.one_element_queue(t_lat, t_smem, 32, 16 / 3)
    assert out[0] == pytest.approx(200.0)  # no lines: the latency alone
    assert out[1] == pytest.approx(1000.0, rel=1e-6)  # lines far beyond the latency: the lines alone
    assert 100.0 < out[2] < 200.0  # equal: between the larger and the sum
    assert max(t_lat[3], t_smem[3]) < out[3] < t_lat[3] + t_smem[3]
    one = terms.one_element_queue(np.array([200.0]), np.array([190.0]), 1, 16 / 3)[0]
    assert one == pytest.approx(200.0)  # one warp has nobody to wait behind: D + Z is its batch


def test_more_warps_with_the_same_lines_each_wait_longer():
    # 5 lines a warp and k step, the latency-bound k step 172 cycles: each added warp adds its lines to the queue
    outs = [terms.one_element_queue(np.array([172.0]), np.array([5.0 * w]), w, 16 / 3)[0] / max(172.0, 5.0 * w)
            for w in (2, 8, 16, 32)]
    assert outs[0] == pytest.approx(1.0, abs=0.01) and all(a < b for a, b in zip(outs, outs[1:]))


def _measured(kernel, m, n):
    rec = json.loads(RECORD.read_text())
    p = next(p for p in rec["points"] if (p["kernel"], p["M"], p["N"]) == (kernel, m, n))
    return 2.0 * m * n * 4096 / (np.median(p["ms"]) * 1e-3) / 1e9


def _predicted(m, n, queue):
    old = terms.ONE_ELEMENT_QUEUE
    terms.ONE_ELEMENT_QUEUE = queue
    try:
        fig = Figures.load("h200")  # the Hopper generation's figures, as `perfmodel predict --device h200`
        cfg = KernelConfig.make("naive", bm=32, bn=32)
        build = facts.for_config(cfg, fig.device.compute_capability)  # the binary's registers and loop
        return predict(fig, cfg, M=m, N=n, K=4096, build=build).gflops
    finally:
        terms.ONE_ELEMENT_QUEUE = old


def test_the_h200_points_docs_model_md_quotes():
    # docs/model.md "One-element kernels: the L1 queue between the waits": 4x4096x4096 +21 -> +9 %
    before, after, meas = _predicted(4, 4096, False), _predicted(4, 4096, True), _measured("naive", 4, 4096)
    assert round(meas, 1) == 313.1
    assert round(100 * (before / meas - 1)) == 21 and round(100 * (after / meas - 1)) == 9
    for m, n in ((1, 4096), (2, 4096), (8, 4096), (1, 8448), (2, 8448), (4, 8448), (8, 8448)):
        b, a, ms = _predicted(m, n, False), _predicted(m, n, True), _measured("naive", m, n)
        assert a <= b + 1e-9  # the queue only adds time
        assert abs(a / ms - 1) <= abs(b / ms - 1) + 0.03, (m, n)
