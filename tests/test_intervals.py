"""Prediction intervals (model.uncertainty): the draws reproduce the point prediction when every input
sits at its figure, each input's provenance is read from where the figure came from, intervals are
ordered and reproducible, and on the recorded runs they cover what they claim (no GPU)."""
from pathlib import Path

import numpy as np
import pytest
import tomllib

from perfmodel.accuracy import accuracy_set, pooled, score, spread_of
from perfmodel.catalogue import KernelConfig, kernel_ids
from perfmodel.model import uncertainty as U
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem, occupancy_regime, predict, predict_batch
from perfmodel.model.uncertainty import coverage, spread_table
from perfmodel.sweep import rank

ROOT = Path(__file__).resolve().parent.parent
CAL = ROOT / "results" / "reference-calibration-h100-sxm.toml"


def _ladder():
    return [KernelConfig.make(k) for k in kernel_ids()]


@pytest.mark.parametrize("figures", ["auto", "datasheet", "calibrated"])
@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (1000, 77, 5000), (8, 4096, 1024)])
def test_draws_at_the_figures_give_the_point_prediction(figures, shape):
    """With the clock given (its range is then one point) and every other input held at its figure,
    re-running the terms and the waves gives PredictionBatch.time_s to the last bit."""
    fig = Figures.load("h100-sxm", CAL) if figures == "calibrated" else Figures.load("h100-sxm", figures=figures)
    bt = predict_batch(fig, _ladder(), Problem(*shape), clock_MHz=1755.0)
    t = U.draw_times(bt, only="clock", draws=3)
    assert np.array_equal(t, np.broadcast_to(bt.time_s, t.shape))


def test_provenance_follows_the_figures():
    cal = U.provenance(Figures.load("h100-sxm", CAL), clock_given=False)
    assert cal == dict(clock="calibration", ffma="calibration", smem="calibration", l2="calibration", dram="calibration",
                       latency="calibration", port="calibration", reuse="model", launch="measured", model="recorded")
    gen = U.provenance(Figures.load("h200"), clock_given=True)
    # the H200's SM figures are its generation's; its L2 bandwidth is the H100's figure used as a proxy
    assert gen["clock"] == "given" and gen["ffma"] == gen["port"] == "generation" and gen["l2"] == "proxy"
    ds = U.provenance(Figures.load("rtx2070s", figures="datasheet"), clock_given=False)
    # without a calibration the tile burst arrives at the L1's line rate, drawn with the tile loop's overlap
    assert ds["ffma"] == ds["clock"] == "datasheet" and ds["port"] == "l1"
    # the RTX 2070 SUPER's L2 bandwidth and latencies were measured on that GPU and published
    assert ds["l2"] == "microbenchmark" and ds["latency"] == "microbenchmark"
    # a launch: measured for Hopper, published for Ada (back to back), neither for Turing
    assert ds["launch"] == "none" and U.provenance(Figures.load("rtx4090"), clock_given=False)["launch"] == "published"
    assert U.provenance(Figures.load("h100-sxm", figures="datasheet"), clock_given=False)["launch"] == "published"
    clock = U.input_range(Figures.load("rtx2070s", figures="datasheet"), "clock", "datasheet")
    assert clock.lo == pytest.approx(1605 / 1770) and clock.hi == 1.0


def test_intervals_are_ordered_reproducible_and_below_the_peak():
    fig = Figures.load("rtx2070s", figures="datasheet")
    p = predict(fig, KernelConfig.make("double_buffer", bm=128), 4096)
    iv = p.interval
    assert iv.q05_GFLOPS < iv.q25_GFLOPS < iv.q75_GFLOPS < iv.q95_GFLOPS <= p.peak_GFLOPS
    # the datasheet FFMA rate is a ceiling: an FFMA-bound prediction's interval lies mostly below it
    assert p.bound == "fma" and iv.q25_GFLOPS < p.gflops and iv.q05_GFLOPS < 0.85 * p.gflops
    assert predict(fig, KernelConfig.make("double_buffer", bm=128), 4096).interval == iv


