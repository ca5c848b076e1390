"""benchmarks/split_k_second_kernel.py: its picks, its errors, and the recorded H200 run
replayed on the CPU."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import split_k_second_kernel as sks  # noqa: E402

RECORD = ROOT / "results" / "archive" / "split-k-second-20261203-h200.json"
SCRIPT = ROOT / "benchmarks" / "split_k_second_kernel.py"


def test_the_picks_are_the_bench_runs_split_k_ones():
    p = sks.picks(sks.DEFAULT_BENCH)
    shapes = json.loads((sks.DEFAULT_BENCH / "bench.json").read_text())["shapes"]
    assert len(p) == sum(s["pick"].startswith("split_k ") for s in shapes) == 24


def test_bad_input_exits_2_in_one_line(tmp_path):
    for args in ([str(RECORD)], ["--table", str(tmp_path / "none.json")], [], [str(tmp_path / "x.json"), "--shapes", "-1"],
                 [str(tmp_path / "y.json"), "--bench", str(tmp_path)]):
        r = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 2, args
        assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_recorded_run_every_way_gives_the_launchers_bits_and_pdl_saves_about_a_microsecond():
    rec = json.loads(RECORD.read_text())
    rows = rec["rows"]
    assert len(rows) == 24
    assert all(r["verified"] and len(r["same_bits"]) == 5 and all(r["same_bits"].values()) for r in rows)
    short = [r for r in rows if r["times"]["two"]["median_us"] < 400]
    saved = sorted(r["times"]["two"]["median_us"] - r["times"]["pdl"]["median_us"] for r in short)
    assert len(short) == 17 and 0.6 < saved[0] and saved[-1] < 1.7  # every short pick, 0.67-1.68 us
    second = sorted(r["times"]["two"]["median_us"] - r["times"]["main"]["median_us"] for r in short)
    assert second[0] > 4.0  # the second kernel itself costs every one of them more than that
    s = sks.summary(rec, sks.DEFAULT_BENCH)
    assert s["two"]["corpus"] < 1.0 <= s["pdl"]["corpus"] < 1.005
    assert round(s["pdl"]["corpus"], 3) == 1.002 and round(s["pdl"]["classes"]["skinny_m"], 3) == 0.871
    assert "| pdl+trigger+wide | 0.954 | 1.000 |" in sks.table(rec, sks.DEFAULT_BENCH)


def test_recorded_run_with_the_catalogues_programmatic_launch():
    # the same script once the catalogue's launcher launched the second kernel programmatically on sm_90: the
    # launcher now saves what `pdl` saves against the usual launch (`two`), with the same bits everywhere
    rec = json.loads((ROOT / "results" / "archive" / "split-k-second-20261203b-h200.json").read_text())
    assert rec["validate_launch"] == "programmatic" and len(rec["rows"]) == 24
    assert all(r["verified"] and all(r["same_bits"].values()) for r in rec["rows"])
    short = [r["times"] for r in rec["rows"] if r["times"]["two"]["median_us"] < 400]
    assert len(short) == 17
    d = lambda a, b: sorted(t[a]["median_us"] - t[b]["median_us"] for t in short)  # noqa: E731
    assert abs(d("validate", "pdl")[8]) < 0.3 and 0.9 < d("two", "validate")[8] < 1.7
    s = sks.summary(rec, sks.DEFAULT_BENCH)
    assert s["validate"]["corpus"] >= 1.0 > s["two"]["corpus"]
