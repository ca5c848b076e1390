"""A one-element kernel (naive, coalesced) waits for its global loads as its binary's k loop orders them
(model.schedule.global_load_waits, predict.one_element_steps): checked on programs built by hand, on the
archived loops of the recorded sm_90 binaries, and on the recorded coalesced points of an H100 and an H200
shape run, which come closer, while nothing else moves and datasheet figures keep the lower bound."""
import contextlib
import importlib
from unittest import mock

import numpy as np
import pytest

from perfmodel import KernelConfig, analysis, facts
from perfmodel.model.figures import Figures
from perfmodel.model.predict import ONE_ELEMENT_UNROLL, Problem, predict, predict_batch
from perfmodel.model.schedule import global_load_waits

RUNS = ("results/20261123-185325-h100-sxm-shapes-all", "results/20261123-222023-h200-shapes-all")
KERNELS = ("naive", "coalesced", "smem_tiled", "double_buffer")  # the one-element kernels and two tiled ones


def _program(cls: str, deps: dict[int, list[int]]) -> dict:
    return dict(cls=cls, wide=[1] * len(cls), deps=[deps.get(i, []) for i in range(len(cls))])


def test_a_wait_is_the_first_use_of_a_load_in_flight():
    # four loads, then the FFMAs that read them: one wait a pass
    assert global_load_waits(_program("GGGGFFAA", {4: [4, 3], 5: [3, 2]})) == 1
    # two loads, an FFMA that reads them, two more loads, an FFMA that reads those: two waits
    assert global_load_waits(_program("GGFGGFA", {2: [2, 1], 5: [2, 1]})) == 2
    # a use of a load already waited for is no new wait
    assert global_load_waits(_program("GGFFA", {2: [2], 3: [2]})) == 1
    # a load the next pass reads (the distance reaches round the loop): one wait a pass, at the next pass
    assert global_load_waits(_program("FAG", {0: [1]})) == 1
    # no global load, no program
    assert global_load_waits(_program("SFFB", {1: [1]})) is None and global_load_waits(None) is None


@pytest.mark.parametrize("run_dir", RUNS)
@pytest.mark.parametrize("kernel", ["naive", "coalesced"])
def test_the_recorded_binaries_wait_three_times_in_sixteen_k_steps(run_dir, kernel):
    """The archived loop of the binary each run built: nvcc 13.0 for sm_90 unrolls the k loop 16 times and
    issues its 32 loads in three batches between the FFMAs."""
    run = analysis.load_run(run_dir)
    rf = analysis.run_facts(run, run_dir)
    m = next(m for m in run.measurements if m.kernel == kernel)
    program = rf.for_measurement(m, KernelConfig.make(kernel, **m.config)).program
    assert program is not None
    assert program["cls"].count("F") == 16 and program["cls"].count("G") == 32
    assert global_load_waits(program) == 3


def test_datasheet_figures_keep_the_lower_bound(monkeypatch):
    """Only measured figures (a calibration, or the generation's) take the binary's count; the datasheet's
    keep ONE_ELEMENT_UNROLL, whatever the binary."""
    cfg = KernelConfig.make("coalesced")
    program = _program("GGGGGGGGFFFFAA" * 1, {8: [8, 7], 9: [7, 6], 10: [6, 5], 11: [5, 4]})
    build = facts.BuildFacts(registers=32, registers_source="compiler", program=program)
    data = predict(Figures.load("h100-sxm", figures="datasheet"), cfg, 4096, 4096, 4096, build=build)
    gen = predict(Figures.load("h100-sxm"), cfg, 4096, 4096, 4096, build=build)
    plain = predict(Figures.load("h100-sxm"), cfg, 4096, 4096, 4096, build=facts.given(32))
    assert data.load_steps == ONE_ELEMENT_UNROLL and not data.load_steps_from_binary
    assert gen.load_steps == 4.0 and gen.load_steps_from_binary  # 4 FFMAs, one wait
    assert plain.load_steps == ONE_ELEMENT_UNROLL and not plain.load_steps_from_binary
    tiled = predict(Figures.load("h100-sxm"), KernelConfig.make("double_buffer"), 4096, 4096, 4096, build=facts.given(128))
    assert tiled.load_steps is None
    # the k steps set the latency each k step exposes: twice the steps, half the load latency a step (without the
    # wait behind other warps' lines, terms.one_element_queue, which only adds to it)
    queued = predict_batch(Figures.load("h100-sxm"), [cfg], Problem(4096, 4096, 4096), builds=[build]).compute.exposed
    monkeypatch.setattr("perfmodel.model.terms.ONE_ELEMENT_QUEUE", False)
    b = predict_batch(Figures.load("h100-sxm"), [cfg, cfg], Problem(4096, 4096, 4096),
                      builds=[build, facts.BuildFacts(registers=32, registers_source="compiler",
                                                      program=_program("GGGGGGGGFFFFFFFFAA", {8: [8, 7], 12: [8, 7]}))])
    lat = b.traffic.mem_latency
    fma = Figures.load("h100-sxm").effective.latency.fma_latency_cycles
    assert b.littles_law.load_steps.tolist() == [4.0, 8.0]
    assert b.compute.exposed.tolist() == pytest.approx(((lat + 4 * fma) / 4)[:1].tolist() + ((lat + 8 * fma) / 8)[1:].tolist())
    assert queued[0] >= b.compute.exposed[0]


