"""A problem whose blocks all run in one wave waits for DRAM on every k-tile (terms.one_wave_latency):
the rule, where the model applies it, and what it does to the recorded one-wave shapes."""
import importlib

import numpy as np
import pytest

from perfmodel import KernelConfig, load_device
from perfmodel import analysis
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
    run = analysis.load_run(SHAPE_RUN)
    keep = [m for m in run.measurements if analysis.shape_class(m.shape) in ("large_k", "skinny_n", "skinny_m")
            and not analysis.is_holdout(m.shape)]
    run = run.model_copy(update=dict(measurements=keep))
    facts, fig = analysis.run_facts(run, SHAPE_RUN), analysis.run_figures(SHAPE_RUN)

    def errors():
        out = {}
        for r in analysis.rows(run, fig, facts):
            p = r.get("_prediction")
            if r.get("error_pct") is None or p.edge_blocks:
                continue
            if p.waves.blocks <= p.waves.blocks_per_wave:
                out[(r["shape"], r["kernel"], r["config"])] = r["error_pct"]
        return out

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
