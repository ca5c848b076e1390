"""benchmarks/source_kernels.py: its variants change one thing each, its table comes back from the recorded H200
run, and the figures docs/model.md ("Published measurements", naive at M = 1 to 8) quotes are that record's (no GPU)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import source_kernels  # noqa: E402

RUN = ROOT / "results" / "20261202-222500-h200-source-kernels"
RECORD = RUN / "source-kernels.json"


def _gflops(rec, kernel, m, n):
    p = next(p for p in rec["points"] if (p["kernel"], p["M"], p["N"]) == (kernel, m, n))
    return float(np.median(2.0 * p["M"] * p["N"] * p["K"] / (np.asarray(p["ms"]) * 1e-3) / 1e9))


def test_each_variant_changes_one_thing_of_the_source():
    v = source_kernels.variants()
    src = v["src_naive"]
    assert "__restrict__" not in src and "unroll" not in src
    assert v["src_naive_restrict"].count("__restrict__") == 2 and "unroll" not in v["src_naive_restrict"]
    assert v["src_naive_unroll16"].replace('_Pragma("unroll 16") ', "") == src
    assert '#include "common.cuh"' in v["naive"]


def test_every_point_verified_and_timed_seven_times():
    rec = json.loads(RECORD.read_text())
    assert rec["gpu"] == "NVIDIA H200" and rec["launches_per_repeat"] == 50
    assert len(rec["points"]) == 5 * 4 * 2
    assert all(p["verified"] and p["rel_err"] < 1e-4 and len(p["ms"]) == 7 for p in rec["points"])
    spreads = [np.ptp(p["ms"]) / np.median(p["ms"]) for p in rec["points"]]
    assert max(spreads) < 0.003  # "every spread under 0.3 %"


def test_the_figures_the_docs_quote():
    rec = json.loads(RECORD.read_text())
    g = lambda k, m, n=4096: round(_gflops(rec, k, m, n), 1)  # noqa: E731
    assert (g("src_naive", 1), g("naive", 1), g("src_naive_restrict", 1), g("src_naive_unroll16", 1)) == (
        66.3, 94.2, 66.3, 81.5)
    assert g("src_coalesced", 1) == 96.8
    assert round(g("src_naive", 1) / g("naive", 1), 2) == 0.70
    assert round(g("src_naive", 1) / g("src_coalesced", 1), 2) == 0.68
    assert (g("src_naive", 8), g("naive", 8)) == (408.9, 414.8)
    table = source_kernels.table(rec)
    assert "| src_naive | 1x4096x4096 | 128 | yes | 66.3 (66.2-66.3) | 245 |" in table
    assert "| naive | 1x4096x4096 | 128 | yes | 94.2 (94.2-94.3) | 172 |" in table
    assert "| src_naive | 8x4096x4096 | 128 | yes | 408.9 (408.6-408.9) | 317 |" in table
    assert "| naive | 8x4096x4096 | 128 | yes | 414.8 (414.4-415.3) | 313 |" in table
    doc = (ROOT / "docs" / "model.md").read_text()
    for s in ("66.3 GFLOPS (245 SM cycles a k step)", "0.70x the catalogue's 94.2 (172 cycles", "gives 81.5",
              "0.68x on the H200 (66.3 / 96.8)", "(408.9 and 414.8", "317 and 313 cycles"):
        assert s in " ".join(doc.split()), s


def test_the_source_tables_cublas_times():
    # docs/model.md: the A100-PCIe table's cuBLAS rows (published source's README) as times and B's bandwidth
    b = 4096 * 4096 * 4
    for m, gf, us, gbs in ((1, 417.3, 80, 835), (2, 454.2, 148, 454), (4, 932.3, 144, 466), (8, 1837.3, 146, 459)):
        t = 2 * m * 4096 * 4096 / (gf * 1e9)
        assert round(t * 1e6) == us and round(b / t / 1e9) == gbs


def test_bad_input_exits_2_in_one_line(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "source_kernels.py"), *args],
                              capture_output=True, text=True)
    for args, what in ((["--table", str(tmp_path / "none.json")], "is not a file"),
                       ([str(RECORD)], "exists; records are never overwritten"),
                       ([str(tmp_path / "new.json"), "--ms", "0,1"], "not a comma-separated list")):
        r = run(*args)
        assert r.returncode == 2 and what in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = run("--table", str(bad))
    assert r.returncode == 2 and "not a record of this script" in r.stderr


def test_the_table_prints_from_the_record():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "source_kernels.py"), "--table", str(RECORD)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.count("\n") == 3 + 40


@pytest.mark.parametrize("text", ["", "a", "1,-2"])
def test_ints_refuses(text):
    with pytest.raises(SystemExit):
        source_kernels.ints(text)
