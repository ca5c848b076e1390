"""The guarded edge loop's spills (docs/model.md, "Where the model misses"): the recorded H200 run and its Nsight
Compute counters read back as the docs quote them, the binaries' local bytes per k-tile where a toolchain is here,
and ncu_choices.py's --local counters."""
import json
import lzma
import subprocess
import sys
from pathlib import Path

import pytest

from perfmodel.analysis import load_run
from perfmodel.catalogue import KernelConfig
from perfmodel.measure import sass, toolchain

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
RUN = ROOT / "results" / "20261129-095400-h200-edge-spills"
ARCHIVE = ROOT / "results" / "archive"
BCF16 = dict(kernel="bank_conflict_free", bm=16, bn=256, bk=32, tm=8, tn=8, frag_width=1, load_width=1)


def _gflops(cfg: dict) -> dict:
    want = KernelConfig.make(**cfg)
    run = load_run(RUN)
    return {(m.M, m.N, m.K): m.gflops_median for m in run.measurements
            if m.kernel == want.kernel and m.config == want.params() and m.verified}


def test_the_run_is_complete_and_verified():
    run = load_run(RUN)
    ms = [m for m in run.measurements if m.kernel != "cublas"]
    assert len(ms) == 20 and all(m.verified for m in run.measurements)
    assert {(m.M, m.N, m.K) for m in ms} == {(4095, 4095, 4093), (4095, 4095, 4096), (4096, 4096, 4093), (4096, 4096, 4096)}


def test_the_spilling_edge_body_runs_at_half_its_interior_and_the_control_does_not():
    g = _gflops(BCF16)
    assert round(g[(4096, 4096, 4096)]) == 12545 and round(g[(4095, 4095, 4093)]) == 6180
    assert g[(4096, 4096, 4096)] / g[(4095, 4095, 4093)] == pytest.approx(2.03, abs=0.005)
    c = _gflops(dict(kernel="double_buffer"))
    assert g[(4096, 4096, 4096)] < c[(4096, 4096, 4096)] / 3
    assert c[(4096, 4096, 4096)] / c[(4095, 4095, 4093)] == pytest.approx(1.05, abs=0.006)


def _ncu(which: str) -> dict:
    d = json.loads(lzma.open(ARCHIVE / f"edge-spills-ncu-{which}-20261129-h200.json.xz").read())
    return next(v for k, v in d["kernels"].items() if k.startswith("bank_conflict_free(bm=16,bn=256"))


def test_the_edge_loops_frames_leave_the_l2():
    """Edge (4095 x 4095 x 4093) against interior (4096^3): 53.7 against 15.9 GB of local loads, half the L2 reads
    from the SMs missing against 4.5 %, 33.0 against 0.60 GB read from DRAM."""
    e, i = _ncu("edge"), _ncu("interior")
    ld = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"
    assert round(e[ld] / 1e9, 1) == 53.7 and round(i[ld] / 1e9, 1) == 15.9
    miss = {n: v["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"] / v["lts__t_sectors_srcunit_tex_op_read.sum"]
            for n, v in (("edge", e), ("interior", i))}
    assert round(100 * miss["edge"], 1) == 50.4 and round(100 * miss["interior"], 1) == 4.5
    assert round(e["dram__bytes_read.sum"] / 1e9, 1) == 33.0 and round(i["dram__bytes_read.sum"] / 1e9, 2) == 0.60


@pytest.mark.skipif(toolchain.for_arch(90) is None or not sass.available("9.0"), reason="no sm_90 toolchain and nvdisasm here")
def test_the_edge_loop_moves_four_times_the_local_bytes_of_the_k_tile_loop():
    f = sass.sass_facts(KernelConfig.make(**BCF16), "9.0")
    inner, edge = (sass.program_loop_counts(f[k])["loop_local_bytes"] for k in ("loop_program", "edge_loop_program"))
    assert (edge, inner) == (2028, 480)


def test_ncu_choices_asks_for_the_local_counters_only_with_local(monkeypatch, tmp_path):
    import ncu_choices

    seen = []

    def run(cmd, **kw):
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, stdout="", stderr="no GPU here")

    monkeypatch.setattr(ncu_choices, "local_device", lambda: None)
    monkeypatch.setattr(ncu_choices, "known_metrics", lambda ncu, names: names)
    monkeypatch.setattr(ncu_choices.subprocess, "run", run)
    for local in (False, True):
        assert ncu_choices.main(tmp_path / str(local), ["double_buffer:"], local=local) == 1
    metrics = [c[c.index("--metrics") + 1].split(",") for c in seen]
    only = [m for m in ncu_choices.LOCAL if m not in ncu_choices.SCHEDULERS]  # the DRAM's reads are always asked
    assert len(only) >= 10 and not set(only) & set(metrics[0])
    assert set(ncu_choices.LOCAL) <= set(metrics[1])