def test_a_sweep_gives_a_config_the_interval_predict_gives_it():
    """Inputs are drawn once for all configs and each config's residual in an order of its own, so a
    configuration's interval does not depend on the batch it was predicted in."""
    fig = Figures.load("h100-sxm", figures="datasheet")
    rk = rank(fig, Problem(2048, 2048, 2048), ["double_buffer"], sass_top=0)
    top = [int(i) for i in rk.order[:3]]
    iv = rk.intervals(top)
    for j, i in enumerate(top):
        p = predict(fig, rk.configs[i], 2048)
        assert p.gflops == pytest.approx(float(rk.gflops[i]), rel=1e-12)
        assert p.interval.q05_GFLOPS == pytest.approx(float(iv["q05"][j]), rel=1e-9)
        assert p.interval.q95_GFLOPS == pytest.approx(float(iv["q95"][j]), rel=1e-9)
    assert iv["p_beats_first"][0] == 0.0 and 0.0 <= iv["p_beats_first"][1] <= 1.0


def test_each_input_alone_widens_only_its_own_terms():
    """An FFMA-bound datasheet prediction: the FFMA rate and the clock move it, the memory figures do not."""
    fig = Figures.load("rtx2070s", figures="datasheet")
    p = predict(fig, KernelConfig.make("double_buffer", bm=128), 4096, width_parts=True)
    parts = p.interval.parts
    # the FFMA rate: 0.87-1.03 of the binary's replay with its register-bank reads (13 loops on the H100)
    assert parts["ffma"][0] < -0.10 and parts["ffma"][1] > 0.0 and parts["clock"][0] < -0.05
    assert abs(parts["dram"][0]) < 1e-3 and abs(parts["l2"][0]) < 1e-3


def test_coverage_counts_points_inside():
    c = coverage([10, 20, 30, 40], [10, 20, 30, 40], [5, 15, 35, 30], [8, 19, 36, 41], [12, 21, 38, 45], [15, 25, 39, 50])
    assert c["points"] == 4 and c["inside_90_pct"] == 75.0 and c["inside_50_pct"] == 50.0


@pytest.fixture(scope="module")
def spread_runs_scores():
    """The runs model_spread.toml lists, scored as `perfmodel accuracy RUN ... --model-spread FILE` scores them
    (measured figures: each device's reference calibration, else the run's own; the corpus hold-out left out)."""
    shipped = tomllib.loads(U.SPREAD_FILE.read_text())
    results = ROOT / "results"
    scores, _ = score([results / n for n in shipped["runs"]], "measured", None, results, own_fallback=True)
    return shipped, scores


@pytest.fixture(scope="module")
def accuracy_scores(spread_runs_scores):
    """The accuracy set with each device's reference calibration, pooled as `perfmodel accuracy` pools it: its
    runs are among the spread's, and scored alike there (the run's own calibration stands in only where the
    device has no reference one, and every accuracy-set run's has)."""
    results = ROOT / "results"
    names = set(accuracy_set(results))
    _, scores = spread_runs_scores
    runs = [s for s in scores if s.run in names]
    assert len(runs) == len(names)
    return runs, pooled(runs, "measured")


def test_the_shipped_model_spread_is_what_its_runs_give(spread_runs_scores):
    """model_spread.toml is written by `perfmodel accuracy RUN ... --model-spread FILE` from the runs it
    lists (measured figures: each device's reference calibration, else the run's own; the corpus
    hold-out left out); replaying them today gives the same quantiles (a model change that moves them
    must rewrite the file)."""
    shipped, scores = spread_runs_scores
    assert set(accuracy_set(ROOT / "results")) <= set(shipped["runs"])
    _assert_same_spread(shipped, spread_of(scores, ""))


def _assert_same_spread(shipped: dict, now: dict) -> None:
    """A shipped spread file holds the quantiles its runs give today (points, levels, every group)."""
    assert shipped["points"] == now["points"] and shipped["levels"] == now["levels"]
    for b, q in now["by_bound"].items():
        assert np.allclose(shipped["by_bound"][b], q, atol=2e-5), b
    assert shipped["regime_points"] == now["regime_points"]
    for k, q in now["by_bound_regime"].items():
        assert np.allclose(shipped["by_bound_regime"][k], q, atol=2e-5), k


