"""coalesced_split_k (step 12): step 2's one-element kernel over slices of K, for products with a few rows of A.
Its cut of K, its constraints, its sweep values, its C stores and where the model ranks it (no GPU; the GPU
tests run it against float64 and twice for the same bits, tests/test_gpu.py)."""
import math
import re

import numpy as np
import pytest

from perfmodel.catalogue import (VALUES, KernelConfig, enumerate_configs, get_kernel, kernel_ids, ladder_on, ranked_kernels,
                                 split_slices, swept_kernels, tiled_kernels)
from perfmodel.choose import choose
from perfmodel.cli import main
from perfmodel.devices import load_device
from perfmodel.errors import UserError
from perfmodel.model import gstores
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem, predict_batch


def test_the_kernels_cut_of_k_is_the_hosts():
    """The host launches split_slices(K, 1, splits) slices; the kernel, given gridDim.z = slices, sums
    [z*T, (z+1)*T) with T = ceil(K / slices): that T is the host's, and no slice is empty."""
    for K in range(1, 700):
        for splits in VALUES["splits"]:
            slices, per = (int(x) for x in split_slices(K, 1, splits))
            t = math.ceil(K / slices)  # kernels/12_coalesced_split_k.cu
            assert t == per and (slices - 1) * t < K <= slices * t, (K, splits)


def test_constraints_name_what_is_wrong():
    assert KernelConfig.make("coalesced_split_k").label() == "coalesced_split_k(bm=1,bn=256,splits=32)"
    assert get_kernel("coalesced_split_k").mapping == "coalesced" and not get_kernel("coalesced_split_k").uses_smem
    with pytest.raises(UserError, match="splits=1 must be 2 to 64 .1 slice is coalesced itself"):
        KernelConfig.make("coalesced_split_k", splits=1)
    with pytest.raises(UserError, match="exceeds 1024"):
        KernelConfig.make("coalesced_split_k", bm=4, bn=512)
    with pytest.raises(UserError, match="not a multiple of 32"):
        KernelConfig.make("coalesced_split_k", bm=1, bn=16)
    # split_k's own message is unchanged
    with pytest.raises(UserError, match="1 slice is double_buffer itself"):
        KernelConfig.make("split_k", splits=1)


def test_sweep_values_are_the_kernels_own_and_no_one_elses():
    dev = load_device("h200")
    mine, _, total = enumerate_configs(dev, ["coalesced_split_k"])
    assert total == 5 * 5 * len(VALUES["splits"])
    assert {c.bm for c in mine} == {1, 2, 4, 8, 16} and {c.bn for c in mine} == {32, 64, 128, 256, 512}
    assert all(c.threads % 32 == 0 and c.threads <= 1024 for c in mine)
    others, _, _ = enumerate_configs(dev, ["split_k"], choices=False)
    assert min(c.bm for c in others) == 16 and max(c.bn for c in others) == 256  # VALUES as before
    assert "coalesced_split_k" in swept_kernels() and "coalesced_split_k" not in tiled_kernels()
    assert "naive" not in swept_kernels()


def test_its_c_stores_are_step_2s():
    """One partial row per slice, stored as step 2 stores C: 32 consecutive floats a warp, four sectors."""
    a, b = KernelConfig.make("coalesced_split_k", bm=2, bn=32), KernelConfig.make("coalesced", bm=2, bn=32)
    assert gstores.c_store_sectors(a) == gstores.c_store_sectors(b) == 8
    assert gstores.c_store_ratio(a) == 1.0


def test_choose_bench_and_the_ladder_leave_it_out():
    """ranked = false: the model predicts it 29 % too fast on the H200 (docs/kernels.md, step 12), so choose
    and validate's ladder leave it out; predict and sweep --kernel take it."""
    assert "coalesced_split_k" not in ranked_kernels() and "coalesced_split_k" not in ladder_on("9.0")
    assert set(ranked_kernels()) == set(kernel_ids()) - {"coalesced_split_k", "split_k_fused"}
    ch, rk = choose(Figures.load("h200"), Problem(1, 4096, 4096), runners=2, sass_top=0)
    assert "coalesced_split_k" not in {c.kernel for c in rk.configs} and ch.pick.config.kernel == "split_k"


def test_the_model_counts_the_slices_and_their_reduction():
    fig = Figures.load("h200")
    cfgs = [KernelConfig.make("coalesced_split_k", splits=s) for s in (2, 8, 32)]
    bt = predict_batch(fig, cfgs, Problem(2, 4096, 4096))
    assert list(bt.traffic.slices) == [2, 8, 32]
    assert np.all(np.diff(bt.reduce_s) > 0)  # more partials to read and sum
    # every slice's partial row is written once and read back once: 2 x slices x M x N floats beyond A and B
    assert np.all(np.diff(bt.traffic.l2_bytes) > 0)


def test_sweep_takes_it_and_still_refuses_kernels_without_a_space(capsys):
    assert main(["sweep", "--device", "h200", "-M", "1", "-N", "4096", "-K", "4096", "--kernel", "coalesced_split_k",
                 "--sass", "0", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"coalesced_split_k|splits=", out)) >= 3
    assert main(["sweep", "--device", "h200", "--kernel", "naive"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'naive' has no tile parameters" in err[0] and "coalesced_split_k" in err[0]
