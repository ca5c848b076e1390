"""Control-code stall counts in the loop program (nvdisasm -hex) and what the scheduler replay does
with them: a warp alone on its scheduler waits them out, other warps fill those cycles."""
import numpy as np
import pytest

from perfmodel.measure import sass
from perfmodel.model.schedule import simulate

# four instructions of an sm_90 loop as `nvdisasm -hex` prints them (label, then each instruction with
# its low word, its high word on the next line): stall counts 4, 1, 2, 5 (bits 41-44 of the high word)
HEX_LOOP = """.L_x_1:
        /*0100*/                   LDS R4, [R2] ;                      /* 0x0000000002047984 */
                                                                       /* 0x000e280000000800 */
        /*0110*/                   FFMA R6, R4, R5, R6 ;               /* 0x0000000504067223 */
                                                                       /* 0x001fc20000000006 */
        /*0120*/                   IADD3 R2, R2, 0x4, RZ ;             /* 0x0000000402027810 */
                                                                       /* 0x000fe40007ffe0ff */
        /*0130*/                   BRA `(.L_x_1) ;                     /* 0xfffffff000f07947 */
                                                                       /* 0x000fea000383ffff */
"""


def test_stall_counts_are_read_from_the_high_word_of_each_instruction():
    words = [0x000e280000000800, 0x001fc20000000006, 0x000fe40007ffe0ff, 0x000fea000383ffff]
    prog = sass.loop_program(HEX_LOOP)
    assert prog["cls"] == "SFAA"
    assert prog["stall"] == [(w >> 41) & 0xF for w in words] == [4, 1, 2, 5]


def test_a_listing_without_words_gives_no_stall_counts():
    import re

    plain = "\n".join(re.sub(r"\s*/\* 0x[0-9a-f]{16} \*/", "", ln) for ln in HEX_LOOP.splitlines())
    prog = sass.loop_program(plain)
    assert prog is not None and prog["cls"] == "SFAA" and "stall" not in prog


def _chain(stalls):
    """8 independent FFMAs (no dependencies), each with the given stall count."""
    n = len(stalls)
    return dict(id=f"test-{'-'.join(map(str, stalls))}", cls="F" * n, wide=[0] * n, deps=[[] for _ in range(n)], stall=list(stalls))


@pytest.mark.parametrize("warps", [1, 2, 4])
def test_a_lone_warp_waits_out_its_stall_counts_others_fill_them(warps):
    args = dict(warps_per_block=warps, c_ffma=1.0, smem_latency=29.0, local_latency=33.0, fixed_latency=4.0,
                lds_wavefronts=1.0, sts_wavefronts=1.0, share=1.0, passes=4)
    plain = simulate(_chain([1] * 8), warps, **args)
    held = simulate(_chain([3] * 8), warps, **args)
    assert plain == pytest.approx(8 * warps)  # one instruction per cycle either way when nothing holds
    # one warp: 3 cycles per instruction; two: 3 cycles per pair (the other warp issues in between); four: no loss
    assert held == pytest.approx(8 * max(warps, 3), rel=0.01)


def test_programs_without_stall_counts_replay_as_before():
    args = dict(warps_per_block=1, c_ffma=1.5, smem_latency=29.0, local_latency=33.0, fixed_latency=4.0,
                lds_wavefronts=1.0, sts_wavefronts=1.0, share=1.0, passes=4)
    p = _chain([1] * 8)
    q = dict(p, id="test-nostall")
    del q["stall"]
    assert simulate(p, 1, **args) == simulate(q, 1, **args) == pytest.approx(12.0)


def test_the_hex_listing_reads_the_same_facts_as_the_plain_one():
    """Everything but the program's id and its stall counts is the same from both listings (the
    kernels' own loops; needs nvcc and nvdisasm, which the dev install provides through the wheels)."""
    import subprocess

    from perfmodel import KernelConfig
    from perfmodel.measure import build

    exe = sass.find_nvdisasm()
    if exe is None or build.toolchain_for("9.0") is None:
        pytest.skip("no nvdisasm or no toolchain for sm_90 here")
    for cfg in (KernelConfig.make("double_buffer"), KernelConfig.make("tiled_2d", bm=64, bn=16, bk=64, tm=2, tn=8)):
        cubin = str(build.compile_cubin(cfg, "9.0"))
        a = sass.listing_facts(subprocess.run([exe, cubin], capture_output=True, text=True).stdout)
        b = sass.listing_facts(subprocess.run([exe, "-hex", cubin], capture_output=True, text=True).stdout)
        for key in a:
            if key.endswith("loop_program") and a[key] is not None:
                assert {f: a[key][f] for f in ("cls", "wide", "deps")} == {f: b[key][f] for f in ("cls", "wide", "deps")}
                assert len(b[key]["stall"]) == len(b[key]["cls"])
            else:
                assert a[key] == b[key], key


def test_stall_counts_on_the_recorded_shapes_of_few_warps():
    """The H100 shape run's points (three classes, hold-out left out) whose SMs hold at most 8 warps,
    replayed with the archived programs' stall counts and without them: the error must fall."""
    import importlib

    from recorded import shape_run_errors

    sch = importlib.import_module("perfmodel.model.schedule")

    def few_warps(r, p):
        o = p.occupancy
        resident = min(o.blocks_per_sm, -(-p.waves.blocks // 132)) * o.warps_per_sm / max(o.blocks_per_sm, 1)
        return r["loop_program"] and resident <= 8

    def errors():
        return shape_run_errors("results/20261123-185325-h100-sxm-shapes-all", ("large_k", "skinny_n", "small"), few_warps)

    with_stalls = errors()
    orig = sch.simulate

    def no_stalls(program, *a, **k):
        return orig({**{x: v for x, v in program.items() if x != "stall"}, "id": program["id"] + "-nostall"}, *a, **k)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sch, "simulate", no_stalls)
        sch._cached.cache_clear()
        without = errors()
    sch._cached.cache_clear()
    assert with_stalls.keys() == without.keys() and len(with_stalls) >= 60
    a, b = np.array(list(with_stalls.values())), np.array([without[k] for k in with_stalls])
    assert np.abs(a).mean() < np.abs(b).mean() and a.mean() < b.mean()
