"""A round's epilogue on the CPU: the writes that reuse a C store's registers (measure.sass.store_reuse_writes) and
benchmarks/epilogue_waits.py on the lent H200's PC sampling of three double_buffer builds at 4096 x 4096 x 64 and
x 512 (results/archive/ncu-stall-pcs-20261202-h200-4096x*), as docs/model.md ("Where the model misses": a fixed
part for every round of blocks) quotes them."""
import sys
from pathlib import Path

import pytest

from perfmodel.measure import sass

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import epilogue_waits as ew  # noqa: E402

needs_sass = pytest.mark.skipif(not sass.available("9.0"), reason="no sm_90 toolchain or nvdisasm here")


def _line(text: str) -> str:
    return f"        /*0000*/                   {text} ;"


def test_a_write_after_a_store_reads_its_registers_is_counted():
    lines = [_line(t) for t in (
        "FFMA R20, R1, R2, R20",                     # 0: before any store: not a reuse
        "STG.E.128 desc[UR8][R6.64], R20",          # 1: reads R20-R23 and the address R6, R7
        "FFMA R23, R1, R2, R30",                     # 2: overwrites a register the store reads
        "FFMA R30, R1, R2, R30",                     # 3: a register no store reads
        "IMAD.WIDE R6, R107, 0x4, R6",               # 4: overwrites the store's address
        "STG.E desc[UR8][R8.64], R40",               # 5: a scalar store reads R40 alone
        "FFMA R41, R1, R2, R41",                     # 6: not read by the scalar store
        "FFMA R40, R1, R2, R41",                     # 7: read by it
    )]
    assert sass.store_reuse_writes(lines) == [2, 4, 7]


def test_the_epilogue_is_the_code_after_the_loop_up_to_exit():
    listing = "\n".join([
        _line("MOV R1, RZ"),
        "        .L_x_1:",
        _line("FFMA R20, R1, R2, R20"),
        _line("FFMA R21, R1, R2, R21"),
        _line("@P0 BRA `(.L_x_1)"),
        _line("STG.E desc[UR8][R6.64], R20"),
        _line("FFMA R20, R1, R2, R21"),
        _line("EXIT"),
        _line("FFMA R21, R1, R2, R6"),  # past EXIT: not the epilogue
    ])
    assert len(sass.epilogue_lines(listing)) == 3
    assert sass.epilogue_store_reuse(listing) == 1
    assert sass.epilogue_store_reuse(_line("EXIT")) is None  # no loop


def _records() -> dict:
    from ncu_choices import parse
    from ncu_stall_pcs import parse_source_page
    import json
    import lzma
    import math

    out = {}
    for K in (64, 512):
        path = ew.ARCHIVE / f"ncu-stall-pcs-20261202-h200-4096x{K}.json"
        d = json.loads(path.read_text())
        for (spec, c), label in zip(d["configs"].items(), ew.LABELS.split(",")):
            rows = parse_source_page(lzma.open(path.with_name(f"{path.stem}-{label}.csv.xz"), "rt").read())
            out[(K, label)] = (ew.analyse(rows, math.ceil(K / parse(spec).bk)), c["us"])
    return out


def test_the_epilogue_waits_the_docs_quote():
    rec = _records()
    # the writes that reuse a store's registers, and every long-scoreboard sample of the epilogue sits at one
    assert {k: a["reuse"] for k, (a, _) in rec.items()} == {
        (K, label): n for K in (64, 512) for label, n in (("double-buffer-16x8", 78), ("double-buffer", 24),
                                                          ("double-buffer-64x128-16x8", 90))}
    assert all(a["reuse_lsb"] == 1.0 for a, _ in rec.values())
    # four rounds of blocks an SM in all three: the epilogue beyond one k-tile at the loop's pace, us a round
    per_round = {k: round(a["excess"] * us / 4, 2) for k, (a, us) in rec.items()}
    assert per_round == {(64, "double-buffer-16x8"): 2.62, (64, "double-buffer"): 1.24, (64, "double-buffer-64x128-16x8"): 2.36,
                         (512, "double-buffer-16x8"): 2.06, (512, "double-buffer"): 0.54, (512, "double-buffer-64x128-16x8"): 1.55}
    a16, ad = rec[(64, "double-buffer-16x8")][0], rec[(64, "double-buffer")][0]
    assert (round(a16["epilogue"], 3), round(a16["epilogue_lsb"], 3), round(a16["prologue_lsb"], 3)) == (0.260, 0.114, 0.040)
    assert (round(ad["epilogue"], 3), round(ad["epilogue_lsb"], 3)) == (0.184, 0.019)
    # the expectation written before the run (the first k-tiles' loads) fails: the prologue's wait is a third of
    # the epilogue's in the 16 x 8 builds, and the loop's own waits are small
    assert a16["prologue_lsb"] < a16["epilogue_lsb"] / 2 and a16["loop_lsb"] < 0.02


