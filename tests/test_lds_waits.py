"""Shared loads waited for soon after they issue, on the CPU: the control word's fields (measure.sass.control_codes),
benchmarks/lds_waits.py's tight waits, and its reading of the lent H200's PC sampling of split_k 64 x 256 with
bk = 16 and 8 (results/archive/ncu-lds-waits-20261202-h200*), as docs/model.md ("Where the model misses") quotes it."""
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.measure import sass

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import lds_waits as lw  # noqa: E402

needs_sass = pytest.mark.skipif(not sass.available("9.0"), reason="no sm_90 toolchain or nvdisasm here")
RECORD = ROOT / "results" / "archive" / "ncu-lds-waits-20261202-h200.json"


def _lines(pairs):
    out = []
    for text, word in pairs:
        out.append(f"        /*0000*/                   {text} ;      /* 0x0000000000000000 */")
        out.append(f"                                                  /* 0x{word:016x} */")
    return out


def test_the_control_word_gives_stall_scoreboards_and_wait_mask():
    # words of nvcc 13.0's sm_90 split_k 64 x 256 x 16 loop: an LDS.128 releasing scoreboard 0 (stall 4), one
    # waiting on scoreboard 1 (stall 4, no scoreboard of its own) and an FFMA waiting on scoreboard 0
    codes = sass.control_codes(_lines([("LDS.128 R76, [R169]", 0x000E280000000C00),
                                       ("LDS.128 R64, [R185]", 0x002FE80000000C00),
                                       ("FFMA R167, R76.reuse, R64, R167", 0x041FE200000000A7)]))
    assert codes == [dict(stall=4, write=0, read=7, wait=0), dict(stall=4, write=7, read=7, wait=2),
                     dict(stall=1, write=7, read=7, wait=1)]
    assert sass.control_codes(["        /*0000*/                   FFMA R1, R2, R3, R1 ;"]) is None  # no -hex words


def test_a_wait_is_tight_below_the_ffmas_after_its_shared_load():
    texts = ["LDS.128 R4, [R1]", "FFMA R8, R4, R5, R8", "FFMA R9, R4, R5, R9", "LDS.128 R12, [R1+0x10]",
             "FFMA R10, R12, R5, R10", "FFMA R11, R4, R5, R11", "FFMA R20, R4, R5, R20", "FFMA R21, R4, R5, R21",
             "FFMA R22, R4, R5, R22", "FFMA R23, R4, R5, R23", "FFMA R24, R12, R13, R24"]
    none = dict(stall=1, write=7, read=7, wait=0)
    codes = [dict(none, write=0), dict(none, wait=1), none, dict(none, write=1), dict(none, wait=2),
             none, none, none, none, none, dict(none, wait=1)]
    w = lw.tight_waits(texts, codes, ffmas=4)
    # 1 waits on the load just before it (0 FFMAs between), 4 on the load just before it (0), 10 on scoreboard 0,
    # last set by the load at 0 with 8 FFMAs between: a wait on a shared load, tight only below 9
    assert w["lds"] == {1: 0, 4: 0, 10: 8}
    assert w["tight"] == {1: 0, 4: 0}
    assert lw.tight_waits(texts, codes, ffmas=9)["tight"] == {1: 0, 4: 0, 10: 8}


def test_bad_ffmas_exits_2_without_a_traceback():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lds_waits.py"), "--ffmas", "0", "double_buffer:"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--ffmas must be at least 1" in r.stderr and "Traceback" not in r.stderr


@needs_sass
def test_the_tight_waits_hold_bk16s_short_scoreboard_samples(capsys):
    assert lw.record(f"{RECORD}:split-k-bk16,split-k-bk8", 4) == 0
    rows = [ln.split(" | ") for ln in capsys.readouterr().out.splitlines() if ln.startswith("| split_k")]
    by = {}
    for r in rows:  # the first table's row of each (the second holds the samples by distance)
        by.setdefault(r[0].lstrip("| "), r)
    bk16, bk8 = by["split_k:bm=64,bn=256,bk=16,tm=16,tn=8,splits=16"], by["split_k:bm=64,bn=256,bk=8,tm=16,tn=8,splits=16"]
    assert (bk16[1], bk16[3], bk16[4], bk16[5], bk16[6].rstrip(" |")) == ("420", "0.092", "10 of 2222", "0.100", "0.686")
    assert (bk8[1], bk8[3], bk8[4], bk8[5], bk8[6].rstrip(" |")) == ("363", "0.033", "1 of 1116", "0.013", "0.249")


