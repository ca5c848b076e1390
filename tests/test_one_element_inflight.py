"""The loads a one-element kernel (naive, coalesced) keeps in flight (model.predict.littles_law_stage): each
warp's k loop issues the loads of a few k steps before its FFMAs wait for them (ONE_ELEMENT_UNROLL from the
datasheet, the binary's count with measured figures: predict.one_element_steps), each step a new 128-byte
line; the same count sets the latency each wait exposes (compute_stage)."""
import pytest

from perfmodel import KernelConfig, load_device
from perfmodel.model.predict import ONE_ELEMENT_UNROLL, Problem, predict_batch
from recorded import shape_run_errors

SHAPE_RUN = "results/20261123-185325-h100-sxm-shapes-all"


@pytest.mark.parametrize("kernel", ["naive", "coalesced"])
def test_a_warp_keeps_a_line_per_unrolled_k_step_in_flight(kernel):
    h100 = load_device("h100-sxm")
    cfg = KernelConfig.make(kernel)
    b = predict_batch(h100, [cfg], Problem(4096, 4096, 4096))
    warps = cfg.threads / 32
    blocks = b.occupancy.blocks_per_sm[0]
    # the datasheet figures keep the lower bound, four k steps a wait, whatever the binary (the binaries built
    # here unroll the loop 16 times; with measured figures their waits set the count: test_one_element_waits.py)
    assert ONE_ELEMENT_UNROLL == 4
    assert b.littles_law.available.dram[0] == blocks * warps * 4 * 128
    assert b.littles_law.available.l2[0] == blocks * warps * 4 * 128


def test_the_recorded_coalesced_points_of_the_shape_run():
    """The first H100 shape run's 33 coalesced points (the ladder default, every class outside the hold-out),
    every one predicted too slow while a warp kept 16 bytes in flight (bias -16.1 %), all but one with a
    line per unrolled k step (-13.7 %; docs/model.md, "One-element kernels: the lines a warp keeps in flight"),
    within 3 % on average since the binary's loop sets the k steps a wait (+1.3 %; "One-element kernels: the
    waits of the binary's loop")."""
    classes = ("square", "ragged", "small", "skinny_m", "skinny_n", "large_k", "small_k", "transformer")
    errs = shape_run_errors(SHAPE_RUN, classes, lambda r, p: r["kernel"] == "coalesced")
    assert len(errs) == 33
    assert abs(sum(errs.values()) / len(errs)) < 3.0