def test_the_occupancy_regime_names_what_fills_a_warps_stalls():
    """predict.occupancy_regime: one warp or fewer per scheduler on the busiest SM is "lone" whatever the
    waves; otherwise the waves decide (under one, under four, more)."""
    r = occupancy_regime([4, 2, 8, 8, 8, 16], 4, [10.0, 0.2, 0.5, 1.0, 3.99, 4.0])
    assert list(r) == ["lone", "lone", "subwave", "few", "few", "many"]
    cal = Figures.load("h100-sxm", CAL)
    # double_buffer 128 x 128 x 16 (16 x 8): 4 warps a block; 64 blocks at 1024 x 1024, one per SM
    lone = predict(cal, KernelConfig.make("double_buffer", bm=128, bn=128, bk=16, tm=16, tn=8), 1024, 1024, 4096)
    many = predict(cal, KernelConfig.make("double_buffer"), 8192)
    sub = predict(cal, KernelConfig.make("double_buffer"), 1024)  # 64 blocks of 8 warps: 2 per scheduler
    assert (lone.regime, many.regime, sub.regime) == ("lone", "many", "subwave")


def test_the_residual_is_the_bound_and_regime_s_where_enough_points_give_it(monkeypatch):
    """A bound and regime with MIN_POINTS recorded points take their own quantiles, fewer take the
    bound's, a bound with fewer takes all points'."""
    rng = np.random.default_rng(1)
    bounds = ["issue"] * 60 + ["smem"] * 40 + ["l2"] * 5
    regimes = ["lone"] * 30 + ["many"] * 30 + ["lone"] * 10 + ["many"] * 30 + ["few"] * 5
    ratios = np.exp(np.r_[rng.normal(0.2, 0.01, 30), rng.normal(-0.1, 0.01, 30), rng.normal(0, 0.05, 45)])
    table = spread_table(bounds, ratios, "test", regimes=regimes)
    assert table["regime_points"] == {"issue/lone": 30, "issue/many": 30, "l2/few": 5, "smem/lone": 10, "smem/many": 30}
    monkeypatch.setattr(U, "model_spread", lambda path=None: table)
    u = np.full((1, 5), 0.5)
    med = U._residual_quantiles(["issue", "issue", "smem", "smem", "l2"], u, regimes=["lone", "many", "lone", "many", "few"])[0]
    assert abs(med[0] - 0.2) < 0.01 and abs(med[1] + 0.1) < 0.01  # their own regime's
    lr = np.log(ratios)
    assert med[2] == pytest.approx(np.interp(0.5, table["levels"], table["by_bound"]["smem"]))  # 10 points: the bound's
    assert med[3] == pytest.approx(np.interp(0.5, table["levels"], table["by_bound_regime"]["smem/many"]))
    assert med[4] == pytest.approx(np.interp(0.5, table["levels"], table["by_bound"]["all"]))  # l2: 5 points in all
    assert abs(np.median(lr[60:100]) - np.interp(0.5, table["levels"], table["by_bound"]["smem"])) < 0.01


def test_calibrated_intervals_cover_what_they_claim_on_the_accuracy_set(accuracy_scores):
    """In-sample for the model's residual (these points are among those it comes from): 85-95 % inside the
    90 % interval and 40-60 % inside the 50 % (`perfmodel accuracy --intervals` prints the same)."""
    _, overall = accuracy_scores
    c = overall["intervals"]
    assert c["points"] == overall["points"] == 2090
    assert 85.0 <= c["inside_90_pct"] <= 95.0 and 40.0 <= c["inside_50_pct"] <= 60.0


@pytest.fixture(scope="module")
def datasheet_spread_scores():
    """The runs datasheet_spread.toml lists, scored as `perfmodel accuracy RUN ... --figures datasheet
    --model-spread FILE` scores them (datasheet figures; the corpus hold-out left out)."""
    shipped = tomllib.loads(U.DATASHEET_SPREAD_FILE.read_text())
    results = ROOT / "results"
    scores, _ = score([results / n for n in shipped["runs"]], "datasheet", None, results)
    return shipped, scores