def test_in_step_warps_wait_together():
    # a shared load, an instruction that reads it, then 62 independent ones. Alone a warp waits out the load's
    # latency each pass; two warps in step issue every instruction twice and wait together, once a pass; on their
    # own they can do no worse
    from perfmodel.model import schedule

    n = 64
    deps = [[] for _ in range(n)]
    deps[1] = [1]
    prog = dict(id="in-step-test", cls="S" + "A" * (n - 1), wide=[1] + [0] * (n - 1), deps=deps)
    args = (1, 1.0, 100.0, 30.0, 4.0, 1.0, 1.0, 1.0)
    one = schedule.simulate(prog, 1, *args)
    lock = schedule.simulate(prog, 2, *args, in_step=True)
    own = schedule.simulate(prog, 2, *args)
    assert one == pytest.approx(100 + n - 1, abs=2)
    assert lock == pytest.approx(100 + 2 * (n - 1), abs=3)
    assert own <= lock + 1
    assert schedule.simulate(prog, 1, *args, in_step=True) == one  # one warp: nothing to keep in step


@needs_sass
def test_replayed_in_step_bk16_pays_for_its_tight_waits(capsys):
    assert lw.main(["--replay", "split_k:bm=64,bn=256,bk=16,tm=16,tn=8,splits=16",
                    "split_k:bm=64,bn=256,bk=8,tm=16,tn=8,splits=16"]) == 0
    rows = [ln.split(" | ") for ln in capsys.readouterr().out.splitlines() if ln.startswith("| split_k")]
    assert [r[2:5] for r in rows] == [["199.3", "322.1", "379.6"], ["178.9", "315.2", "337.7"]]


def test_bad_latency_exits_2():
    assert lw.main(["--replay", "--latency", "-5", "double_buffer:"]) == 2


@pytest.mark.parametrize("args, says", [
    (["--record", "/nonexistent/record.json"], "no such file"),
    (["--points", "/nonexistent/points.csv"], "no such file"),
    (["double_buffer:bm=7"], "invalid double_buffer configuration"),
])
def test_bad_files_and_configurations_exit_2_in_one_line(args, says):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lds_waits.py"), *args], capture_output=True, text=True)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr


def test_one_and_two_warps_a_scheduler_as_docs_quote_them():
    """results/20261202-163645-h200-one-two-warps: cycles a k step of a scheduler (the time between K = 16,384 and
    32,768 over the k steps a block adds, at 1,980 MHz), one block an SM (8 slices) and two (16)."""
    import json

    m = json.loads((ROOT / "results" / "20261202-163645-h200-one-two-warps" / "raw.json").read_text())["measurements"]
    t = {(p["config"]["bk"], p["config"]["splits"], p["K"]): p["timing"]["median_ms"] * 1e3
         for p in m if p["kernel"] == "split_k" and p["verified"]}
    step = {(bk, s): (t[(bk, s, 32768)] - t[(bk, s, 16384)]) / (16384 / s) * 1980 for bk in (8, 16) for s in (8, 16)}
    assert [round(step[k], 1) for k in ((16, 8), (16, 16), (8, 8), (8, 16))] == [332.1, 394.9, 275.5, 338.8]
    assert step[(16, 16)] / step[(8, 16)] == pytest.approx(1.166, abs=0.001)


def test_scoreboard_waits_hold_every_load_pending_on_the_scoreboard():
    # two shared loads release scoreboard 0; an FFMA reads only the first load's register but waits on scoreboard 0,
    # so the hardware holds it for both loads; an add two before it stays a fixed-latency dependency
    prog = dict(cls="SSAF", deps=[[], [], [], [3, 1]])
    none = dict(stall=1, write=7, read=7, wait=0)
    codes = [dict(none, write=0), dict(none, write=0), none, dict(none, wait=1)]
    assert lw.scoreboard_deps(prog, codes) == [[], [], [], [1, 2, 3]]
    codes[3] = none  # no wait: the loads are nobody's dependency, the add still is
    assert lw.scoreboard_deps(prog, codes)[3] == [1]


PADDED_B = ROOT / "results" / "archive" / "ncu-stall-pcs-padded-b-20261204-h200.json"
PICK = "double_buffer:bm=128,bn=128,bk=8,tm=16,tn=8"


@needs_sass
def test_the_picks_short_scoreboard_samples_by_distance_as_docs_quote_them(capsys):
    # the lent H200's PC sampling of the pick and its padded-B twin at 4096³: the plain loop's four waits 16-31
    # FFMAs after their shared load hold 46 % of its short-scoreboard samples, the padded loop's three 4 %
    assert lw.record(f"{PADDED_B}:plain,padded", 4) == 0
    rows = [ln.split(" | ") for ln in capsys.readouterr().out.splitlines() if ln.startswith("| double_buffer")]
    plain, padded = rows[2], rows[3]
    assert plain[0] == f"| {PICK}" and "b_layout=padded" in padded[0]
    assert plain[1:7] == ["2, 6356, 0.27, 3642", "2, 4090, 0.17, 2916", "0, 0, 0.00, 0", "4, 10870, 0.46, 4777",
                          "18, 2057, 0.09, 412", "10, 189, 0.01, 36 |"]
    assert padded[4] == "3, 676, 0.04, 414"


