"""benchmarks/gemv_probe.py's table, replayed on the recorded H200 file (no GPU), and what docs/measurement.md quotes."""
import json
import lzma
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import gemv_probe  # noqa: E402

RECORD = ROOT / "results" / "archive" / "gemv-probe-20261129-h200.json.xz"


def _best():
    d = json.loads(lzma.open(RECORD).read())
    out = {}
    for m in (1, 2, 4, 8):
        rs = [r for r in d["runs"] if r["M"] == m]
        cub = gemv_probe.gflops(next(r for r in rs if r["kernel"] == "cublas"))
        best = max((r for r in rs if r["kernel"] == "gemv"), key=gemv_probe.gflops)
        out[m] = (best, gemv_probe.gflops(best) / cub)
    return d, out


def test_the_recorded_table_comes_back_from_the_record():
    d = gemv_probe.read_record(str(RECORD))
    assert "\n".join(gemv_probe.summary(d)) + "\n" == (RECORD.parent / "gemv-probe-20261129-h200.txt").read_text()


def test_every_configuration_verified_and_timed_fifteen_times():
    d, _ = _best()
    gemv = [r for r in d["runs"] if r["kernel"] == "gemv"]
    # 16 configurations a row count, less those whose shared-memory sum would pass 48 KB (M = 4: float4 with 32 warps;
    # M = 8: float4 with 16 and 32): 16 + 16 + 14 + 12
    assert len(gemv) == 58 and all(r["verified"] for r in gemv)
    assert all(len(r["seconds"]) == 15 for r in d["runs"])


def test_one_kernel_with_k_split_among_a_blocks_warps_beats_cublas_from_two_rows():
    """1 x 4096 x 4096: 0.86x cuBLAS (split_k's pick in the bench: 0.65x); 2 and 4 rows: 2.5x and 2.4x; 8: 1.09x.
    Each the scalar body with 32 warps a block along K."""
    _, best = _best()
    assert 0.80 < best[1][1] < 0.95 and best[2][1] > 2.2 and best[4][1] > 2.2 and 1.0 < best[8][1] < 1.2, best
    assert all(b["vec"] == 1 and b["kw"] == 32 for b, _ in best.values())


def test_bad_arguments_exit_2(capsys, monkeypatch, tmp_path):
    for argv, says in ((["--m", "0"], "--m takes"), (["--n", "4000"], "multiple of 128")):
        monkeypatch.setattr(sys, "argv", ["gemv_probe.py", str(tmp_path / "never.json"), *argv])
        assert gemv_probe.main() == 2
        assert says in capsys.readouterr().err
    existing = tmp_path / "there.json"
    existing.write_text("{}")
    monkeypatch.setattr(sys, "argv", ["gemv_probe.py", str(existing)])
    assert gemv_probe.main() == 2
    assert "exists" in capsys.readouterr().err


def _flush_records():
    return {f: gemv_probe.read_record(str(RECORD.parent / f"gemv-probe-{f}-20261129-h200.json.xz")) for f in ("dirty", "clean")}


def test_the_flush_records_replay_their_tables():
    for f, d in _flush_records().items():
        assert d["flush"] == f
        assert "\n".join(gemv_probe.summary(d)) + "\n" == (RECORD.parent / f"gemv-probe-{f}-20261129-h200.txt").read_text()


def test_a_clean_l2_does_not_speed_the_probe_up():
    """docs/measurement.md: after the flush and a read of its buffer the probe's 30 configurations (16 at one row,
    14 at four) run at 0.85-1.03 of their GFLOPS after the flush alone (median 0.97), every one verified."""
    d = _flush_records()
    key = lambda r: (r["M"], r["vec"], r["kw"], r["ku"])  # noqa: E731
    dirty = {key(r): r for r in d["dirty"]["runs"] if r["kernel"] == "gemv"}
    clean = {key(r): r for r in d["clean"]["runs"] if r["kernel"] == "gemv"}
    assert dirty.keys() == clean.keys() and len(dirty) == 30
    assert all(r["verified"] for r in (*dirty.values(), *clean.values()))
    ratio = sorted(gemv_probe.gflops(clean[k]) / gemv_probe.gflops(dirty[k]) for k in dirty)
    assert 0.84 < ratio[0] and ratio[-1] < 1.04 and 0.95 < ratio[len(ratio) // 2] < 0.99, ratio


def test_the_flush_choice_is_checked(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "argv", ["gemv_probe.py", str(tmp_path / "never.json"), "--flush", "warm"])
    with pytest.raises(SystemExit) as e:  # argparse's choices: exit status 2 and one line naming the allowed values
        gemv_probe.main()
    assert e.value.code == 2
    assert "invalid choice: 'warm'" in capsys.readouterr().err


AGAIN = {n: gemv_probe.read_record(str(RECORD.parent / f"gemv-{n}-20261201-h200.json.xz")) for n in ("probe-again", "pingpong")}


def test_the_2026_12_01_records_replay_their_tables():
    for n, d in AGAIN.items():
        assert "\n".join(gemv_probe.summary(d)) + "\n" == (RECORD.parent / f"gemv-{n}-20261201-h200.txt").read_text()
        assert all(r["verified"] for r in d["runs"] if r["kernel"] == "gemv")
    assert AGAIN["pingpong"]["body"] == "pingpong" and "body" not in AGAIN["probe-again"]


def test_the_probe_comes_back_and_its_ping_pong_body_is_no_faster():
    """docs/measurement.md: the probe's body within 3.1 % of 2026-11-29 at the same configurations; the ping-pong body's
    best at one, two, four and eight rows no faster than the probe's best."""
    first, _ = _best()
    key = lambda r: (r["M"], r["vec"], r["kw"], r["ku"])  # noqa: E731
    before = {key(r): gemv_probe.gflops(r) for r in first["runs"] if r["kernel"] == "gemv"}
    again = [r for r in AGAIN["probe-again"]["runs"] if r["kernel"] == "gemv"]
    assert len(again) == 16 and all(abs(gemv_probe.gflops(r) / before[key(r)] - 1) < 0.032 for r in again)
    for m in (1, 2, 4, 8):
        best = lambda d: max(gemv_probe.gflops(r) for r in d["runs"] if r["kernel"] == "gemv" and r["M"] == m)  # noqa: E731
        assert best(AGAIN["pingpong"]) <= best(AGAIN["probe-again"]), m