def test_the_shipped_datasheet_spread_is_what_its_runs_give(datasheet_spread_scores):
    """datasheet_spread.toml is written by `perfmodel accuracy RUN ... --figures datasheet --model-spread FILE`
    from the runs model_spread.toml lists; replaying them today gives the same quantiles (a model change that
    moves them must rewrite the file)."""
    shipped, scores = datasheet_spread_scores
    assert shipped["runs"] == tomllib.loads(U.SPREAD_FILE.read_text())["runs"]
    assert "datasheet figures" in shipped["source"]
    _assert_same_spread(shipped, spread_of(scores, ""))


def test_datasheet_intervals_cover_what_they_claim_on_the_accuracy_set(datasheet_spread_scores):
    """The accuracy set with datasheet figures (no figure measured here), its residual drawn from the recorded
    runs predicted so (in-sample: these points are among those it comes from): 90.3 % inside the 90 %
    interval and 52.2 % inside the 50 % (89.7 / 47.8 % with the calibrated residual; 86.6 % and 36.8 %
    before the register-bank term and the L1 line rate as the port). A change may not lose more than a point
    of either, nor leave the 85-95 % / 40-60 % the intervals promise."""
    _, scores = datasheet_spread_scores
    names = set(accuracy_set(ROOT / "results"))
    runs = [s for s in scores if s.run in names]
    assert len(runs) == len(names)
    c = pooled(runs, "datasheet")["intervals"]
    assert c["points"] == 2090
    assert 89.3 <= c["inside_90_pct"] <= 95.0 and 51.2 <= c["inside_50_pct"] <= 60.0


def test_estimated_registers_are_drawn_and_compiled_ones_are_not():
    """Without the compiler's count the registers are drawn at the recorded ratios of compiled to
    estimated registers (an occupancy change re-predicts the configuration); a known count is not drawn."""
    from perfmodel import facts

    fig = Figures.load("v100", figures="datasheet")
    # 64x64 tiles: latency-bound, so the occupancy the registers allow matters (the 128x128 tile is FFMA-bound
    # on the V100's 16-lane schedulers, whatever its occupancy)
    cfg = KernelConfig.make("tiled_2d", bm=64, bn=64, bk=8, tm=8, tn=8)
    est = predict(fig, cfg, 4096, width_parts=True)
    known = predict(fig, cfg, 4096, build=facts.given(int(est.resources.registers_per_thread)), width_parts=True)
    assert est.interval.inputs["registers"] == "estimate" and "registers" in est.interval.parts
    assert known.interval.inputs["registers"] == "compiler" and "registers" not in known.interval.parts
    assert known.gflops == est.gflops
    # alone, the registers only lower it: the binary may hold more of them, and fewer blocks fit
    lo, hi = est.interval.parts["registers"]
    assert lo < -0.03 and hi == pytest.approx(0.0, abs=1e-9)


def test_the_register_ratios_are_the_recorded_ones():
    """REGISTER_RATIO_LEVELS: compiled / estimated registers of every distinct configuration of the runs
    the model's residual comes from, at 10, 30, 50, 70 and 90 %, per kernel with at least MIN_POINTS of
    them, and over all (2,111) for the rest."""
    from collections import defaultdict

    from perfmodel.analysis import load_run

    ratios, seen = defaultdict(list), set()
    for name in tomllib.loads(U.SPREAD_FILE.read_text())["runs"]:
        for m in load_run(ROOT / "results" / name).measurements:
            if m.kernel == "cublas" or not m.registers:
                continue
            cfg = KernelConfig.make(m.kernel, **m.config)
            if cfg.label() not in seen:
                seen.add(cfg.label())
                ratios[m.kernel].append(m.registers / cfg.estimated_registers())
    every = [r for v in ratios.values() for r in v]
    assert len(every) == 2111
    levels = [0.1, 0.3, 0.5, 0.7, 0.9]
    assert np.allclose(np.quantile(every, levels), U.REGISTER_RATIO_LEVELS["all"], atol=0.005)
    own = {k for k, v in ratios.items() if len(v) >= U.MIN_POINTS}
    assert own == set(U.REGISTER_RATIO_LEVELS) - {"all"}
    for k in own:
        assert np.allclose(np.quantile(ratios[k], levels), U.REGISTER_RATIO_LEVELS[k], atol=0.005), k