def test_the_overlap_run_measured_49_configurations_with_b_plain_and_padded():
    found = lw.layout_pairs(ROOT / "results" / "20261204-062421-h200-tune-overlap")
    assert len(found) == 49
    pick = next(r for r in found if r[0] == "double_buffer:bk=8,bm=128,bn=128,tm=16,tn=8")
    assert pick[1] == "double_buffer:b_layout=padded,b_pad=4,bk=8,bm=128,bn=128,tm=16,tn=8"
    assert pick[2] == pytest.approx(1.039, abs=0.0005) and pick[3] == (4096, 4096, 4096)


@needs_sass
def test_the_scoreboards_widen_the_picks_in_step_gap_to_its_padded_twin():
    plain, padded = lw.replay_cycles(PICK), lw.replay_cycles(PICK + ",b_layout=padded,b_pad=4")
    assert round(plain["own"], 1) == 318.3 and round(padded["own"], 1) == 315.9
    assert round(plain["in_step"], 1) == 340.6 and round(plain["in_step_sb"], 1) == 347.0
    assert padded["in_step_sb"] == padded["in_step"] and round(padded["in_step"], 1) == 337.2


def test_pairs_needs_a_results_folder():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lds_waits.py"), "--pairs", "/nonexistent"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "no such results folder" in r.stderr and "Traceback" not in r.stderr


def test_pairs_names_a_missing_calibration():
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lds_waits.py"), "--pairs",
                        str(ROOT / "results" / "20261204-062421-h200-tune-overlap"), "--calibration", "/nonexistent.toml"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "--calibration /nonexistent.toml: no such file" in r.stderr and "Traceback" not in r.stderr


def test_the_model_has_the_padded_twin_slower_where_it_measured_faster():
    # the pick and its padded-B twin at four sizes (results/20261204-063100-h200-padded-b): measured 2.3-4.1 % faster
    # padded, predicted from the binaries with the bench run's calibration 0.8 % slower at every size
    run = ROOT / "results" / "20261204-063100-h200-padded-b"
    found = lw.layout_pairs(run)
    assert len(found) == 4 and all(1.02 < measured < 1.05 for _, _, measured, _ in found)
    predicted = lw._predicted(run, ROOT / "results" / "20261204-015443-h200-bench-all" / "calibration.toml")
    for plain, padded, _, mnk in found:
        assert predicted[(padded, mnk)] / predicted[(plain, mnk)] == pytest.approx(0.992, abs=0.002)


def test_in_step_as_the_ranking_rule_on_a_recorded_tuning_run(capsys):
    # results/20261128-155115-h200-tune-seed1 (20 points at 4096, the model's top 10 and 10 at random) with the bench
    # run's calibration, as docs/measurement.md quotes it: in step the level drops by about 6 points of bias while the
    # first measured becomes the fastest; the model's rule keeps the level. Before each shared load took its own
    # wavefronts in the replay (docs/model.md) the row read 4.07 % (-2.39 %), 0.890 | 8.18 % (-8.13 %), 0.962; before
    # cp.async copies took their measured clocks, 4.26 % (-2.06 %); before packed blocks' compute phase was replayed
    # apart (schedule.BLOCKS_APART), 4.26 % (-2.07 %)
    assert lw.main(["--rank", str(ROOT / "results" / "20261128-155115-h200-tune-seed1"), "--calibration",
                    str(ROOT / "results" / "20261204-015443-h200-bench-all" / "calibration.toml")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| 20261128-155115"))
    assert row == ("| 20261128-155115-h200-tune-seed1 | 20 | 4.11 % (-1.91 %), 0.896, 2.9 % "
                   "| 8.54 % (-8.49 %), 0.980, 0.0 % |")


def test_rank_says_in_one_line_what_is_wrong_with_a_file(tmp_path):
    bad_toml = tmp_path / "cal.toml"
    bad_toml.write_text("x = [\n")
    bad_run = tmp_path / "run"
    bad_run.mkdir()
    (bad_run / "raw.json").write_text("{\n")
    for args, says in ((["--rank", str(ROOT / "results" / "20261128-155115-h200-tune-seed1"), "--calibration", str(bad_toml)],
                        "not a perfmodel calibrate file"), (["--rank", str(bad_run)], "is not valid JSON")):
        r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lds_waits.py"), *args], capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, says", [
    (["--rank", "/nonexistent"], "--rank /nonexistent: not a recorded run"),
    (["--rank", str(ROOT / "results" / "20261128-155115-h200-tune-seed1"), "--calibration", "/nonexistent.toml"],
     "--calibration /nonexistent.toml: no such file"),
])
def test_rank_names_what_is_missing(args, says):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "lds_waits.py"), *args], capture_output=True, text=True)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr
