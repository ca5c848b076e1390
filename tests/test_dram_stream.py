"""benchmarks/dram_stream.py's tables, replayed from the recorded H200 files (no GPU), and what docs/measurement.md
("The probe's loop is not what holds it; the flush's dirty lines are") reads from them."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
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


DIRTY, CLEAN = (str(ARCHIVE / f"dram-stream-{s}-20261201-h200.json.xz") for s in ("dirty", "clean"))


def test_the_h200_device_files_write_back_comes_from_the_records(capsys, monkeypatch):
    """devices/h200.toml's memory.flush_writeback_us_by_MiB is what `dram_stream.py --writeback` prints from the two
    recorded states; records in the wrong order are one line, exit 2."""
    from perfmodel import load_device

    got = dram_stream.writeback_table(_record(NAMES[1]), _record(NAMES[2]))
    assert got == load_device("h200").memory.flush_writeback_us_by_MiB
    assert list(got) == ["2", "8", "32", "64", "128", "512"]
    vals = list(got.values())
    assert all(a < b for a, b in zip(vals[:5], vals[1:5])) and vals[-1] >= 0.95 * vals[-2]  # grows, then stays
    monkeypatch.setattr(sys, "argv", ["dram_stream.py", "--writeback", CLEAN, DIRTY])
    assert dram_stream.main() == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_the_write_back_term_reads_its_table():
    from perfmodel.model import terms

    table = {"2": 0.48, "8": 1.22, "64": 5.73, "512": 7.84}
    mib = 2.0**20
    got = terms.flush_writeback_us(np.array([0.0, 1 * mib, 2 * mib, 16 * mib, 64 * mib, 4096 * mib]), table)
    assert np.allclose(got, [0.0, 0.24, 0.48, 1.22 + (5.73 - 1.22) / 3, 5.73, 7.84])  # 16 MiB: a third of the way in log2 from 8 to 64
    assert np.all(terms.flush_writeback_us(np.array([64 * mib]), None) == 0.0)


def test_the_write_back_slows_a_dram_bound_h200_point_and_nothing_where_nobody_measured_it(monkeypatch):
    """terms.FLUSH_WRITEBACK is on in the shipped model: split_k at 4096 x 16 x 4096 (A: 64 MiB from DRAM) is
    DRAM-bound, and with the H200's table its predicted time grows by about the table's microseconds at its reads;
    without the table, or with the term off, it is the prediction without it; the H100 (its own table) adds about
    its own table's figure, a device nobody measured (the A100) and the datasheet mode (a figure measured here)
    nothing."""
    from perfmodel import KernelConfig
    from perfmodel.model import terms
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    cfg = KernelConfig.make("split_k", bm=128, bn=16, bk=16, tm=8, tn=8, splits=16)
    cal = Figures.load("h200", calibration=ROOT / "results" / "20261129-100908-h200-shapes-skinny-n-seed12" / "calibration.toml")
    assert terms.FLUSH_WRITEBACK  # the shipped model
    monkeypatch.setattr(terms, "FLUSH_WRITEBACK", False)
    off = predict(cal, cfg, M=4096, N=16, K=4096)
    assert off.flush_writeback_us == 0.0
    monkeypatch.setattr(terms, "FLUSH_WRITEBACK", True)

    dev = cal.device
    bare = Figures(dev.model_copy(update={"memory": dev.memory.model_copy(update={"flush_writeback_us_by_MiB": None})}),
                   calibrated=True)
    with_term, without = (predict(f, cfg, M=4096, N=16, K=4096) for f in (cal, bare))
    assert with_term.bound == without.bound == "dram"
    assert 5.0 < with_term.flush_writeback_us < 8.0 and without.flush_writeback_us == 0.0
    grew = (with_term.time_s - without.time_s) * 1e6
    assert 1.0 < grew < 1.25 * with_term.flush_writeback_us, grew  # the dram term of a partial wave, not exactly its bytes
    assert without.time_s == off.time_s
    assert 7.0 < predict(Figures.load("h100-sxm"), cfg, M=4096, N=16, K=4096).flush_writeback_us < 9.5
    assert predict(Figures.load("a100"), cfg, M=4096, N=16, K=4096).flush_writeback_us == 0.0
    assert predict(Figures.load("h200", figures="datasheet"), cfg, M=4096, N=16, K=4096).flush_writeback_us == 0.0


H100 = [tuple(_record(f"dram-stream-{s}-20261205-h100-sxm-{i}") for s in ("dirty", "clean")) for i in (1, 2)]


def test_the_h100_device_files_write_back_comes_from_its_records():
    """devices/h100-sxm.toml's table is `--writeback` of the first H100 pair (2026-12-05). What was written before
    it ran (memory-checks-expected-20261205-h100-sxm.txt): the H200's shape, a plateau of 7-12 us at 128 and 512
    MiB (0.57 of writing the H100's 50 MB of dirty lines back) and 0.3-1.2 us at 2 MiB. Both pairs hold it, and
    the second is within 1 us of the first at every size."""
    from perfmodel import load_device

    first, second = (dram_stream.writeback_table(d, c) for d, c in H100)
    assert first == load_device("h100-sxm").memory.flush_writeback_us_by_MiB
    for t in (first, second):
        assert all(7.0 <= t[k] <= 12.0 for k in ("128", "512")) and 0.3 <= t["2"] <= 1.2
        vals = [t[k] for k in ("2", "8", "32", "64")]
        assert all(a < b for a, b in zip(vals, vals[1:]))
    assert max(abs(first[k] - second[k]) for k in first) < 1.0
    # the H100's plateau is the H200's or a little more: a smaller L2 of dirty lines, a slower bus to write them on
    h200 = load_device("h200").memory.flush_writeback_us_by_MiB
    assert 1.0 <= first["512"] / h200["512"] <= 1.3


@pytest.mark.parametrize("name", [f"dram-stream-{s}-20261205-h100-sxm-{i}" for s in ("dirty", "clean") for i in (1, 2)])
def test_each_h100_table_comes_back_from_its_record(name):
    assert "\n".join(dram_stream.summary(_record(name))) + "\n" == (ARCHIVE / f"{name}.txt").read_text()


def test_the_write_back_is_bus_time_and_follows_the_reads():
    """dram_bus_bytes: the kernel's reads and the write-back cross one bus, so the dram term is at least their sum at
    the whole bandwidth: a grid that keeps every SM busy and the bus full pays the whole write-back; a grid of few
    blocks, or one whose loads are too few in flight to fill the bus (its Little's-law fraction under 1), leaves bus
    time free beside its reads, which the write-back fills first. And the table is read at the kernel's DRAM reads:
    split_k's partials are C stores, whose evictions are already its C bytes."""
    from perfmodel import KernelConfig
    from perfmodel.model import terms
    from perfmodel.model.figures import Figures
    from perfmodel.model.predict import predict

    bus = terms.dram_bus_bytes(np.array([1e6, 1e6, 1e6, 2e6]), np.array([8e6, 8e6, 8e6, 8e6]), np.array([132, 500, 66, 66]), 132)
    assert np.allclose(bus, [9e6, 9e6, 4.5e6, 5e6])
    # the dram term of one tile: b = 1 block, 1000 B of reads, the write-back 500 B at the stream rate, 10 B/clk
    one = np.ones(1)
    work = terms.TileWork(ffma=one, other=one, smem_wavefronts=one, l2_bytes=one, dram_bytes=1000 * one, local_bytes=0 * one,
                          local_level=one, warps=one, mem_latency=one, kind=one, exposed_k=one, dram_bus_bytes=1500 * one)
    rates = terms.SMRates(schedulers=4.0, lanes=128.0, smem_bpc=128.0, l2_bpc=10.0, dram_bpc=10.0, port_bpc=None, smem_latency=30.0)

    def t_dram(f_dram, bus_bytes):
        w = dataclasses.replace(work, dram_bus_bytes=bus_bytes * one)
        f = terms.Fractions(fma=one, smem=one, l2=one, dram=f_dram * one)
        return float(terms.tile_cycles(1, w, rates, f, c_ffma=1.0)[0][terms.TERMS.index("dram")][0])

    assert t_dram(1.0, 1500) == pytest.approx(150)  # a full bus: reads and write-back one after the other
    assert t_dram(0.5, 1500) == pytest.approx(200)  # loads too few in flight: the write-back hides beside them
    assert t_dram(0.5, 0) == pytest.approx(200) and t_dram(1.0, 0) == pytest.approx(100)  # nothing written back
    cal = Figures.load("h100-sxm")
    table = cal.effective.memory.flush_writeback_us_by_MiB
    # 512^3 in 16 slices: 2 MiB of A and B read, 16 MiB of partials stored; the table at the reads
    p = predict(cal, KernelConfig.make("split_k", bm=128, bn=128, bk=8, tm=8, tn=16, splits=16), M=512, N=512, K=512)
    assert p.flush_writeback_us == pytest.approx(table["2"])  # not the table at the 18 MiB with the partials
    assert table["2"] < float(terms.flush_writeback_us(np.array([18 * 2**20]), table)[0])
