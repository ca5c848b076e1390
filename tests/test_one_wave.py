"""A problem whose blocks all run in one wave waits for DRAM on every k-tile (terms.one_wave_latency):
the rule, where the model applies it, and what it does to the recorded one-wave shapes."""
import importlib

import numpy as np
import pytest

from perfmodel import KernelConfig, load_device
from recorded import shape_run_errors
from perfmodel.model import terms as T
from perfmodel.model.predict import Problem, predict_batch

P = importlib.import_module("perfmodel.model.predict")
SHAPE_RUN = "results/20261123-185325-h100-sxm-shapes-all"


def test_one_wave_takes_dram_latency_more_waves_keep_the_mix():
    mix = np.array([400.0, 400.0, 400.0])
    got = T.one_wave_latency(mix, 690.0, blocks=np.array([1, 264, 265]), blocks_per_wave=264)
    assert got.tolist() == [690.0, 690.0, 400.0]


def test_predict_uses_dram_latency_exactly_when_the_grid_fits_in_one_wave():
    dev = load_device("h100-sxm")
    cfg = KernelConfig.make("double_buffer")
    dram, l2 = dev.latency.dram_latency_cycles, dev.latency.l2_latency_cycles
    per_wave = int(predict_batch(dev, [cfg], Problem(4096, 4096, 4096)).waves.blocks_per_wave[0])
    one = predict_batch(dev, [cfg], Problem(128, 128 * per_wave, 4096))
    two = predict_batch(dev, [cfg], Problem(128, 128 * (per_wave + 1), 4096))
    assert one.waves.n_waves[0] == 1 and two.waves.n_waves[0] == 2
    assert one.traffic.mem_latency[0] == dram
    assert l2 < two.traffic.mem_latency[0] < dram
    # the longer load latency can only slow the one-wave problem down
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(T, "one_wave_latency", lambda mem, dram_lat, blocks, per_wave: mem)
        mixed = predict_batch(dev, [cfg], Problem(128, 128 * per_wave, 4096))
    assert one.time_s[0] >= mixed.time_s[0]


def test_the_one_wave_latency_on_the_recorded_one_wave_shapes():
    """The H100 shape run's points whose grid fits in one wave and has no edge block (classes where
    such grids are common; hold-out left out), with and without the term: the error must fall, and the
    model stays optimistic there (the rest is the loop of a lone block of few warps: docs/model.md)."""
    def errors():
        return shape_run_errors(SHAPE_RUN, ("large_k", "skinny_n", "skinny_m"),
                                lambda r, p: not p.edge_blocks and p.waves.blocks <= p.waves.blocks_per_wave)

    with_term = errors()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(T, "one_wave_latency", lambda mem, dram_lat, blocks, per_wave: mem)
        without = errors()
    assert with_term.keys() == without.keys() and len(with_term) >= 100
    a, b = np.array(list(with_term.values())), np.array([without[k] for k in with_term])
    assert np.abs(a).mean() < 0.8 * np.abs(b).mean()
    assert 0 < a.mean() < b.mean()


def test_predict_says_which_latency_it_took(capsys):
    from perfmodel.cli import main

    assert main(["predict", "--device", "h100-sxm", "-M", "128", "-N", "1024", "-K", "4096"]) == 0
    assert "DRAM's: all blocks run in one wave" in capsys.readouterr().out
    assert main(["predict", "--device", "h100-sxm", "--size", "4096"]) == 0
    assert "L2 and DRAM mixed by the loads' hit rate" in capsys.readouterr().out
