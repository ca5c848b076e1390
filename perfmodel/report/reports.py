"""report.md and its figures for a recorded run (called by validate and by `perfmodel report`)."""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..analysis import bench_summary, bench_text, load_run, run_device
from ..errors import UserError
from ..catalogue import kernel_ids
from ..measure.ncu import parse_ncu
from . import plots

TERM_HELP = {
    "fma": "FMA pipe (FFMA rate)", "issue": "instruction issue (non-FFMA share)", "smem": "shared-memory/L1 wavefronts",
    "l2": "L2 bandwidth", "dram": "DRAM bandwidth", "local": "local memory (spills)", "latency": "exposed load latency",
}


def _size(r) -> str:
    return str(r["M"]) if r["M"] == r["N"] == r["K"] else f"{r['M']}x{r['N']}x{r['K']}"


def write_report(run_dir, out_dir, derived: dict, device=None, svg: bool = False) -> Path:
    run = load_run(run_dir)
    dev = device or run_device(run)
    out = Path(out_dir)
    rows, s = derived["rows"], derived["summary"]
    env = run.environment
    exts = ["png"] + (["svg"] if svg else [])
    figs = {}
    warnings = []
    fmt = lambda v, f="{:.1f}": "n/a" if v is None else f.format(v)  # noqa: E731
    for ext in exts:
        title = (f"{env.gpu_name}: predicted ({s.get('figures', 'datasheet')} figures) vs measured  -  "
                 f"MAPE {fmt(s.get('mape_pct'))} %, Spearman {fmt(s.get('spearman_all'), '{:.3f}')} ({s['points']} points)")
        figs["scatter"] = plots.scatter(rows, out / f"scatter.{ext}", title)
        if s.get("by_class"):  # a shape run: error by problem size and class; no square ladder or rooflines
            figs["shapes"] = plots.error_by_flops(rows, out / f"shapes.{ext}",
                                                  f"{env.gpu_name}: prediction error by problem size ({s.get('figures')} figures)")
            continue
        if any(r["group"] == "ladder" and r.get("measured_gflops") for r in rows):
            figs["ladder"] = plots.ladder_bars(rows, out / f"ladder.{ext}", f"SGEMM ladder on {env.gpu_name} vs cuBLAS (FP32)")
        for size in sorted({r["M"] for r in rows if r["group"] == "ladder"}):
            if size < 4096:
                continue
            sel = [r for r in rows if r["group"] == "ladder" and r["M"] == size and r.get("_prediction")]
            measured = {(r["kernel"], r["M"]): r["measured_gflops"] for r in sel if r.get("measured_gflops")}
            path, warn = plots.roofline(dev, [r["_prediction"] for r in sel], out / f"roofline_{size}.{ext}",
                                        f"{dev.name} roofline, ladder at {size}^3: predicted (hollow) vs measured (filled)", measured)
            figs[f"roofline_{size}"] = path
            if ext == "png":
                warnings += [f"{size}: {w}" for w in warn]
    L = [f"# perfmodel validate: {env.gpu_name}", "",
         f"Run started {env.started_utc} on `{env.hostname}`; compute capability {env.compute_capability}, {env.sm_count} SMs, "
         f"L2 {env.l2_bytes / 2**20:.0f} MB; driver {env.driver_version}, CUDA {env.cuda_driver_api}, {env.nvcc_version}; "
         f"pycuda {env.pycuda_version}; flags `{' '.join(env.nvcc_flags)}`. Device file `{env.device_file}`, "
         f"predictions with **{s.get('figures', 'datasheet')}** figures (device `{s.get('device', dev.name)}`).", "",
         "## Summary", "",
         "| points | failed | MAPE | median APE | Spearman (all) | Spearman (sweep) | model top-1 vs measured best (sweep) |",
         "|---|---|---|---|---|---|---|",
         f"| {s['points']} | {s['failed']} | {fmt(s.get('mape_pct'))} % | {fmt(s.get('median_ape_pct'))} % | "
         f"{fmt(s.get('spearman_all'), '{:.3f}')} | {fmt(s.get('spearman_sweep'), '{:.3f}')} | {fmt(s.get('sweep_top1_gap_pct'))} % slower |", ""]
    if s.get("intervals", {}).get("points"):
        c = s["intervals"]
        L += [f"Intervals: {c['inside_90_pct']:.1f} % of the {c['points']} scored points lie inside their 90 % interval, "
              f"{c['inside_50_pct']:.1f} % inside their 50 %; median 90 % half-width {c['median_half_width_90_pct']:.1f} % "
              f"({c['width_over_error']:.2f} x the median absolute error). The scatter plot shows each as a bar.", ""]
    pred = [r for r in rows if r.get("_prediction")]
    if pred:
        known = sum(r.get("facts") == "recorded run" for r in pred)
        progs = sum(bool(r.get("loop_program")) for r in pred)
        L += [f"Build facts: {known} of {len(pred)} predicted points use the registers and spills of the binary that ran"
              + (f", the other {len(pred) - known} estimated registers (the run did not record them)" if known < len(pred) else "")
              + f"; {progs} the simulated k-tile loop of their binary"
              + ("" if progs else " (none known: the run's kernel sources are not recorded or not archived)") + ".", ""]
    if warnings:
        L += ["**Warning: measured points above a ceiling** (the device figure or the model is wrong there):", ""]
        L += [f"- {w}" for w in warnings] + [""]
    if s.get("by_gpu"):
        L += ["## By GPU (the worker that measured each point)", "", "| GPU | points | scored | MAPE | bias |", "|---|---|---|---|---|"]
        L += [f"| {g} | {v['points']} | {v['scored']} | " + ("- | - |" if v["mape_pct"] is None else
              f"{v['mape_pct']:.1f} % | {v['bias_pct']:+.1f} % |") for g, v in s["by_gpu"].items()]
        L += [""]
    if s.get("by_class"):
        L += ["## By shape class", "", "| class | points | MAPE | bias |", "|---|---|---|---|"]
        L += [f"| {c} | {v['points']} | {v['mape_pct']:.1f} % | {v['bias_pct']:+.1f} % |" for c, v in s["by_class"].items()]
        L += [f"| all | {s['points']} | {fmt(s.get('mape_pct'))} % | {s['bias_pct']:+.1f} % |", ""]
        if s.get("holdout_unscored"):
            L += [f"{s['holdout_unscored']} measured points of the corpus hold-out (shapes/corpus.toml) are not scored here "
                  f"(`perfmodel report RUN --holdout` scores them too).", ""]
        if s.get("picks"):
            L += ["## The model's pick per shape", "",
                  "Among the measured configurations of each shape, the one the model predicts fastest against the fastest "
                  f"measured: {s['picks_within_3pct']} of {len(s['picks'])} shapes within 3 %, median gap "
                  f"{s['pick_gap_median_pct']:.1f} %, worst {s['pick_gap_max_pct']:.1f} %.", "",
                  "| shape | points | model's pick (measured GFLOPS) | fastest measured | gap | cuBLAS |", "|---|---|---|---|---|---|"]
            L += [f"| {sh} | {v['points']} | {v['pick']} ({v['pick_gflops']:,.0f}) | {v['best']} ({v['best_gflops']:,.0f}) | "
                  f"{v['gap_pct']:.1f} % | {fmt(v.get('cublas_gflops'), '{:,.0f}')} |" for sh, v in s["picks"].items()]
            L += [""]
        L += ["![shapes](shapes.png)", ""]
    if s.get("by_choice"):
        L += ["## By design choice", "",
              "Every scored point of a kernel with design choices, grouped by each choice's value (a point counts once "
              "per choice); worst-predicted value first.", "",
              "| choice | value | points | MAPE | bias |", "|---|---|---|---|---|"]
        L += [f"| {d['choice']} | {d['value']} | {d['points']} | {d['mape_pct']:.1f} % | {d['bias_pct']:+.1f} % |" for d in s["by_choice"]]
        L += [""]
    L += ["## The ladder", "", "| kernel | size | measured GFLOPS (q10-q90) | predicted | error | % of cuBLAS | bound |",
          "|---|---|---|---|---|---|---|"]
    order = {k: i for i, k in enumerate(["cublas"] + kernel_ids())}
    for r in sorted([r for r in rows if r["group"] in ("ladder", "baseline")], key=lambda r: (r["M"], order.get(r["kernel"], 99))):
        if not r.get("measured_gflops"):
            L.append(f"| {r['kernel']} | {_size(r)} | FAILED: {r['verification']} | | | | |")
            continue
        flops = 2.0 * r["M"] * r["N"] * r["K"]
        spread = f"{flops / r['q90_ms'] * 1e-6:,.0f}-{flops / r['q10_ms'] * 1e-6:,.0f}" if r.get("q10_ms") else ""
        L.append(f"| {r['kernel']} | {_size(r)} | {r['measured_gflops']:,.0f} ({spread}) | {fmt(r.get('predicted_gflops'), '{:,.0f}')} | "
                 f"{fmt(r.get('error_pct'), '{:+.1f}')} % | {fmt(r.get('pct_of_cublas'))} % | {r.get('bound', '')} |")
    L += ["", "![ladder](ladder.png)" if "ladder" in figs else "", "", "![scatter](scatter.png)", ""]
    L += [f"![roofline {k[9:]}]({Path(v).name})" for k, v in figs.items() if k.startswith("roofline")] + [""]
    worst = sorted([r for r in rows if r.get("error_pct") is not None], key=lambda r: -abs(r["error_pct"]))[:10]
    L += ["## Worst-predicted points", "",
          "The term the model found binding, and the runner-up; cycles are per k-tile for all resident blocks of an SM.", "",
          "| kernel | config | size | measured | predicted | error | bound (model) | runner-up | regs | blocks/SM |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in worst:
        cyc = r.get("cycles") or {}
        ranked = sorted(cyc.items(), key=lambda kv: -kv[1])
        runner = next((f"{k} ({v:,.0f})" for k, v in ranked if k != r["bound"]), "")
        L.append(f"| {r['kernel']} | `{r['config']}` | {_size(r)} | {r['measured_gflops']:,.0f} | {r['predicted_gflops']:,.0f} | "
                 f"{r['error_pct']:+.1f} % | {TERM_HELP.get(r['bound'], r['bound'])} | {runner} | {r['registers']} | {r['blocks_per_sm']} |")
    L += ncu_section(Path(run_dir), rows)
    failed = [r for r in rows if not r["verified"]]
    L += ["", "## Failed points", ""] + ([f"- {r['kernel']} {r['config']} {r['M']}: {r['verification']}" for r in failed] or ["none"])
    L += ["", "Kernels in this run: " + ", ".join(k for k in kernel_ids() if any(r["kernel"] == k for r in rows)) + ".", ""]
    path = out / "report.md"
    if path.exists():
        raise FileExistsError(path)
    path.write_text("\n".join(L))
    return path


def ncu_section(run_dir: Path, rows) -> list[str]:
    """Model counts against Nsight Compute counters for the ladder (validate --ncu)."""
    f = run_dir / "ncu_raw.csv"  # the raw record; ncu.json is a convenience copy
    if not f.exists():
        return []
    data = dict(size=json.loads((run_dir / "ncu.json").read_text()).get("size", 4096) if (run_dir / "ncu.json").exists() else 4096,
                kernels=parse_ncu(f.read_text()))
    size = data["size"]
    L = ["", f"## Model terms against hardware counters (ncu, ladder at {size})", "",
         "Totals over the kernel. Instructions are warp instructions; stalls are ncu's warp stall reasons per issued "
         "instruction (the three largest).", "",
         "| kernel | warp instr. model / ncu | FFMA share model / ncu | DRAM bytes model / ncu | L2 bytes model / ncu | "
         "smem wavefronts model / ncu | top stalls |", "|---|---|---|---|---|---|---|"]
    by_kernel = {r["kernel"]: r for r in rows if r["group"] == "ladder" and r["M"] == size and r.get("_prediction")}
    for k, c in data["kernels"].items():
        r = by_kernel.get(k)
        if r is None:
            continue
        p = r["_prediction"]
        bk = p.config.get("bk", 1)
        tiles = p.waves.blocks * math.ceil(p.K / bk)
        counts = p.issue.per_block_per_tile
        instr = sum(counts.values()) * tiles
        ffma_share = counts["ffma"] / sum(counts.values())
        lv = {t.level: t.bytes for t in p.traffic}
        n_instr = c.get("smsp__inst_executed.sum", float("nan"))
        n_ffma = c.get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", float("nan")) / 32
        dram = c.get("dram__bytes_read.sum", float("nan")) + c.get("dram__bytes_write.sum", 0.0)
        stalls = sorted(((h.replace("smsp__average_warps_issue_stalled_", "").replace("_per_issue_active.ratio", ""), v)
                         for h, v in c.items() if "issue_stalled" in h and "selected" not in h), key=lambda t: -t[1])[:3]
        L.append(f"| {k} | {instr:.3g} / {n_instr:.3g} | {ffma_share:.1%} / {n_ffma / n_instr:.1%} | {lv['dram']:.3g} / {dram:.3g} | "
                 f"{lv['l2']:.3g} / {c.get('lts__t_bytes.sum', float('nan')):.3g} | {lv['smem'] / 128:.3g} / "
                 f"{c.get('l1tex__data_pipe_lsu_wavefronts_mem_shared.sum', float('nan')):.3g} | "
                 + ", ".join(f"{n} {v:.2f}" for n, v in stalls) + " |")
    return L + [""]


def write_bench(out: Path, table: list[dict], device: str) -> dict:
    """bench.json, bench.md and bench.png of a bench run (analysis.bench_summary) into out (never overwritten);
    prints the overall line."""
    b = bench_summary(table)
    for name in ("bench.json", "bench.md", "bench.png"):
        if (out / name).exists():
            raise UserError(f"{out / name} exists; results are never overwritten")
    (out / "bench.json").write_text(json.dumps(b, indent=1))
    (out / "bench.md").write_text(bench_text(b, device))
    plots.bench_ratios(b, out / "bench.png", f"perfmodel bench on {device}: the model's pick against its peers")
    o = b["overall"]
    f = lambda v: "-" if v is None else f"{v:.2f}x"  # noqa: E731
    print(f"bench: {o['shapes']} shapes, the pick at {f(o['geomean_vs_cublas'])} cuBLAS and {f(o['geomean_vs_triton'])} Triton "
          f"(geometric means); its prediction within 8 % on {o['pick_within_8pct']}; {out / 'bench.md'}")
    return b
