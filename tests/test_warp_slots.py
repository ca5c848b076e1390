"""benchmarks/warp_slots.py's summary, replayed on the recorded H200 run (no GPU)."""
import json
import lzma
import sys
from math import ceil
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import warp_slots  # noqa: E402

RUN = ROOT / "results" / "archive" / "warp-slots-20261128-h200.json.xz"


def _runs():
    return json.loads(lzma.open(RUN).read())["runs"]


def test_the_recorded_summaries_come_back_from_the_records():
    for r in _runs():
        rec = np.stack([r["smid"], r["slot"], r["start"], r["end"]], axis=1).astype(np.int64)
        s = warp_slots.summarise(rec, r["warps"], r["b"], r["solo_cycles"])
        assert s["sms_overlapped"] == r["sms_overlapped"]
        assert s["sms_uneven"] == r["sms_uneven"]
        if s["sms_overlapped"]:
            assert s["most_per_scheduler"] == r["most_per_scheduler"]
            assert abs(s["time_ratio_median"] - r["time_ratio_median"]) < 1e-9


def test_the_warps_spread_evenly_over_the_schedulers_on_the_h200():
    """What the replay assumes (ceil(b W / 4) warps on the busiest scheduler), as measured."""
    seen = 0
    for r in _runs():
        rec = np.stack([r["smid"], r["slot"], r["start"], r["end"]], axis=1).astype(np.int64)
        s = warp_slots.summarise(rec, r["warps"], r["b"], r["solo_cycles"])
        if s["sms_overlapped"] == 0:
            continue
        seen += 1
        assert s["most_per_scheduler"] == ceil(r["b"] * r["warps"] / 4)
        assert s["sms_uneven"] == 0
    assert seen >= 20


def test_an_uneven_sm_is_counted():
    """Two one-warp blocks on one scheduler (slots 0 and 4) of an SM: the summary says so."""
    rec = np.array([[0, 0, 0, 200], [0, 4, 0, 200], [1, 0, 0, 100], [1, 1, 0, 100]], dtype=np.int64)
    s = warp_slots.summarise(rec, 1, 2, 100.0)
    assert s["sms_overlapped"] == 2 and s["sms_uneven"] == 1 and s["most_per_scheduler"] == 1.5
    assert s["time_ratio_max"] == 2.0
