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
