"""split_k (kernels/10_split_k.cu): step 8's kernel over slices of K into partials, a second kernel summing
them. Its grid, constraints, command line and what the model adds for it (no GPU)."""
import json
import math

import numpy as np
import pytest

from perfmodel.catalogue import KernelConfig, split_slices
from perfmodel.cli import main
from perfmodel.measure.build import defines
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem, predict, predict_batch


def kernel_slices(tiles: int, grid_z: int) -> list[tuple[int, int]]:
    """(first k-tile, k-tiles) of each block z, as kernels/outer_f4.cuh (SPLIT_K) computes them."""
    per = -(-tiles // grid_z)
    return [(z * per, min(per, tiles - z * per)) for z in range(grid_z)]


@pytest.mark.parametrize("bk", [8, 16])
def test_the_kernel_finds_the_cut_the_host_gives_it(bk):
    """For every k-tile count below 400 and every splits below 70: the host's slices, handed to the kernel
    as gridDim.z, give non-empty slices covering every k-tile once, none longer than the model's."""
    for tiles in range(1, 400):
        K = tiles * bk - (bk // 2 if tiles > 1 else 0)  # a ragged last tile too
        for splits in range(1, 70):
            slices, per = (int(x) for x in split_slices(K, bk, splits))
            cut = kernel_slices(tiles, slices)
            assert slices <= splits and all(n >= 1 for _, n in cut), (tiles, splits, cut)
            assert [f for f, _ in cut] == [sum(n for _, n in cut[:z]) for z in range(slices)]
            assert sum(n for _, n in cut) == tiles and max(n for _, n in cut) == per


def test_splits_is_a_launch_parameter_with_limits():
    cfg = KernelConfig.make("split_k", splits=8)
    assert cfg.params()["splits"] == 8 and cfg.label().endswith("splits=8)")
    assert not any(d.startswith("-DSPLITS") for d in defines(cfg))  # one binary serves every splits
    assert defines(cfg) == defines(KernelConfig.make("split_k", splits=3))
    assert KernelConfig.make("double_buffer").k_splits == 1


@pytest.mark.parametrize("argv,message", [
    (["--kernel", "split_k", "--splits", "1"], "splits=1 must be 2 to 64 (1 slice is double_buffer itself)"),
    (["--kernel", "split_k", "--splits", "65"], "splits=65 must be 2 to 64"),
    (["--kernel", "double_buffer", "--splits", "4"], "kernel double_buffer takes no parameter splits"),
    (["--kernel", "split_k", "--splits", "0"], "--splits"),
])
def test_bad_splits_are_one_line_and_exit_2(argv, message, capsys):
    assert main(["predict", "--device", "h100-sxm", "--estimate", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_slices_multiply_the_blocks_and_the_partials_the_c_traffic():
    fig = Figures.load("h100-sxm")
    M, N, K = 512, 512, 16384
    base = KernelConfig.make("double_buffer")
    cfgs = [base] + [KernelConfig.make("split_k", splits=s) for s in (2, 4, 8)]
    bt = predict_batch(fig, cfgs, Problem(M, N, K))
    blocks0 = math.ceil(M / 128) * math.ceil(N / 128)
    assert list(bt.traffic.slices) == [1, 2, 4, 8]
    assert list(bt.traffic.blocks) == [blocks0 * s for s in (1, 2, 4, 8)]
    assert list(bt.traffic.ktiles) == [K / 8 / s for s in (1, 2, 4, 8)]
    # A and B are read once over all slices; each slice adds a partial C (the same sector ratio)
    l2 = np.asarray(bt.traffic.l2_bytes)
    c = 4.0 * M * N * bt.resources.c_store_ratio[0]
    assert np.allclose(np.diff(l2) / np.diff([1, 2, 4, 8]), c)
    # the same flops in every configuration; the reduction only where there are slices
    assert len(set(bt.traffic.flops)) == 1 and bt.reduce_s[0] == 0 and (bt.reduce_s[1:] > 0).all()
    # the second kernel reads every partial: more slices, more time
    assert np.all(np.diff(bt.reduce_s[1:]) > 0)


def test_split_k_fills_the_gpu_where_the_output_has_few_tiles():
    """16 output tiles on 132 SMs: the slices put 8 x as many blocks to work, and the model says so."""
    fig = Figures.load("h100-sxm")
    db = predict(fig, KernelConfig.make("double_buffer"), 512, 512, 16384)
    sk = predict(fig, KernelConfig.make("split_k", splits=8), 512, 512, 16384)
    assert sk.waves.blocks == 8 * db.waves.blocks and sk.k_slices == 8
    assert sk.gflops > 4 * db.gflops
    # on a large square the slices buy nothing: the partials and the reduction only cost
    db4 = predict(fig, KernelConfig.make("double_buffer"), 4096)
    sk4 = predict(fig, KernelConfig.make("split_k", splits=2), 4096)
    assert sk4.gflops < db4.gflops and sk4.reduction_us > 0


def test_predict_explains_the_slices_and_the_reduction(capsys):
    assert main(["predict", "--device", "h100-sxm", "--kernel", "split_k", "--splits", "6", "-M", "256", "-N", "256",
                 "-K", "8192", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "Split-K: 6 slices of K, 4 output tiles each" in out and "second kernel reads the 6 partials" in out
    assert main(["predict", "--device", "h100-sxm", "--kernel", "split_k", "--splits", "6", "-M", "256", "-N", "256",
                 "-K", "8192", "--estimate", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["k_slices"] == 6 and d["reduction_us"] > 0 and d["config"]["splits"] == 6
