"""benchmarks/dram_stream.py's tables, replayed from the recorded H200 files (no GPU), and what docs/measurement.md
("The probe's loop is not what holds it; the flush's dirty lines are") reads from them."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import dram_stream  # noqa: E402

ARCHIVE = ROOT / "results" / "archive"
NAMES = ("dram-stream-20261201-h200", "dram-stream-dirty-20261201-h200", "dram-stream-clean-20261201-h200",
         "dram-stream-reads-20261201-h200")


def _record(name: str) -> dict:
    return dram_stream.read_record(str(ARCHIVE / f"{name}.json.xz"))


def _excess_us(d: dict) -> dict:
    """(kernel, MiB) -> microseconds beyond the launch and the bytes at the 4 GiB read's rate."""
    launch = dram_stream.seconds(next(r for r in d["runs"] if r["kernel"] == "empty"))
    rate = dram_stream.stream_rate(d)
    return {(r["kernel"], r["bytes"] >> 20): (dram_stream.seconds(r) - launch - r["bytes"] / rate) * 1e6
            for r in d["runs"] if r["kernel"] != "empty"}


@pytest.mark.parametrize("name", NAMES)
def test_each_recorded_table_comes_back_from_its_record(name):
    assert "\n".join(dram_stream.summary(_record(name))) + "\n" == (ARCHIVE / f"{name}.txt").read_text()


def test_the_flush_dirty_lines_cost_a_read_microseconds_a_clean_l2_does_not():
    dirty, clean, reads = (_excess_us(_record(n)) for n in NAMES[1:])
    # clean and other-data states: about a microsecond beyond launch + bytes at the stream rate, whatever the size
    for ex in (clean, reads):
        assert all(v < 2.1 for (k, mb), v in ex.items() if mb < 4096), ex
    # after the flush: the excess grows with the bytes read up to about the L2 (60 MiB), then stays
    lin = {mb: dirty[("linear", mb)] - clean[("linear", mb)] for mb in (2, 8, 32, 64, 128, 512)}
    assert lin[2] < lin[8] < lin[32] < lin[64] < lin[128], lin
    assert 5.0 < lin[64] < 6.5 and 6.0 < lin[512] < 8.5, lin
    # less than writing the L2's 60 MiB back at the stream rate: part of it overlaps the reads
    rate = dram_stream.stream_rate(_record(NAMES[1]))
    assert max(lin.values()) < 60 * 2**20 / rate * 1e6


def test_the_probes_column_map_reads_as_fast_as_a_linear_read():
    for name in NAMES:
        d = _record(name)
        col = next(r for r in d["runs"] if r["kernel"] == "columns" and r["blocks"] == 128)
        lin = next(r for r in d["runs"] if r["kernel"] == "linear" and r["bytes"] == 64 << 20)
        assert col["bytes"] == lin["bytes"]
        assert abs(dram_stream.seconds(col) / dram_stream.seconds(lin) - 1) < 0.06, name


def test_the_first_call_and_the_dirty_state_agree():
    a, b = (_record(n) for n in NAMES[:2])
    ta = {(r["kernel"], r["bytes"], r["blocks"]): dram_stream.seconds(r) for r in a["runs"]}
    tb = {(r["kernel"], r["bytes"], r["blocks"]): dram_stream.seconds(r) for r in b["runs"]}
    common = set(ta) & set(tb)
    assert len(common) >= 8
    assert max(abs(ta[k] / tb[k] - 1) for k in common if k[0] != "empty") < 0.01


def test_bad_arguments_exit_2(capsys, monkeypatch, tmp_path):
    for argv, says in ((["--mb", "0"], "--mb takes"), (["--mb", "64"], "must hold 4096"),
                       (["--columns-n", "100"], "multiples of 32")):
        monkeypatch.setattr(sys, "argv", ["dram_stream.py", str(tmp_path / "never.json"), *argv])
        assert dram_stream.main() == 2
        assert says in capsys.readouterr().err
    existing = tmp_path / "there.json"
    existing.write_text("{}")
    monkeypatch.setattr(sys, "argv", ["dram_stream.py", str(existing)])
    assert dram_stream.main() == 2
    assert "exists" in capsys.readouterr().err
