"""cp.async copies on the L1TEX pipe: the measured clocks a copy holds it (memory.async_copy_clocks_by_bytes, from
results/archive/ldgsts-rate-20261206-h100-sxm.json) and what the replay charges async_pipeline's copies (CPU)."""
import json
from pathlib import Path

import pytest

from perfmodel.catalogue import KernelConfig
from perfmodel.devices import datasheet_only, load_device
from perfmodel.model.predict import async_copy_clocks
from perfmodel.model.schedule import simulate

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "results" / "archive" / "ldgsts-rate-20261206-h100-sxm.json"
ARGS = dict(warps_per_block=8, c_ffma=1.0, smem_latency=29, local_latency=33, fixed_latency=4, lds_wavefronts=1.0,
            sts_wavefronts=1.0, share=4.0)


def _copies(width_words: int, n: int = 32) -> dict:
    return dict(id=f"copies-{width_words}-{n}", cls="G" * n, wide=[width_words] * n, deps=[[] for _ in range(n)])


def test_the_generation_figure_is_the_record_s_64_warp_rate():
    """The Hopper generation's figure is what the H100 record gives with the pipe kept busy (64 warps an SM): 4-byte
    copies in the matrix 2.45 clocks, 16-byte ones 3.56; the zero-filled copies (3.50), which a loop program cannot
    tell from the others, are not used; with fewer warps every copy takes longer (the copies in flight bind)."""
    rows = json.loads(RECORD.read_text())["rows"]
    at = {(r["pattern"], r["warps_per_sm"]): r["clocks_per_copy"] for r in rows}
    table = load_device("h100-sxm").memory.async_copy_clocks_by_bytes
    assert table == {"4": pytest.approx(at[("w4", 64)], abs=0.005), "16": pytest.approx(at[("w16", 64)], abs=0.005)}
    for pattern in ("w4", "w4_zero", "w16"):
        clocks = [at[(pattern, w)] for w in (4, 8, 16, 32, 64)]
        assert clocks == sorted(clocks, reverse=True)
    assert at[("w4_zero", 64)] > at[("w4", 64)] > 2.0  # a 4-byte copy holds the pipe more than the one wavefront of its width


def test_only_cp_async_kernels_with_a_measured_generation_take_it():
    h100 = load_device("h100-sxm")
    assert async_copy_clocks(h100, KernelConfig.make("async_pipeline")) == ((1, 2.45), (4, 3.56))
    assert async_copy_clocks(h100, KernelConfig.make("double_buffer")) == ()
    assert async_copy_clocks(datasheet_only(h100), KernelConfig.make("async_pipeline")) == ()  # measured here: not a datasheet figure
    assert async_copy_clocks(load_device("a100"), KernelConfig.make("async_pipeline")) == ()  # nobody measured Ampere's


def test_a_copy_holds_the_pipe_its_measured_clocks_at_least_its_wavefronts():
    """A pass of 32 independent 4-byte copies on a busy pipe takes 2.45 times as long with the measured clocks as with
    one wavefront a copy; 16-byte copies keep their four wavefronts (3.56 clocks is less)."""
    w4, w16 = _copies(1), _copies(4)
    plain = simulate(w4, 8, **ARGS)
    assert simulate(w4, 8, **ARGS, copy_clocks=((1, 2.45), (4, 3.56))) == pytest.approx(2.45 * plain, rel=0.02)
    assert simulate(w16, 8, **ARGS, copy_clocks=((1, 2.45), (4, 3.56))) == simulate(w16, 8, **ARGS)