def _replay(runs: dict, binary: bool, kernels=None) -> dict:
    """{(run, kernel, config, M, N, K): error %} of the runs (run -> calibration), with the binary's waits or
    (binary False) the lower bound, only the points of `kernels` where given."""
    P = importlib.import_module("perfmodel.model.predict")
    out = {}
    with contextlib.nullcontext() if binary else mock.patch.object(P, "global_load_waits", lambda program: None):
        for rd, cal in runs.items():
            run = analysis.load_run(rd)
            if kernels is not None:
                run = run.model_copy(update=dict(measurements=[m for m in run.measurements if m.kernel in kernels]))
            for r in analysis.rows(run, analysis.run_figures(rd, calibration=cal), analysis.run_facts(run, rd)):
                if r.get("error_pct") is not None:
                    out[(rd, r["kernel"], r["config"], r["M"], r["N"], r["K"])] = r["error_pct"]
    return out


def _errors(binary: bool) -> dict:
    return _replay({rd: f"{rd}/calibration.toml" for rd in RUNS}, binary, KERNELS)


def test_the_recorded_coalesced_points_come_closer():
    """The two shape runs' 66 coalesced points outside the hold-out (each GPU with its own calibration), predicted
    too slow with a wait every four k steps (MAPE 13.2 %, bias -12.9 %), come to 8.0 % (bias +2.2 %); the tiled
    kernels do not move."""
    w, p = _errors(True), _errors(False)
    co = [k for k in w if k[1] == "coalesced"]
    rest = [k for k in w if k[1] not in ("coalesced", "naive")]
    assert len(co) == 66 and len(rest) > 100
    e, f = np.array([w[k] for k in co]), np.array([p[k] for k in co])
    assert f.mean() < -12.0 and np.abs(e).mean() < 0.65 * np.abs(f).mean() and abs(e.mean()) < 3.0
    assert all(w[k] == p[k] for k in rest)


CHECK_RUN = "results/20261130-071856-h200-one-element"
CHECK_CAL = "results/20261130-010700-h200-bench-all/calibration.toml"


def _check_errors(binary: bool) -> dict:
    return {(k[1], k[3], k[5]): e for k, e in _replay({CHECK_RUN: CHECK_CAL}, binary).items()}


def test_the_points_measured_afterwards():
    """The 30 points measured on the H200 after their predictions (naive and coalesced at M = N = 256 to 2048,
    K = 1024 to 16384; results/archive/one-element-predictions-20261130-h200.txt): coalesced comes closer at every
    size but two blocks an SM in one wave stays about a fifth slow (the one-wave rule's DRAM wait, left as it is);
    naive, bound by its L1 wavefronts, does not move."""
    w, p = _check_errors(True), _check_errors(False)
    assert len(w) == 30
    co = [k for k in w if k[0] == "coalesced"]
    assert all(abs(w[k]) < abs(p[k]) for k in co)
    lone = [w[k] for k in co if k[1] == 256]
    shared = [w[k] for k in co if k[1] in (384, 512)]
    waves = [w[k] for k in co if k[1] >= 1024]
    assert all(abs(e) < 10 for e in lone) and all(abs(e) < 10 for e in waves)
    assert all(-27 < e < -15 for e in shared)
    assert all(abs(w[k] - p[k]) < 0.01 and abs(w[k]) < 1 for k in w if k[0] == "naive")
