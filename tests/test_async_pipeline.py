"""async_pipeline (kernels/11_async_pipeline.cu): warp tiles fed by cp.async into a ring of `stages` shared-
memory buffers, compute capability 8.0 and newer. Its constraints, where it applies, and what the model
counts for it (no GPU)."""
import pytest

from perfmodel.catalogue import KernelConfig, get_kernel, not_applicable, runs_on
from perfmodel.choose import choose
from perfmodel.cli import main
from perfmodel.devices import load_device, shipped_devices
from perfmodel.measure.build import defines
from perfmodel.model.figures import Figures
from perfmodel.facts import BuildFacts
from perfmodel.model.predict import Problem, predict, predict_batch
from perfmodel.model.smem_banks import smem_counts


def test_it_applies_from_compute_capability_8_0():
    spec = get_kernel("async_pipeline")
    for name in shipped_devices():
        dev = load_device(name)
        old = dev.compute_capability in ("5.0", "6.1", "7.0", "7.5")
        assert runs_on(spec, dev.compute_capability) is not old, name
        why = not_applicable(spec, dev)
        assert (why is not None) is old and (not old or "needs compute capability 8.0" in why)
    assert all(runs_on(get_kernel(k), "5.0") for k in ("double_buffer", "warp_tiled", "split_k"))


def test_predict_refuses_it_before_ampere_in_one_line(capsys):
    assert main(["predict", "--device", "v100", "--kernel", "async_pipeline"]) == 2
    err = capsys.readouterr().err
    assert "async_pipeline needs compute capability 8.0 or newer (cp.async); v100 has 7.0" in err
    assert len(err.strip().splitlines()) == 1


def test_choose_lists_it_as_not_applicable_with_the_reason():
    ch, rk = choose(Figures.load("v100", figures="datasheet"), Problem(1024, 1024, 1024), runners=1, sass_top=0)
    assert "async_pipeline" not in {c.kernel for c in rk.configs}
    assert "needs compute capability 8.0" in ch.not_applicable["async_pipeline"]


@pytest.mark.parametrize("params,message", [
    (dict(stages=1), "stages=1 must be 2 to 4"),
    (dict(stages=5), "stages=5 must be 2 to 4"),
    (dict(tn=2, wn_iter=8), "tn=2 is not a multiple of 4"),
    (dict(bk=6), "bk=6 is not a multiple of 4"),
])
def test_bad_configurations_say_why(params, message):
    with pytest.raises(Exception) as e:
        KernelConfig.make("async_pipeline", **params)
    assert message in str(e.value)


def test_the_ring_sets_shared_memory_registers_and_the_macro():
    cfg = KernelConfig.make("async_pipeline")  # 128 x 128 x 8, three stages
    assert cfg.buffers == 3 and cfg.smem_bytes == 3 * (128 * (8 + 4) + 8 * 128) * 4 == 30720
    assert "-DSTAGES=3" in defines(cfg)
    # no staging registers (cp.async), four k steps of A per fragment read (LDS.128 along k)
    wt = KernelConfig.make("warp_tiled", bk=8)
    assert cfg.estimated_registers() == wt.estimated_registers() - (128 * 8 + 8 * 128) // 128 + 3 * 8
    # too deep a ring for static shared memory is refused on the device
    deep = KernelConfig.make("async_pipeline", bk=16, stages=4)
    assert any(n == "smem_per_block" for n, _ in deep.device_violations(load_device("h100-sxm")))


def test_shared_memory_counts_follow_the_layout():
    """Per warp and k-tile of bk = 8: A as stored, one LDS.128 per row per 4 k steps (8 rows x 2), B one
    float4 per sub-tile and k step (4 x 8): 48, as the sm_90 binary has (96 LDS.128 in its loop of two
    tiles); cp.async writes shared memory without STS instructions, its 16-byte copies counted as LDG."""
    cfg = KernelConfig.make("async_pipeline")
    lds, lds_w, sts, sts_w = smem_counts(cfg)
    assert lds == 48 * cfg.threads // 32 and sts_w > 0
    p = predict(Figures.load("h100-sxm"), cfg, 4096, registers=224)
    assert p.issue.per_block_per_tile["sts"] == 0 and p.issue.per_block_per_tile["ldg"] == (128 * 8 * 2) / 4 / 32
    assert p.resources.smem_per_block_bytes == 30720


def test_the_ring_hides_the_loads_behind_stages_minus_one_compute_phases():
    """s buffers keep s - 1 tiles in flight: the copies issued in one k-tile are first used s - 1 k-tiles later, so the
    compute phases that hide them are the binary's prefetch share of the phase that issues them plus s - 2 whole
    phases (double_buffer's is the share itself)."""
    cfgs = [KernelConfig.make("async_pipeline", stages=s) for s in (2, 3, 4)] + [KernelConfig.make("double_buffer")]
    builds = [BuildFacts(registers=128, prefetch=0.5)] * 4
    bt = predict_batch(Figures.load("h100-sxm"), cfgs, Problem(2048, 2048, 2048), builds=builds)
    assert list(bt.compute.tile_args_full["hide"]) == [0.5, 1.5, 2.5, 0.5]
