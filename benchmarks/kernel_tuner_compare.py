"""How many measured configurations each approach needs to come within 3 % of a shape's best: model-guided
tuning (`perfmodel sweep --measure K`: the model's order) against Kernel Tuner's strategies, replayed on the
CPU in Kernel Tuner's simulation mode from the cache files a space run measured on the GPU
(benchmarks/kernel_tuner_space.py).

    python benchmarks/kernel_tuner_compare.py RUN [--seeds 5] [--out results/archive/kernel-tuner-compare-DATE-DEVICE]

RUN: a results folder `*-space-KERNEL` (kernel_tuner/SHAPE.json[.xz]). The best of a shape is the fastest of
its whole space (every strategy draws from it). The model's order comes from `perfmodel sweep
--kernel-tuner` (perfmodel.kernel_tuner: the module Kernel Tuner takes) with the device's reference
calibration and the top 20 re-predicted from their binaries; Kernel Tuner runs that module's tune_params
and restrictions with each strategy's default options, one run per seed, until the whole space is drawn
or the strategy stops. Writes OUT.txt (the table), OUT.json (every run's order) and OUT.png (best so far
against configurations measured)."""
from __future__ import annotations

import argparse
import importlib.util
import json
import lzma
import sys
import tempfile
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from perfmodel import kernel_tuner as kt_module
from perfmodel.model.figures import Figures
from perfmodel.model.predict import Problem
from perfmodel.shapes import corpus
from perfmodel.sweep import rank

STRATEGIES = ("random_sample", "genetic_algorithm", "bayes_opt", "simulated_annealing", "greedy_ils")
WITHIN = 1.03  # within 3 % of the best time
SASS_TOP = 20


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def first_within(order: list[tuple], times: dict, target: float):
    """1-based count of distinct configurations measured until one is within target; None if never."""
    seen = []
    for r in order:
        if r in seen:
            continue
        seen.append(r)
        t = times.get(r)
        if isinstance(t, float) and t <= target:
            return len(seen)
    return None


