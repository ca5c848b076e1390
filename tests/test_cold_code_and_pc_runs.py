"""benchmarks/cold_code.py's summary and benchmarks/pc_runs.py's runs, replayed on the recorded H200 files (no GPU)."""
import json
import lzma
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "results" / "archive"
sys.path.insert(0, str(ROOT / "benchmarks"))
import cold_code  # noqa: E402
import pc_runs  # noqa: E402


def test_the_recorded_cold_code_summaries_come_back_from_the_records():
    d = json.loads(lzma.open(ARCHIVE / "cold-code-20261128-h200.json.xz").read())
    assert len(d["runs"]) == 64
    for r in d["runs"]:
        s = cold_code.summarise(np.asarray(r["records"], dtype=np.int64), r["kb"])
        assert abs(s["cold_per_kb"] - r["cold_per_kb"]) < 1e-9 and abs(s["warm_per_kb"] - r["warm_per_kb"]) < 1e-9


def test_cold_code_costs_about_a_hundred_cycles_a_kb_more_than_warm_up_to_32_kb():
    """What docs/model.md quotes: one warp a scheduler, code flushed from L2, 4-32 KB."""
    d = json.loads(lzma.open(ARCHIVE / "cold-code-20261128-h200.json.xz").read())
    for r in d["runs"]:
        if r["warps"] == 4 and r["state"] == "flushed" and r["kb"] <= 32:
            assert 150 <= r["cold_per_kb"] <= 220 and 64 <= r["warm_per_kb"] <= 95


def test_cold_code_beside_streaming_scalar_loads_is_no_slower():
    """What docs/model.md quotes: with 4 or 16 more warps a block streaming 4-byte loads, a lone warp a scheduler runs
    code flushed from L2 at most 30 cycles a KB above its warm rate (8-16 KB), where alone it pays 80 or more."""
    for name in ("cold-code-loaded-20261129-h200.json.xz", "cold-code-loaded-headstart-20261129-h200.json.xz"):
        d = json.loads(lzma.open(ARCHIVE / name).read())
        for r in d["runs"]:
            s = cold_code.summarise(np.asarray(r["records"], dtype=np.int64), r["kb"])
            if r["warps"] == 4 and r["state"] == "flushed" and r["kb"] in (8, 16):
                extra = s["cold_per_kb"] - s["warm_per_kb"]
                assert (extra >= 80) if r["streamers"] == 0 else (extra <= 30), (name, r["body"], r["kb"], r["streamers"], extra)


def test_a_summary_of_synthetic_records():
    rec = np.array([[0, 0, 2000, 2500], [1, 0, 1000, 1600]], dtype=np.int64)
    s = cold_code.summarise(rec, 10)
    assert s["cold_per_kb"] == 150 and s["cold_per_kb_min"] == 100 and s["warm_per_kb"] == 55


def test_pc_runs_cut_the_edge_body_into_its_loop_and_the_code_run_once():
    instrs = pc_runs.read(ARCHIVE / "ncu-pcs-split-k-edge-1023-cfg0-20261128-h200.csv.xz")
    runs = [r for r in pc_runs.runs(instrs) if r["instructions"] >= 8 and r["executed"] > 0]
    loop = max(runs, key=lambda r: r["executed"])
    assert loop["executed"] == 15360 and loop["instructions"] == 2306  # 1,024 warps x 15 passes of the k-tile loop
    after = next(r for r in runs if r["start_kb"] > loop["start_kb"] and r["executed"] == 1024)
    kb = after["instructions"] * pc_runs.BYTES_PER_INSTRUCTION / 1024
    assert round(after["samples"] / kb) == 57
    interior = pc_runs.runs(pc_runs.read(ARCHIVE / "ncu-pcs-split-k-interior-1024-cfg0-20261128-h200.csv.xz"))
    tail = [r for r in interior if r["executed"] == 1024 and r["instructions"] > 2000]
    assert len(tail) == 1 and round(tail[0]["samples"] / (tail[0]["instructions"] * 16 / 1024)) == 27


def test_pc_runs_merge_equal_counts(tmp_path):
    f = tmp_path / "cfg0-source.csv"
    f.write_text('"Kernel Name","sgemm",\n"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed"\n'
                 '"0x100","A","3","4"\n"0x110","B","1","4"\n"0x120","C","5","8"\n')
    runs = pc_runs.runs(pc_runs.read(f))
    assert [(r["executed"], r["instructions"], r["samples"]) for r in runs] == [(4, 2, 4), (8, 1, 5)]
