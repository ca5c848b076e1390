"""Rooflines, predicted-vs-measured scatter and ladder bar charts. No model code here: every number
plotted comes from a `Prediction` or a derived results row."""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..shapes import CLASSES as SHAPE_CLASSES
from ..catalogue import kernel_ids  # noqa: E402

BOUND_MARKERS = {"fma": "o", "issue": "s", "smem": "D", "l2": "^", "dram": "v", "local": "X", "latency": "P", "occupancy": "x", "fixed": "*"}
LEVEL_COLORS = {"dram": "#b2182b", "l2": "#ef8a62", "smem": "#2166ac"}
FIGSIZE = (11, 7)
DPI = 110


def kernel_colors():
    ids = kernel_ids()
    cmap = plt.get_cmap("tab10" if len(ids) <= 10 else "tab20")
    return {k: cmap(i % cmap.N) for i, k in enumerate(ids)}


def _save(fig, out: Path):
    out = Path(out)
    if out.exists():
        raise FileExistsError(out)
    fig.savefig(out, dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return out


def _ceilings(ax, device, x):
    """Horizontal compute ceilings and diagonal bandwidth ceilings, each labelled with value+unit."""
    peak = device.peak_fp32_GFLOPS()
    hz = device.compute.sm_clock_boost_MHz * 1e6
    smem_GBps = device.memory.smem_bandwidth_bytes_per_clock_per_sm * device.compute.sm_count * hz * 1e-9
    ax.axhline(peak, color="k", lw=2)
    ax.text(x[0] * 1.1, peak * 1.06, f"FP32 peak {peak:,.0f} GFLOPS", fontsize=9)
    m = device.measured
    if m is not None and m.ffma_outer_GFLOPS:
        ax.axhline(m.ffma_outer_GFLOPS, color="k", lw=1.2, ls="--")
        ax.text(x[0] * 1.1, m.ffma_outer_GFLOPS * 0.88, f"GEMM FFMA issue ceiling (calibrated) {m.ffma_outer_GFLOPS:,.0f} GFLOPS", fontsize=9)
    for i, (name, bw) in enumerate((("DRAM", device.memory.dram_bandwidth_GBps), ("L2", device.memory.l2_bandwidth_GBps),
                                    ("shared memory", smem_GBps))):
        key = {"DRAM": "dram", "L2": "l2", "shared memory": "smem"}[name]
        y = np.minimum(bw * x, peak)
        ax.plot(x, y, color=LEVEL_COLORS[key], lw=1.5)
        yl = peak / (6 * 3.5 ** i)  # each label on its own line, at its own height
        ax.annotate(f"{name} {bw:,.0f} GB/s", xy=(yl / bw, yl), xytext=(4, 0), textcoords="offset points",
                    color=LEVEL_COLORS[key], fontsize=9, ha="left", va="top")
    return peak


def _level_of(bound: str) -> str:
    return bound if bound in ("dram", "l2", "smem") else "l2"


def _intensity(pred, level: str) -> float:
    return next(lv.intensity_flop_per_byte for lv in pred.traffic if lv.level == level)


def roofline(device, preds, out, title: str, measured: dict | None = None):
    """Predicted points (hollow) at the intensity of the level that bounds them (L2 for compute
    bounds); optional measured GFLOPS (filled) at the same intensity, joined by a line. Labels sit in
    a column at the right, spaced so they never overlap, with leader lines to their points."""
    fig, ax = plt.subplots(figsize=FIGSIZE)
    x = np.logspace(-2, 3.5, 200)
    peak = _ceilings(ax, device, x)
    colors = kernel_colors()
    pts = []
    warnings = []
    for p in preds:
        lvl = _level_of(p.bound)
        ai = _intensity(p, lvl)
        c = colors.get(p.kernel, "gray")
        mk = BOUND_MARKERS.get(p.bound, "o")
        ax.scatter([ai], [p.gflops], s=70, marker=mk, facecolors="none", edgecolors=[c], linewidths=1.8, zorder=3)
        if p.interval is not None:  # the prediction's 90 % interval (model.uncertainty)
            # (it may lie wholly below the point: a datasheet FFMA rate is a ceiling)
            ax.vlines([ai * 0.93], [p.interval.q05_GFLOPS], [p.interval.q95_GFLOPS], colors=[c], lw=1.2, alpha=0.8, zorder=2)
        y_label = p.gflops
        key = (p.kernel, p.M)
        if measured and key in measured:
            mg = measured[key]
            ax.scatter([ai], [mg], s=70, marker=mk, color=c, zorder=4)
            ax.plot([ai, ai], [p.gflops, mg], color=c, lw=1, zorder=2)
            ceiling = min(peak, next(lv.ceiling_GFLOPS for lv in p.traffic if lv.level == lvl))
            if mg > ceiling * 1.001:
                warnings.append(f"{p.kernel}: measured {mg:,.0f} > {lvl} ceiling {ceiling:,.0f} GFLOPS")
            y_label = mg
        pts.append((ai, y_label, p, c))
    # label column at the right, ordered by y, spaced evenly in log space
    pts.sort(key=lambda t: t[1])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ymin = max(min(t[1] for t in pts) / 4, 1)
    ax.set_ylim(ymin, peak * 2.2)
    ax.set_xlim(x[0], x[-1])
    lo, hi = math.log10(ymin * 2), math.log10(peak * 1.2)
    for i, (ai, y, p, c) in enumerate(pts):
        ly = 10 ** (lo + (hi - lo) * (i + 0.5) / max(len(pts), 1))
        meas = f", measured {measured[(p.kernel, p.M)]:,.0f}" if measured and (p.kernel, p.M) in measured else ""
        ax.annotate(f"{p.kernel}: {p.gflops:,.0f}{meas}", xy=(ai, y), xytext=(1.02, (math.log10(ly) - math.log10(ymin)) /
                    (math.log10(peak * 2.2) - math.log10(ymin))), textcoords="axes fraction", fontsize=8.5, color=c,
                    va="center", arrowprops=dict(arrowstyle="-", color=c, lw=0.6, alpha=0.7))
    handles = [plt.Line2D([], [], marker=m, ls="", color="k", mfc="none", label=f"bound: {b}") for b, m in BOUND_MARKERS.items()
               if any(p.bound == b for p in preds)]
    handles += [plt.Line2D([], [], marker="o", ls="", color="gray", mfc="none", label="predicted (hollow)")]
    if any(p.interval is not None for p in preds):
        handles += [plt.Line2D([], [], marker="|", ls="", color="gray", markersize=12, label="its 90 % interval")]
    if measured:
        handles += [plt.Line2D([], [], marker="o", ls="", color="gray", label="measured (filled)")]
    ax.legend(handles=handles, loc="lower right", fontsize=8.5, framealpha=0.9)
    ax.set_xlabel("arithmetic intensity at the bounding level (flop/byte; L2 for compute-bound kernels)")
    ax.set_ylabel("performance (GFLOPS)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.25)
    if warnings:
        ax.text(0.01, 0.01, "WARNING above a ceiling:\n" + "\n".join(warnings), transform=ax.transAxes, color="red",
                fontsize=9, va="bottom", bbox=dict(facecolor="white", edgecolor="red"))
    return _save(fig, out), warnings


def scatter(rows, out, title: str):
    """Predicted vs measured, log-log, y = x and a +-10 % band, coloured by kernel; each prediction's 90 %
    interval as a vertical bar, and the share of points inside it in the legend."""
    fig, ax = plt.subplots(figsize=(8, 7.5))
    colors = kernel_colors()
    pts = [r for r in rows if r.get("error_pct") is not None]
    lo = min(min(r["measured_gflops"], r["predicted_gflops"]) for r in pts) / 1.5
    hi = max(max(r["measured_gflops"], r["predicted_gflops"]) for r in pts) * 1.5
    xs = np.logspace(math.log10(lo), math.log10(hi), 50)
    ax.fill_between(xs, xs / 1.1, xs * 1.1, color="gray", alpha=0.2, label="±10 %")
    ax.plot(xs, xs, color="k", lw=1, label="predicted = measured")
    for k in kernel_ids():
        sel = [r for r in pts if r["kernel"] == k]
        iv = [r for r in sel if r.get("q05_gflops")]
        if iv:
            ax.vlines([r["measured_gflops"] for r in iv], [r["q05_gflops"] for r in iv], [r["q95_gflops"] for r in iv],
                      colors=[colors[k]], lw=0.6, alpha=0.35, zorder=1)
        if sel:
            ax.scatter([r["measured_gflops"] for r in sel], [r["predicted_gflops"] for r in sel], s=28, color=colors[k],
                       label=k, marker="o" if sel[0]["group"] != "sweep" else "o", alpha=0.85, edgecolors="k", linewidths=0.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured GFLOPS (median)")
    ax.set_ylabel("predicted GFLOPS (bars: 90 % interval)")
    inside = [r for r in pts if r.get("q05_gflops")]
    if inside:
        share = np.mean([r["q05_gflops"] <= r["measured_gflops"] <= r["q95_gflops"] for r in inside])
        ax.plot([], [], color="gray", lw=0.8, label=f"90 % interval: {100 * share:.0f} % of {len(inside)} measured inside")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8, loc="upper left")
    return _save(fig, out)


def ladder_bars(rows, out, title: str):
    """GFLOPS per ladder kernel (measured filled, predicted hatched), one panel per size, cuBLAS as a line."""
    ladder = [r for r in rows if r["group"] == "ladder" and r.get("measured_gflops")]
    sizes = sorted({r["M"] for r in ladder})
    cub = {r["M"]: r["measured_gflops"] for r in rows if r["kernel"] == "cublas" and r.get("measured_gflops")}
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 5.5), sharey=True, squeeze=False)
    colors = kernel_colors()
    ids = kernel_ids()
    for ax, s in zip(axes[0], sizes):
        sel = {r["kernel"]: r for r in ladder if r["M"] == s}
        xs = np.arange(len(ids))
        meas = [sel[k]["measured_gflops"] if k in sel else 0 for k in ids]
        pred = [sel[k].get("predicted_gflops") or 0 if k in sel else 0 for k in ids]
        ax.bar(xs - 0.2, meas, 0.4, color=[colors[k] for k in ids], label="measured")
        ax.bar(xs + 0.2, pred, 0.4, color="white", edgecolor=[colors[k] for k in ids], hatch="//", label="predicted")
        if s in cub:
            ax.axhline(cub[s], color="k", ls="--", lw=1.2)
            ax.text(-0.4, cub[s] * 1.02, f"cuBLAS {cub[s]:,.0f}", fontsize=8)
            for x, m in zip(xs, meas):
                if m:
                    ax.text(x - 0.2, m * 1.01, f"{100 * m / cub[s]:.0f}%", ha="center", fontsize=7, rotation=90, va="bottom")
        ax.set_xticks(xs)
        ax.set_xticklabels(ids, rotation=60, ha="right", fontsize=8)
        ax.set_title(f"M = N = K = {s}", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    tallest = max([r["measured_gflops"] for r in ladder] + [r.get("predicted_gflops") or 0 for r in ladder] + list(cub.values()))
    axes[0][0].set_ylim(0, tallest * 1.15)  # room for the labels above the tallest bar and the cuBLAS line
    axes[0][0].set_ylabel("GFLOPS (% of cuBLAS above the bars)")
    axes[0][0].legend(fontsize=8, loc="center left")  # the upper left holds the cuBLAS label
    fig.suptitle(title)
    fig.tight_layout()
    return _save(fig, out)


def error_by_flops(rows, out, title: str):
    """A shape run's prediction error against the problem's size (FLOPs), coloured by corpus class."""
    fig, ax = plt.subplots(figsize=(9, 5.5))
    pts = [r for r in rows if r.get("error_pct") is not None and r.get("shape_class")]
    cmap = plt.get_cmap("tab10")
    for i, c in enumerate(SHAPE_CLASSES):
        sel = [r for r in pts if r["shape_class"] == c]
        if sel:
            e = np.array([r["error_pct"] for r in sel])
            ax.scatter([2.0 * r["M"] * r["N"] * r["K"] for r in sel], e, s=22, color=cmap(i), alpha=0.8, edgecolors="k",
                       linewidths=0.3, label=f"{c} ({len(sel)}: MAPE {np.abs(e).mean():.1f} %, bias {e.mean():+.1f} %)")
    ax.axhline(0, color="k", lw=1)
    ax.axhspan(-10, 10, color="gray", alpha=0.15)
    ax.set_xscale("log")
    ax.set_xlabel("problem size (FLOP = 2 M N K)")
    ax.set_ylabel("prediction error (%; > 0 optimistic)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7.5, loc="best")
    return _save(fig, out)



def bench_ratios(bench: dict, out, title: str):
    """A bench run: the model's pick against cuBLAS (circles) and the Triton peer (triangles), measured GFLOPS
    ratio against the problem's size, coloured by corpus class; geometric means in the legend."""
    fig, ax = plt.subplots(figsize=(9, 5.5))
    cmap = plt.get_cmap("tab10")
    for i, c in enumerate(SHAPE_CLASSES):
        sel = [d for d in bench["shapes"] if d["shape_class"] == c]
        g = bench["by_class"].get(c)
        if not sel or g is None:
            continue
        for peer, marker in (("cublas", "o"), ("triton", "^")):
            pts = [(d["flop"], d[f"vs_{peer}"]) for d in sel if d.get(f"vs_{peer}")]
            if pts:
                gm = g[f"geomean_vs_{peer}"]
                ax.scatter(*zip(*pts), s=34, marker=marker, color=cmap(i), alpha=0.85, edgecolors="k", linewidths=0.3,
                           label=f"{c} vs {'cuBLAS' if peer == 'cublas' else 'Triton'} (geomean {gm:.2f})")
    ax.axhline(1, color="k", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}" if v in (0.6, 0.8, 1.5, 3, 5) else ""))
    ax.set_xlabel("problem size (FLOP = 2 M N K)")
    ax.set_ylabel("the model's pick / peer (measured GFLOPS; > 1 faster; log scale)")
    o = bench["overall"]
    ax.set_title(f"{title}\noverall geomean: {o['geomean_vs_cublas'] or float('nan'):.2f}x cuBLAS, "
                 f"{o['geomean_vs_triton'] or float('nan'):.2f}x Triton", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, out)
