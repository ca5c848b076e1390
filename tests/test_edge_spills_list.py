"""benchmarks/edge_spills.py: the recorded points whose edge blocks run a spilling edge body, with both loops'
local bytes read off the archived loop programs of the binaries that ran."""
import json
import sys
from pathlib import Path

import pytest

from perfmodel.catalogue import KernelConfig
from perfmodel.measure import sass

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import edge_spills  # noqa: E402

RUN = ROOT / "results" / "20261124-221444-h100-sxm-shapes-ragged-seed4"


def test_loop_local_bytes_counts_ldl_and_stl_of_one_k_tile():
    cfg = KernelConfig.make("bank_conflict_free", bm=16, bn=256, bk=32, tm=8, tn=8, frag_width=1, load_width=1)
    per_tile = cfg.bm * cfg.bn * cfg.bk // cfg.threads  # 2,048 FFMAs a thread and k-tile
    program = dict(cls="F" * per_tile + "L" * 10 + "K" * 3, wide=[1] * per_tile + [1] * 10 + [2] * 3)
    assert edge_spills.loop_local_bytes(program, cfg) == 4 * 10 + 8 * 3
    twice = dict(cls=program["cls"] * 2, wide=program["wide"] * 2)  # a loop body nvcc unrolled over two k-tiles
    assert edge_spills.loop_local_bytes(twice, cfg) == 4 * 10 + 8 * 3
    assert edge_spills.loop_local_bytes(None, cfg) is None
    assert edge_spills.loop_local_bytes(program, cfg) == sass.local_bytes_per_tile(sass.program_loop_counts(program), cfg)


def test_the_recorded_spilling_edge_bodies_are_read_from_the_binaries_that_ran():
    pts = edge_spills.points(str(RUN))
    assert pts and all(p["frame"] > 0 and p["edge"] is not None and p["interior"] is not None for p in pts)
    worst = max(pts, key=lambda p: p["error"])
    assert (worst["kernel"], worst["shape"]) == ("bank_conflict_free", "ragged-4095x4097x4093")
    assert json.loads(worst["config"])["bm"] == 16 and worst["frame"] == 1256
    assert (worst["interior"], worst["edge"]) == (480, 2028)  # the edge body moves 4.2 x the interior loop's local bytes
    # the measured cycles follow from the point's GFLOPS as the predicted ones from its time
    assert worst["measured_cycles"] / worst["predicted_cycles"] == pytest.approx(1 + worst["error"] / 100, rel=1e-6)
