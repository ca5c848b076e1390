"""benchmarks/ncu_stall_pcs.py on the CPU: Nsight Compute's source page read back per SASS instruction, the
samples summed by instruction class and stall reason, and the units of the raw page, on the source pages the
lent H100 gave (results/archive/ncu-stall-pcs-20261127-h100-sxm-*)."""
import lzma
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import ncu_stall_pcs  # noqa: E402

ARCHIVE = ROOT / "results" / "archive"


def _summary(name: str) -> dict:
    text = lzma.decompress((ARCHIVE / f"ncu-stall-pcs-20261127-h100-sxm-{name}-1024.csv.xz").read_bytes()).decode()
    rows = ncu_stall_pcs.parse_source_page(text)
    assert rows and all("source" in r for r in rows)
    return ncu_stall_pcs.summarise(rows)


def test_instruction_classes():
    c = ncu_stall_pcs.op_class
    assert [c("@!P0 LDG.E.128 R4, [R2.64]"), c("LDGSTS.E.BYPASS.128 [R1], [R2.64]"), c("FFMA R1, R2, R3, R4"),
            c("BAR.SYNC.DEFER_BLOCKING 0x0"), c("STS.128 [R91+UR6], R36"), c("@P0 BRA 0x7fa3"), c("LDS.128 R8, [R3]")] \
        == ["LDG", "LDGSTS", "FFMA", "BAR", "STS", "other", "LDS"]


def test_the_lone_double_buffered_block_waits_at_its_shared_stores():
    """double_buffer 128 x 64 x 8 (8 x 8), one 4-warp block on each of 128 SMs: the summary is the log's
    (results/archive/ncu-stall-pcs-20261127-h100-sxm-1024.log), and the stores that stage the prefetched
    tile, with the FFMA whose scoreboard wait it shares, hold a third of the samples on the long scoreboard."""
    s = _summary("double-buffer")
    tot = s["total_samples"]
    assert tot == 187181
    share = {k: v["samples"] / tot for k, v in s["by_class"].items()}
    assert round(share["FFMA"], 3) == 0.662 and round(share["STS"], 3) == 0.166 and round(share["LDS"], 3) == 0.053
    assert 0.33 < s["by_reason"]["stall_long_sb"] / tot < 0.37
    top = s["top"][0]
    assert top["source"].split()[0] == "FFMA" and top["reasons"]["stall_long_sb"] > 0.9 * top["samples"]
    assert any(t["source"].split()[0] == "STS.128" for t in s["top"][:3])


def test_warp_tiled_alone_waits_for_its_instructions():
    """warp_tiled's default (a 34 KB loop, one 4-warp block a SM): 16 % of the samples wait for the fetch."""
    s = _summary("warp-tiled")
    assert 0.14 < s["by_reason"]["stall_no_inst"] / s["total_samples"] < 0.18


def test_raw_page_units():
    raw = '"ID","gpu__time_duration.sum","sm__cycles_elapsed.avg"\n"","ms","cycle"\n"0","1.5","3000"\n'
    v = ncu_stall_pcs.raw_values(raw)
    assert v["gpu__time_duration.sum"] == 1500.0 and v["sm__cycles_elapsed.avg"] == 3000.0
    assert ncu_stall_pcs.raw_values("") == {}


def test_warm_profiles_the_second_launch_without_a_flush():
    """--warm: ncu leaves the caches alone and skips the first launch, the child launches each configuration
    twice (benchmarks/ncu_choices.py --child-twice); by default ncu flushes before the one launch it profiles."""
    rep, spec = Path("/tmp/x.ncu-rep"), "double_buffer:"
    cold = ncu_stall_pcs.ncu_command("ncu", rep, (512, 512, 1024), spec)
    warm = ncu_stall_pcs.ncu_command("ncu", rep, (512, 512, 1024), spec, warm=True)
    assert "--cache-control" not in cold and "--launch-skip" not in cold and "--child" in cold
    assert warm[warm.index("--cache-control") + 1] == "none" and warm[warm.index("--launch-skip") + 1] == "1"
    assert warm[warm.index("--launch-count") + 1] == "1" and "--child-twice" in warm and "--child" not in warm
    assert warm[-2:] == cold[-2:] == ["512,512,1024", spec]