@needs_sass
def test_the_local_build_counts_what_ran():
    """nvcc here (13.0) builds the same epilogues as the binaries profiled on the H200."""
    assert [ew.reuse_of("double_buffer", c) for c in ('{"bm": 128, "bn": 128, "bk": 8, "tm": 16, "tn": 8}', "{}",
                                                      '{"bm": 64, "bn": 128, "bk": 8, "tm": 16, "tn": 8}')] == [78, 24, 90]


def test_static_groups_points_by_reuse_and_rounds_a_k_tile(tmp_path, monkeypatch, capsys):
    """--static's tables from a points file, the local build's counts stubbed (no toolchain needed): two or more
    blocks an SM and more than one round, binned by rounds of blocks an SM per k-tile."""
    import csv

    cols = ["kernel", "config", "class", "K", "blocks_per_sm", "waves", "error_pct"]
    pts = [("double_buffer", '{"bk": 8, "tm": 16}', "small_k", 64, 2, 15.5, 12.0),   # 16 rounds / 8 k-tiles
           ("double_buffer", '{"bk": 8, "tm": 16}', "small_k", 64, 2, 15.5, 8.0),
           ("double_buffer", '{"bk": 8}', "small_k", 64, 2, 15.5, 2.0),
           ("double_buffer", '{"bk": 8}', "square", 4096, 2, 3.9, -3.0),            # 4 rounds / 512 k-tiles
           ("double_buffer", '{"bk": 8}', "square", 4096, 1, 3.9, -9.0),            # one block an SM: left out
           ("warp_tiled", "{}", "small_k", 64, 2, 15.5, 1.0)]
    f = tmp_path / "points.csv"
    with f.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerows(pts)
    monkeypatch.setattr(ew, "reuse_of", lambda kernel, config: 78 if "tm" in config else 24)
    assert ew.main(["--static", str(f), "--kernel", "double_buffer"]) == 0
    out = capsys.readouterr().out
    assert "| double_buffer | 30 or more | 0.2 or more | 2 | +10.0 % |" in out
    assert "| double_buffer | under 30 | 0.2 or more | 1 | +2.0 % |" in out
    assert "| double_buffer | under 30 | under 0.05 | 1 | -3.0 % |" in out
    assert "warp_tiled" not in out and "-9.0 % |" not in out.split("rounds a k-tile")[1]


def test_other_tiles_and_kernels_wait_at_the_same_writes():
    """The five recorded small-K configurations sampled at 8192 x 8192 x 64 (…-8192x64-reuse.*): the store-reuse
    writes of the binaries that ran, the share of the epilogue's long-scoreboard samples at them, and double_buffer
    32 x 256's epilogue beyond one k-tile over its 16 rounds; split_k's and the 32 x 64 x 32 tile's two unrolled
    k-tiles leave no loop to pace against."""
    import json
    import lzma
    import math

    from ncu_choices import parse
    from ncu_stall_pcs import parse_source_page

    path = ew.ARCHIVE / "ncu-stall-pcs-20261202-h200-8192x64-reuse.json"
    d = json.loads(path.read_text())
    labels = ["split-k", "double-buffer-32x256-16x8", "double-buffer-32x64x32-contiguous", "warp-tiled-256x256x4",
              "warp-tiled-256x256x8"]
    got = []
    for (spec, c), label in zip(d["configs"].items(), labels):
        rows = parse_source_page(lzma.open(path.with_name(f"{path.stem}-{label}.csv.xz"), "rt").read())
        got.append((ew.analyse(rows, math.ceil(64 / parse(spec).bk)), c["us"]))
    assert [a["reuse"] for a, _ in got] == [22, 82, 39, 68, 130]
    assert [round(a["reuse_lsb"], 2) for a, _ in got] == [1.0, 1.0, 1.0, 0.88, 0.08]
    assert [a["excess"] is None for a, _ in got] == [True, False, True, False, False]
    a, us = got[1]
    assert round(a["excess"] * us / 16, 2) == 1.15
    # the warp_tiled builds wait in their loops (local memory), not their epilogues
    assert all(a["loop_lsb"] > 5 * a["epilogue_lsb"] for a, _ in got[3:])