def test_a_generation_nobody_calibrated_takes_the_published_points_residual():
    """Datasheet figures of a GPU whose SM generation has no calibration draw the model's residual from the
    published points (transfer_spread.toml); the H100 with datasheet figures (its generation is calibrated)
    draws it from the recorded runs predicted from datasheet figures (datasheet_spread.toml), and the H200
    (its generation's figures) and a calibrated H100 from the recorded runs (model_spread.toml)."""
    assert U.provenance(Figures.load("a100", figures="datasheet"), clock_given=False)["model"] == "transfer"
    assert U.provenance(Figures.load("rtx2070s"), clock_given=False)["model"] == "transfer"
    assert U.provenance(Figures.load("h100-sxm", figures="datasheet"), clock_given=False)["model"] == "datasheet"
    assert U.provenance(Figures.load("h200"), clock_given=False)["model"] == "recorded"
    assert U.provenance(Figures.load("h100-sxm", CAL), clock_given=False)["model"] == "recorded"
    fig = Figures.load("a100", figures="datasheet")
    cfg = KernelConfig.make("tiled_2d_float4")
    p = predict(fig, cfg, 4096, width_parts=True)
    # the published points' residuals: the model is mostly optimistic there, so the interval reaches far below
    lo, hi = p.interval.parts["model"]
    assert lo < -0.25 and hi < 0.25 and lo < 2 * p.interval.parts["ffma"][0]
    # an override (how the published points are scored, one source left out) replaces the file's table
    flat = U.transfer_table([1.0] * 10, "no residual")
    with U.transfer_override(flat):
        q = predict(fig, cfg, 4096, width_parts=True)
    assert q.gflops == p.gflops and q.interval.parts["model"] == (0.0, 0.0)
    assert predict(fig, cfg, 4096).interval == p.interval.model_copy(update={"parts": None})


def test_the_shipped_transfer_spread_is_what_the_published_points_give():
    """transfer_spread.toml is written by `perfmodel accuracy --published --model-spread FILE`; predicting the
    published points today gives the same quantiles (a model change that moves them must rewrite the file)."""
    from perfmodel import published

    shipped = tomllib.loads(U.TRANSFER_FILE.read_text())
    rows, _ = published.score()
    now = U.transfer_table([r.predicted_gflops / r.measured_gflops for r in rows], "")
    assert shipped["points"] == now["points"] == len(rows) and shipped["levels"] == now["levels"]
    assert np.allclose(shipped["quantiles"], now["quantiles"], atol=2e-5)


def test_datasheet_figures_of_a_calibrated_generation_draw_the_datasheet_residual(monkeypatch):
    """An H100 predicted from datasheet figures draws the model's residual from datasheet_spread.toml (the
    recorded runs predicted so, per bound and regime) and says so; without that file it would draw the
    calibrated residual (model_spread.toml), which is another interval."""
    from perfmodel.explain import render_interval

    fig = Figures.load("h100-sxm", figures="datasheet")
    cfg = KernelConfig.make("double_buffer")
    p = predict(fig, cfg, 4096, width_parts=True)
    assert p.interval.inputs["model"] == "datasheet"
    key, n = U.residual_group(p.bound, p.regime, "datasheet")
    ds = U.datasheet_spread()
    assert n == (ds["regime_points"][key] if "/" in key else ds["points"][key]) and n >= U.MIN_POINTS
    line = next(x for x in render_interval(p) if "the model itself" in x)
    assert f"recorded residuals from datasheet figures of {n:,} points" in line
    monkeypatch.setattr(U, "datasheet_spread", lambda path=None: None)
    q = predict(fig, cfg, 4096, width_parts=True)
    assert q.gflops == p.gflops and q.interval.inputs["model"] == "recorded"
    assert q.interval.parts["model"] != p.interval.parts["model"]
