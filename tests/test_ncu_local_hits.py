"""benchmarks/ncu_local_hits.py on the CPU: Nsight Compute's raw page read back per configuration, on the
pages the lent H200 gave (results/archive/ncu-local-hits-*-20261128-h200.csv.xz): async_pipeline's interior
has no local loads, and its guarded edge body's spilled reloads mostly miss L1 (docs/model.md, "Where the
model misses")."""
import lzma
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import ncu_local_hits  # noqa: E402

SPECS = ["async_pipeline:bm=128,bn=128,bk=8,stages=3,tm=8,tn=4,wm=64,wn=64,wn_iter=4",
         "async_pipeline:bm=128,bn=64,bk=16,stages=3,tm=4,tn=4,wm=128,wn=32,wn_iter=2",
         "async_pipeline:bm=256,bn=64,bk=16,stages=2,tm=8,tn=16,wm=128,wn=32,wn_iter=1"]


def _table(k: int) -> list[dict]:
    path = ROOT / "results" / "archive" / f"ncu-local-hits-4096x4096x{k}-20261128-h200.csv.xz"
    return ncu_local_hits.table(lzma.decompress(path.read_bytes()).decode(), SPECS)


def test_the_interior_has_no_local_loads():
    rows = _table(4096)
    assert [r["spec"] for r in rows] == SPECS
    assert all(r["local_sectors"] == 0 for r in rows)
    assert [r["registers"] for r in rows] == [224, 255, 255]
    assert [r["carveout"] for r in rows] == [135168, 200704, 135168]


def test_the_edge_body_reloads_its_spills_mostly_from_beyond_l1():
    inner, edge = _table(4096), _table(4093)
    assert edge[0]["local_sectors"] == 0  # 224 registers, no frame
    assert edge[1]["l1_hit"] == pytest.approx(0.068, abs=0.001) and edge[2]["l1_hit"] == pytest.approx(0.592, abs=0.001)
    assert edge[1]["long_scoreboard"] > 5 * inner[1]["long_scoreboard"]
    ratios = [e["us"] / i["us"] for e, i in zip(edge, inner)]
    assert ratios == pytest.approx([1.14, 1.955, 1.342], abs=0.005)


def test_spilled_tiled_configurations_whose_loops_do_not_reload_their_frames():
    """Six configurations the ten H100 shape runs predict with a local frame (at 4096 on the H200): three of
    the worst predicted (tiled_2d 64 x 32 x 64 2 x 16, +114 %; tiled_2d 128 x 32 x 8 8 x 16; the permuted
    double_buffer) load nothing from local memory in their loops, so their misses are not local memory."""
    specs = ["tiled_2d:bm=64,bn=32,bk=64,tm=2,tn=16", "tiled_2d:bm=64,bn=64,bk=32,tm=16,tn=4",
             "tiled_2d:bm=128,bn=32,bk=8,tm=8,tn=16",
             "double_buffer:bm=128,bn=32,bk=16,tm=4,tn=16,a_transposed=no,b_layout=permuted,frag_width=1,load_width=1,thread_tile=contiguous",
             "warp_tiled:bm=256,bn=128,bk=32,tm=4,tn=8,wm=64,wn=16,wn_iter=1", "tiled_2d:bm=32,bn=32,bk=64,tm=16,tn=2"]
    path = ROOT / "results" / "archive" / "ncu-local-hits-spilled-4096-20261128-h200.csv.xz"
    rows = ncu_local_hits.table(lzma.decompress(path.read_bytes()).decode(), specs)
    assert [r["local_sectors"] == 0 for r in rows] == [True, False, True, True, False, False]
    assert [round(r["l1_hit"], 3) for r in rows if r["local_sectors"]] == [0.833, 0.992, 0.028]
    assert all(r["local_per_copy"] != r["local_per_copy"] for r in rows)  # no cp.async copies: nan