def best_so_far(order: list[tuple], times: dict, best: float) -> list[float]:
    """Best so far (as a fraction of the best's speed) after each distinct configuration measured."""
    out, seen, cur = [], set(), float("inf")
    for r in order:
        if r in seen:
            continue
        seen.add(r)
        t = times.get(r)
        if isinstance(t, float):
            cur = min(cur, t)
        out.append(best / cur if cur < float("inf") else 0.0)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", help="path prefix of the .txt/.json/.png written (default results/archive/kernel-tuner-compare-DATE-DEVICE)")
    a = ap.parse_args(argv)
    import kernel_tuner  # noqa: F401  (the dev extra installs it)

    run = Path(a.run)
    raw = json.loads(lzma.decompress((run / "raw.json.xz").read_bytes()) if (run / "raw.json.xz").exists() else (run / "raw.json").read_text())
    device = raw["environment"]["device_file"]
    kernel = next(m["kernel"] for m in raw["measurements"] if m["kernel"] != "cublas")
    cublas = {m["shape"]: m["gflops_median"] for m in raw["measurements"] if m["kernel"] == "cublas"}
    fig = Figures.load(device, Path("results") / f"reference-calibration-{device}.toml")
    shapes = {s.name: s for s in corpus()}
    date = datetime.now(timezone.utc)
    out = Path(a.out) if a.out else Path("results/archive") / f"kernel-tuner-compare-{date:%Y%m%d}-{device}"
    for suf in (".txt", ".json", ".png"):
        if out.with_suffix(suf).exists():
            print(f"error: {out.with_suffix(suf)} exists; results are never overwritten", file=sys.stderr)
            return 2
    report, lines = {}, []
    tmp = Path(tempfile.mkdtemp())
    for f in sorted((run / "kernel_tuner").iterdir()):
        name = f.name.split(".json")[0]
        sh = shapes[name]
        cache = tmp / f"{name}.json"
        cache.write_bytes(lzma.decompress(f.read_bytes()) if f.suffix == ".xz" else f.read_bytes())
        data = json.loads(cache.read_text())
        rk = rank(fig, Problem(sh.M, sh.N, sh.K), (kernel,), sass_top=SASS_TOP, choices=False)
        # the space the run measured: the sweep's space then (split_k's slices up to 32; 48 and 64 were added after
        # the H100 space run, which did not measure them, so the replay keeps to the measured configurations)
        keys = data["tune_params_keys"]
        measured = {tuple(v[k] for k in keys) for v in data["cache"].values()}
        keep = [i for i, c in enumerate(rk.configs) if tuple(c.params()[k] for k in keys) in measured]
        dropped = {rk.configs[i].params().get("splits") for i in range(len(rk.configs)) if i not in set(keep)}
        assert dropped <= {48, 64}, f"the run measured another space than the model ranks: {dropped}"
        mod_path = tmp / f"space_{name.replace('-', '_')}.py"
        kt_module.write(mod_path, kt_module.module_text(kernel, device, sh.M, sh.N, sh.K, [rk.configs[i] for i in keep],
                                                        np.asarray(rk.gflops)[keep]))
        sp = load_module(mod_path)
        assert sp.keys == data["tune_params_keys"], (sp.keys, data["tune_params_keys"])
        times = {tuple(v[k] for k in sp.keys): v["time"] for v in data["cache"].values()}
        assert set(times) == set(sp.VALID), "the space run measured another space than the model ranks"
        best = min(t for t in times.values() if isinstance(t, float))
        target = best * WITHIN
        model_order = [r for r, _, _ in sp.model_order]
        res = dict(M=sh.M, N=sh.N, K=sh.K, configs=len(times), best_gflops=2e-6 * sh.M * sh.N * sh.K / best,
                   cublas_gflops=cublas.get(name), within=sum(isinstance(t, float) and t <= target for t in times.values()),
                   model=dict(n=first_within(model_order, times, target), curve=best_so_far(model_order, times, best)[:200],
                              top1_pct_of_best=100 * best / times[model_order[0]]),
                   strategies={})
        for strat in STRATEGIES:
            runs = []
            for seed in range(1, a.seeds + 1):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    results, _ = kernel_tuner.tune_kernel(
                        sp.kernel_name, sp.kernel_file, data["problem_size"], [np.zeros(1, np.float32)], sp.tune_params,
                        restrictions=sp.restrictions, strategy=strat, strategy_options=dict(max_fevals=len(times)),
                        cache=str(cache), simulation_mode=True, grid_div_x=sp.grid_div_x, grid_div_y=sp.grid_div_y,
                        quiet=True, seed=seed, lang="CUDA")
                order = [tuple(r[k] for k in sp.keys) for r in results]
                n = first_within(order, times, target)
                runs.append(dict(seed=seed, n=n, evaluated=len(set(order)), curve=best_so_far(order, times, best)[:200]))
            ns = [r["n"] if r["n"] is not None else float("inf") for r in runs]
            res["strategies"][strat] = dict(runs=runs, median_n=float(np.median(ns)), min_n=min(ns), max_n=max(ns))
            print(f"  {name}: {strat:20} median {np.median(ns):6.1f} ({min(ns)}-{max(ns)})", flush=True)
        report[name] = res
    w = max(len(s) for s in STRATEGIES)
    lines.append(f"Configurations measured until one is within 3 % of the best of the whole space ({kernel}, "
                 f"{device}; Kernel Tuner {kernel_tuner.__version__}, simulation mode, {a.seeds} seeds, median (min-max))")
    lines.append(f"{'shape':26} {'space':>5} {'<=3%':>4} {'model':>5} " + " ".join(f"{s:>{w}}" for s in STRATEGIES)
                 + f" {'best KT/model':>13}")
    wins = 0
    for name, r in report.items():
        cells = []
        for s in STRATEGIES:
            d = r["strategies"][s]
            fmt = lambda v: "inf" if v == float("inf") else f"{v:g}"  # noqa: E731
            cells.append(f"{fmt(d['median_n']) + ' (' + fmt(d['min_n']) + '-' + fmt(d['max_n']) + ')':>{w}}")
        best_kt = min(r["strategies"][s]["median_n"] for s in STRATEGIES)
        m = r["model"]["n"]
        ratio = best_kt / m if m else float("nan")
        wins += bool(m is not None and m <= 10 and ratio >= 5)
        lines.append(f"{name:26} {r['configs']:5d} {r['within']:4d} {str(m):>5} " + " ".join(cells) + f" {ratio:13.1f}")
    lines.append(f"shapes where the model needs <= 10 and the best strategy's median >= 5x as many: {wins} of {len(report)}")
    lines.append("model top-1 as % of the best: " + ", ".join(f"{n} {r['model']['top1_pct_of_best']:.1f}" for n, r in report.items()))
    text = "\n".join(lines)
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".txt").write_text(text + "\n")
    out.with_suffix(".json").write_text(json.dumps(dict(run=str(run), kernel=kernel, device=device, seeds=a.seeds,
                                                         kernel_tuner=kernel_tuner.__version__, shapes=report), indent=1))
    plot(report, out.with_suffix(".png"), kernel, device)
    return 0


def plot(report: dict, path: Path, kernel: str, device: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(report), figsize=(4.2 * len(report), 3.6), sharey=True)
    for ax, (name, r) in zip(np.atleast_1d(axes), report.items()):
        c = r["model"]["curve"]
        ax.plot(np.arange(1, len(c) + 1), 100 * np.asarray(c), color="k", lw=2.2, label="model order")
        for s, d in r["strategies"].items():
            L = min(len(x["curve"]) for x in d["runs"])
            med = np.median(np.asarray([x["curve"][:L] for x in d["runs"]]), axis=0)
            ax.plot(np.arange(1, L + 1), 100 * med, lw=1.2, label=f"{s} (median of {len(d['runs'])})")
        ax.axhline(100 / WITHIN, color="grey", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlim(1, 200)
        ax.set_ylim(40, 101)
        ax.set_title(f"{name}\n({r['configs']} configurations)", fontsize=9)
        ax.set_xlabel("configurations measured")
    np.atleast_1d(axes)[0].set_ylabel("best so far, % of the space's best")
    np.atleast_1d(axes)[0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{kernel} on {device}: model-guided order vs Kernel Tuner strategies (dotted: within 3 %)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
