"""benchmarks/store_chain.py on its recorded H200 runs (no GPU): the per-store cost of a chain beyond the control."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "results" / "archive"
sys.path.insert(0, str(ROOT / "benchmarks"))
import store_chain  # noqa: E402


def _extra(name: str) -> dict:
    rows = json.loads((ARCHIVE / f"{name}.json").read_text())["rows"]
    return {(r["blocks_per_sm"], r["warps"], r.get("busy_warps", 0), r["ring"]) + ((r["busy_load"],) if r.get("busy_load") else ()): e
            for r, e in zip(rows, store_chain.extra_per_store(rows))}


def test_control_is_zero_and_extra_is_the_difference_over_the_stores():
    rows = [dict(blocks_per_sm=1, warps=4, ring=0, exposed_cycles_per_wave=1000.0),
            dict(blocks_per_sm=1, warps=4, ring=1, exposed_cycles_per_wave=1640.0),
            dict(blocks_per_sm=1, warps=8, busy_warps=4, ring=1, exposed_cycles_per_wave=5000.0)]
    assert store_chain.extra_per_store(rows) == [0.0, 20.0, None]  # no ring 0 with 8 store warps and 4 busy


def test_a_lone_warp_pays_for_its_chain_four_warps_do_not():
    few, busy = _extra("store-chain-20261202-h200-few-warps"), _extra("store-chain-20261202-h200-busy4-w1-4")
    assert few[(1, 1, 0, 1)] == pytest.approx(19.9, abs=0.05)
    assert busy[(1, 1, 4, 1)] == pytest.approx(23.6, abs=0.05)
    four = [_extra("store-chain-20261202-h200")[(1, 4, 0, 1)], busy[(1, 4, 4, 1)],
            _extra("store-chain-20261202-h200-busy12-w4")[(1, 4, 12, 1)], _extra("store-chain-20261202-h200-busy0-w4-8")[(1, 4, 0, 1)]]
    assert [round(x, 1) for x in four] == [0.2, -3.6, 0.4, 2.8]
    beside_loads = [_extra("store-chain-20261202-h200-global4-w4-8")[(1, 4, 4, 1, "global")],
                    _extra("store-chain-20261202-h200-global12-w4")[(1, 4, 12, 1, "global")]]
    assert [round(x, 1) for x in beside_loads] == [2.4, 0.0]


def test_table_and_bad_input():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "store_chain.py"), "--table",
                          str(ARCHIVE / "store-chain-20261202-h200-busy12-w4.json")], capture_output=True, text=True, check=True).stdout
    assert "| 1 | 4 | 12 | 1 |" in out and out.rstrip().endswith("| 2.6 |")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "store_chain.py"), "--ring", "3", "x.json"], capture_output=True, text=True)
    assert r.returncode == 2 and "each depth must divide 32" in r.stderr and "Traceback" not in r.stderr
