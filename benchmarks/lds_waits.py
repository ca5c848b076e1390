"""Shared loads waited for soon after they issue: where a k-tile loop's warps wait on the short scoreboard (CPU,
with a local toolchain; reads records of benchmarks/ncu_stall_pcs.py).

A warp issues in order. An instruction whose control code waits on a scoreboard (sass.control_codes) holds the warp
until every instruction pending on it is done. A *tight wait* is such a wait whose latest producer on that
scoreboard is a shared load (LDS) with fewer than F FFMAs (default 4) between the two: the warp waits about a shared
load's latency there unless another warp of its scheduler issues meanwhile. nvcc places them where registers are
short; the model's replay (model.schedule) sees each of them as the operand's producer, at the shared latency.

    python3 benchmarks/lds_waits.py SPEC ...                   per configuration (kernel:key=value,...), the local
                                                               build's k-tile loop: instructions, FFMAs, waits on a
                                                               shared load, tight ones, and where they sit
    python3 benchmarks/lds_waits.py --record JSON[:LABEL,...]   a ncu_stall_pcs.py record (its JSON and, beside it,
                                                               the source pages cfgN-source.csv[.xz] or the LABELs'
                                                               `<stem>-<LABEL>.csv.xz`): per configuration the loop's
                                                               samples, short-scoreboard samples, and the share of
                                                               each at its tight waits; then the short-scoreboard
                                                               samples by the FFMAs between each load and its wait
    python3 benchmarks/lds_waits.py --replay SPEC ...          per configuration, its loop replayed (model.schedule, the
                                                               H200's latencies, one issue clock an FFMA, the register
                                                               banks) with one warp a scheduler (one block of four
                                                               warps an SM) and with two on their own (the model)
                                                               and in step: cycles a k step (--latency L: the
                                                               shared loads' latency, default the H200's); the
                                                               last two again with the scoreboards' waits
                                                               (scoreboard_deps) in place of the register flow
    python3 benchmarks/lds_waits.py --pairs RUN [--calibration F]   a recorded run's configurations measured with B's
                                                               shared rows plain and padded: the measured speed-up
                                                               beside each replay's (and the model's, with F's
                                                               figures), and how well each orders them
    python3 benchmarks/lds_waits.py --rank RUN ... [--calibration F]   recorded sweep runs scored with the model's
                                                               rule and with its warps replayed in step: MAPE,
                                                               bias, Spearman, and the gap of the model's first
                                                               to the fastest measured, per run and over all
    python3 benchmarks/lds_waits.py --points POINTS.csv ...     recorded points (`perfmodel accuracy RUN ... --points
                                                               F`): per configuration the local build's tight waits
                                                               a 1,024 FFMAs of its loop; the points' count, mean
                                                               and median error by that density and by the bound"""
import argparse
import collections
import csv
import json
import lzma
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from ncu_stall_pcs import opcode as _opcode  # noqa: E402

ALL = "Warp Stall Sampling (All Samples)"
SHORT = "stall_short_sb"  # ncu's source page: samples waiting on the short scoreboard
SHORT_NI = "stall_short_sb (Not Issued)"  # of them, samples at which no warp of the scheduler issued
DISTANCES = ((0, 4), (4, 8), (8, 16), (16, 32), (32, 64), (64, None))  # FFMAs between a shared load and its wait


def loop_texts(body: list[str]) -> list[str]:
    """The instruction texts of nvdisasm lines (opcode and operands, no address, no predicate dropped)."""
    from perfmodel.measure.sass import _INSTRUCTION

    out = []
    for line in body:
        m = _INSTRUCTION.search(line)
        if m:
            out.append(" ".join(((m.group(1) or "") + m.group(2) + " " + m.group(3)).split()))
    return out


def tight_waits(texts: list[str], codes: list[dict], ffmas: int = 4) -> dict:
    """Per loop (steady state: the second pass, producers from the first counted): the waits on a scoreboard
    whose latest producer is a shared load, and the tight ones among them (fewer than `ffmas` FFMAs between),
    by instruction index: {index: FFMAs between}."""
    n = len(texts)
    last: dict[int, int] = {}
    lds, tight = {}, {}
    for j in range(2 * n):
        i = j % n
        for b in range(6):
            if codes[i]["wait"] >> b & 1 and b in last and j >= n:
                k = last[b]
                if _opcode(texts[k % n]).startswith("LDS"):
                    f = sum(_opcode(texts[t % n]).startswith("FFMA") for t in range(k + 1, j))
                    lds[i] = min(lds.get(i, f), f)
                    if f < ffmas:
                        tight[i] = lds[i]
        if codes[i]["write"] != 7:
            last[codes[i]["write"]] = j
    return dict(lds=lds, tight=tight)


def scoreboard_deps(program: dict, codes: list[dict]) -> list[list[int]]:
    """A loop program's dependencies as the hardware keeps them (sass.control_codes): a wait on a scoreboard holds
    the warp until every instruction still pending on it is done, so each instruction depends on every
    variable-latency producer (shared, global and local loads) that released that scoreboard's write since the
    last wait on it, not only on its operands' producers (program["deps"], the register flow); the register
    flow's fixed-latency dependencies stay. Distances reach into the previous pass, like program["deps"]."""
    from perfmodel.measure.sass import _VARIABLE

    cls, n = program["cls"], len(program["cls"])
    pending: dict[int, list[int]] = {b: [] for b in range(6)}
    out: list[list[int]] = [[] for _ in range(n)]
    for j in range(2 * n):
        i = j % n
        ds = set()
        for b in range(6):
            if codes[i]["wait"] >> b & 1:
                ds.update(j - k for k in pending[b])
                pending[b] = []
        if j >= n:
            out[i] = sorted(ds | {d for d in program["deps"][i] if cls[(j - d) % n] not in _VARIABLE})
        if codes[i]["write"] != 7:
            pending[codes[i]["write"]].append(j)
    return out


def loop_of(cfg):
    """(texts, control codes) of the local build's k-tile loop of a KernelConfig, or None without such a loop."""
    from perfmodel.measure import sass

    listing = sass.listing_of(cfg, "9.0")
    body = sass.loop_lines(sass.own_code(listing)) if listing else None
    codes = sass.control_codes(body) if body else None
    return None if codes is None else (loop_texts(body), codes)


def local_loop(spec: str):
    """loop_of a kernel:key=value spec."""
    from ncu_choices import parse

    return loop_of(parse(spec))


def static(specs: list[str], ffmas: int) -> int:
    print(f"| configuration | loop instructions | FFMAs | waits on a shared load | tight (< {ffmas} FFMAs after it) |")
    print("|---|---:|---:|---:|---:|")
    for s in specs:
        texts, codes = local_loop(s)
        w = tight_waits(texts, codes, ffmas)
        nf = sum(_opcode(t).startswith("FFMA") for t in texts)
        print(f"| {s} | {len(texts)} | {nf} | {len(w['lds'])} | {len(w['tight'])} |")
    return 0


def _source_rows(path: Path) -> list[dict]:
    from ncu_stall_pcs import parse_source_page

    text = lzma.open(path, "rt").read() if path.suffix == ".xz" else path.read_text()
    return parse_source_page(text)


def record(arg: str, ffmas: int) -> int:
    from epilogue_waits import regions

    path, _, labels = arg.partition(":")
    js = json.loads(Path(path).read_text())
    base = Path(path)
    names = labels.split(",") if labels else []
    by_distance = []
    print(f"| configuration | us | loop samples | short scoreboard in the loop | tight waits | their share of the loop's samples | of its short scoreboard |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for i, (spec, v) in enumerate(js["configs"].items()):
        cands = ([base.with_name(f"{base.stem}-{names[i]}.csv.xz")] if i < len(names) else []) + \
                [base.with_name(f"cfg{i}-source.csv"), base.with_name(f"cfg{i}-source.csv.xz")]
        src = next((c for c in cands if c.exists()), None)
        if src is None:
            print(f"| {spec} | no source page |")
            continue
        rows = _source_rows(src)
        _, loop, _ = regions(rows)
        got = [" ".join(r["source"].split()) for r in rows[loop.start:loop.stop]]
        texts, codes = local_loop(spec)
        if [_opcode(t) for t in got] != [_opcode(t) for t in texts]:
            print(f"| {spec} | the profiled loop ({len(got)} instructions) is not the local build's ({len(texts)}) |")
            continue
        w = tight_waits(texts, codes, ffmas)
        lrows = rows[loop.start:loop.stop]
        tot = sum(r.get(ALL, 0) for r in lrows)
        sh = sum(r.get(SHORT, 0) for r in lrows)
        t_all = sum(lrows[k].get(ALL, 0) for k in w["tight"])
        t_sh = sum(lrows[k].get(SHORT, 0) for k in w["tight"])
        print(f"| {spec} | {v.get('us') or 0:.0f} | {tot:.0f} | {sh / tot:.3f} | {len(w['tight'])} of {len(texts)} | "
              f"{t_all / tot:.3f} | {t_sh / max(sh, 1):.3f} |")
        by_distance.append((spec, w["lds"], lrows, sh))
    if by_distance:
        print("\nshort-scoreboard samples at the waits on a shared load, by the FFMAs between the load and the wait "
              "(waits, samples, share of the loop's short-scoreboard samples, of them not issued):")
        print("| configuration | " + " | ".join(f"{a}-{b - 1}" if b else f"{a}+" for a, b in DISTANCES) + " |")
        print("|---|" + "---:|" * len(DISTANCES))
        for spec, lds, lrows, sh in by_distance:
            cells = []
            for a, b in DISTANCES:
                ks = [k for k, f in lds.items() if f >= a and (b is None or f < b)]
                s = sum(lrows[k].get(SHORT, 0) for k in ks)
                cells.append(f"{len(ks)}, {s:.0f}, {s / max(sh, 1):.2f}, {sum(lrows[k].get(SHORT_NI, 0) for k in ks):.0f}")
            print(f"| {spec} | " + " | ".join(cells) + " |")
    return 0


def replay_cycles(spec: str, latency: "float | None" = None) -> dict:
    """Cycles a k step of a configuration's loop (the local build) replayed with the H200's latencies, one issue
    clock an FFMA and the register banks: `one` warp a scheduler, two on their `own` (the model's rule) and `in
    step`, each with the register flow's dependencies and, `*_sb`, with the scoreboards' (scoreboard_deps)."""
    from ncu_choices import parse
    from perfmodel.devices import load_device
    from perfmodel.measure import sass
    from perfmodel.model import schedule
    from perfmodel.model.predict import ffma_per_thread_per_tile, ldg_wavefronts
    from perfmodel.model.smem_banks import smem_counts

    dev = load_device("h200")
    lat, banks = dev.latency, dev.compute.register_banks or 0
    smem = lat.smem_latency_cycles if latency is None else latency
    cfg = parse(spec)
    prog = sass.sass_facts(cfg, "9.0")["loop_program"]
    li, lw, si, sw = smem_counts(cfg)
    steps = cfg.bk * round(prog["cls"].count("F") / ffma_per_thread_per_tile(cfg))  # k-tiles a pass x bk
    _, codes = loop_of(cfg)
    by_sb = dict(prog, id=prog["id"] + "-scoreboards", deps=scoreboard_deps(prog, codes))
    out = {}
    for tag, p in (("", prog), ("_sb", by_sb)):
        for name, w, st in (("one", 1, False), ("own", 2, False), ("in_step", 2, True)):
            out[name + tag] = schedule.simulate(p, w, 1, 1.0, smem, lat.l1_latency_cycles, lat.fma_latency_cycles,
                                                lw / li if li else 1.0, sw / si if si else 1.0, 4.0, banks=banks,
                                                ldg_wavefronts=ldg_wavefronts(cfg), in_step=st) / steps
    out["steps"] = steps
    return out


def replay(specs: list[str], latency: "float | None" = None) -> int:
    """Cycles a k step of each configuration's loop replayed with one warp a scheduler, and with two on their own
    (the model) and in step; then the last two with the scoreboards' dependencies."""
    from perfmodel.devices import load_device

    smem = load_device("h200").latency.smem_latency_cycles if latency is None else latency
    print(f"shared-load latency {smem:g} cycles\n")
    print("| configuration | k steps a pass | one warp | two warps on their own | in step | in step / own "
          "| on their own, scoreboard waits | in step, scoreboard waits |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for s in specs:
        r = replay_cycles(s, latency)
        print(f"| {s} | {r['steps']} | {r['one']:.1f} | {r['own']:.1f} | {r['in_step']:.1f} | "
              f"{r['in_step'] / r['own']:.3f} | {r['own_sb']:.1f} | {r['in_step_sb']:.1f} |")
    return 0


PAIR_REPLAYS = ("own", "in_step", "own_sb", "in_step_sb")


def _spec_of(kernel: str, config: dict) -> str:
    """A recorded configuration as a kernel:key=value,... spec, its keys sorted."""
    return f"{kernel}:" + ",".join(f"{k}={v}" for k, v in sorted(config.items()))


def layout_pairs(run_dir: Path) -> list[tuple[str, str, float, tuple]]:
    """The configurations a recorded run measured (verified) with B's shared rows plain and padded and otherwise
    the same, at the same size: (plain spec, padded spec, padded GFLOPS / plain GFLOPS, (M, N, K)), in the run's
    order."""
    from perfmodel.analysis import PEERS, load_run

    plain, padded = {}, {}
    for m in load_run(run_dir).measurements:
        if not m.verified or m.kernel in PEERS:
            continue
        rest = tuple(sorted((k, v) for k, v in m.config.items() if k not in ("b_layout", "b_pad")))
        spec = _spec_of(m.kernel, m.config)
        layout = m.config.get("b_layout", "plain")
        if layout in ("plain", "padded"):
            (plain if layout == "plain" else padded).setdefault((m.kernel, rest, m.M, m.N, m.K), (spec, m.gflops_median))
    return [(plain[k][0], padded[k][0], padded[k][1] / plain[k][1], k[2:]) for k in plain if k in padded]


def _predicted(run_dir: Path, calibration: Path) -> dict:
    """The model's GFLOPS for each point of a recorded run (its binary's facts, the calibration's figures), by
    (spec as layout_pairs writes it, (M, N, K))."""
    from perfmodel.analysis import load_run, rows, run_facts, run_figures

    run = load_run(run_dir)
    return {(_spec_of(r["kernel"], json.loads(r["config"])), (r["M"], r["N"], r["K"])): r["predicted_gflops"]
            for r in rows(run, run_figures(run_dir, calibration=calibration), run_facts(run, run_dir), holdout=True)
            if "predicted_gflops" in r}


def pairs(run_dir: Path, latency: "float | None" = None, calibration: "Path | None" = None) -> int:
    """Per pair of layout_pairs, the measured padded / plain speed beside each replay's (cycles plain / padded) and,
    with a calibration, the model's (its predictions' ratio); then how well each orders the pairs: Spearman, the
    share with the measured sign, the mean gap; over all pairs and over those within 20 % of equal."""
    from scipy.stats import spearmanr

    found = layout_pairs(run_dir)
    if not found:
        print(f"error: {run_dir}: no configuration measured with B plain and padded", file=sys.stderr)
        return 2
    predicted = _predicted(run_dir, calibration) if calibration else None
    names = PAIR_REPLAYS + (("the model",) if predicted else ())
    print(f"{len(found)} configurations measured with B plain and padded in {run_dir}; padded / plain:\n")
    print("| configuration (plain) | M, N, K | measured | " + " | ".join(names) + " |")
    print("|---|---|---:|" + "---:|" * len(names))
    got = []
    for a, b, measured, mnk in found:
        ra, rb = replay_cycles(a, latency), replay_cycles(b, latency)
        ratios = {k: ra[k] / rb[k] for k in PAIR_REPLAYS}
        if predicted:
            ratios["the model"] = predicted[(b, mnk)] / predicted[(a, mnk)]
        got.append((measured, ratios))
        print(f"| {a} | {', '.join(map(str, mnk))} | {measured:.3f} | " + " | ".join(f"{ratios[k]:.3f}" for k in names) + " |", flush=True)
    print("\n| pairs | padded / plain from | Spearman | same sign as measured | mean gap |")
    print("|---|---|---:|---:|---:|")
    for label, sel in (("all", got), ("within 20 %", [g for g in got if abs(g[0] - 1) < 0.2])):
        meas = [m for m, _ in sel]
        for k in names:
            x = [r[k] for _, r in sel]
            rho = spearmanr(x, meas)[0] if len(sel) > 2 else float("nan")
            sign = sum((u > 1) == (m > 1) for u, m in zip(x, meas)) / len(sel)
            gap = sum(abs(u - m) for u, m in zip(x, meas)) / len(sel)
            print(f"| {label} ({len(sel)}) | {k} | {rho:.3f} | {100 * sign:.0f} % | {100 * gap:.2f} % |")
    return 0


RANK_RULES = ("on their own", "in step")  # the model's rule for a scheduler's warps, and the in-step replay


def _rank_scores(job) -> list[dict]:
    """In a fresh process (the replay's cache is per process): each run scored by perfmodel.accuracy with the
    model's compute phase replayed by `rule`: the model's own, or its warps in step (model.schedule.simulate's
    in_step, switched on for every replay of the process)."""
    rule, runs, calibration = job
    from perfmodel.accuracy import figures_for, score_run
    from perfmodel.analysis import load_run, run_device
    from perfmodel.model import schedule

    if rule == "in step":
        plain = schedule.simulate

        def simulate(program, *args, **kw):
            return plain(program, *args, **dict(kw, in_step=True))

        schedule.simulate = simulate
    cal_device = run_device_of_calibration(calibration) if calibration else None
    out = []
    for rd in runs:
        cal = calibration if cal_device and run_device(load_run(rd)).name == cal_device else None
        sc = score_run(rd, figures_for(rd, "measured", str(cal) if cal else None, ROOT / "results", own_fallback=True))
        out.append(dict(run=Path(rd).name, points=sc.points, mape=sc.mape_pct, bias=sc.bias_pct,
                        spearman=sc.spearman_sweep, top1=sc.top1_gap_pct))
    return out


def run_device_of_calibration(path: Path) -> str:
    """The device name a perfmodel calibrate file was measured on (its `name`)."""
    import tomllib

    return tomllib.loads(Path(path).read_text())["name"]


def rank(runs: list[Path], calibration: "Path | None" = None) -> int:
    """Recorded sweep runs scored with the model's rule (each scheduler's warps replayed on their own) and with
    its warps replayed in step: MAPE, bias, Spearman over the sweep's points and the gap of the model's first
    (its highest prediction among the run's measured configurations) to the fastest measured. Runs of the
    calibration's device take its figures, the others their device's reference calibration (else their own)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from perfmodel.errors import UserError

    ctx = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(max_workers=len(RANK_RULES), mp_context=ctx) as pool:
            got = dict(zip(RANK_RULES, pool.map(_rank_scores, [(r, [str(x) for x in runs], calibration)
                                                               for r in RANK_RULES])))
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("| run | points | " + " | ".join(f"{r}: MAPE (bias), Spearman, first's gap" for r in RANK_RULES) + " |")
    print("|---|---:|" + "---|" * len(RANK_RULES))

    def cell(d):
        sp = "-" if d["spearman"] is None else f"{d['spearman']:.3f}"
        gap = "-" if d["top1"] is None else f"{d['top1']:.1f} %"
        return f"{d['mape']:.2f} % ({d['bias']:+.2f} %), {sp}, {gap}"

    for i, rd in enumerate(runs):
        rows_ = [got[r][i] for r in RANK_RULES]
        print(f"| {rows_[0]['run']} | {rows_[0]['points']} | " + " | ".join(cell(d) for d in rows_) + " |")
    print()
    for r in RANK_RULES:
        gaps = [d["top1"] for d in got[r] if d["top1"] is not None]
        n = sum(d["points"] for d in got[r])
        mape = sum(d["mape"] * d["points"] for d in got[r]) / max(n, 1)
        first = (f"first's gap mean {sum(gaps) / len(gaps):.2f} %, worst {max(gaps):.1f} %, "
                 f"{sum(g <= 1.0 for g in gaps)} of {len(gaps)} runs within 1 %") if gaps else "no run with sweep points"
        print(f"{r}: {n} points, MAPE {mape:.2f} %; {first}")
    own, step = ([d["top1"] for d in got[r]] for r in RANK_RULES)
    pairs_ = [(a, b) for a, b in zip(own, step) if a is not None and b is not None]
    print(f"in step's first faster than the model's in {sum(b < a - 0.05 for a, b in pairs_)} runs, slower in "
          f"{sum(b > a + 0.05 for a, b in pairs_)}, the same in {sum(abs(a - b) <= 0.05 for a, b in pairs_)}")
    return 0


DENSITY_BINS = ((0.5, "0"), (2.5, "1-2"), (6.5, "3-6"), (float("inf"), "7 or more"))  # tight waits a 1,024 FFMAs


def density(kernel: str, config: str, ffmas: int) -> "float | None":
    """Tight waits a 1,024 FFMAs of the local build's k-tile loop (None where the configuration has no such loop)."""
    from perfmodel.catalogue import KernelConfig

    loop = loop_of(KernelConfig.make(kernel, **json.loads(config)))
    if loop is None:
        return None
    texts, codes = loop
    nf = sum(_opcode(t).startswith("FFMA") for t in texts)
    if nf < 64 or not any(_opcode(t).startswith("LDS") for t in texts):
        return None
    return len(tight_waits(texts, codes, ffmas)["tight"]) * 1024.0 / nf


def points(files: list[str], ffmas: int) -> int:
    rows = [r for f in files for r in csv.DictReader(open(f))]
    dens = {}
    keys = sorted({(r["kernel"], r["config"]) for r in rows})
    for n, key in enumerate(keys, 1):
        dens[key] = density(*key, ffmas)
        print(f"  [{n}/{len(keys)}] {key[0]} {key[1]}: {dens[key]}", file=sys.stderr)
    groups = collections.defaultdict(list)
    for r in rows:
        d = dens[(r["kernel"], r["config"])]
        if d is None:
            continue
        lab = next(lab for top, lab in DENSITY_BINS if d < top)
        bound = r["bound"] if r["bound"] in ("issue", "fma", "smem", "latency") else "other"
        for g in ((lab, "all"), (lab, bound)):
            groups[g].append(float(r["error_pct"]))
    print(f"| tight waits a 1,024 FFMAs | bound | points | mean error | median |")
    print("|---|---|---:|---:|---:|")
    order = [lab for _, lab in DENSITY_BINS]
    for (lab, bound), errs in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1] != "all", kv[0][1])):
        errs.sort()
        print(f"| {lab} | {bound} | {len(errs)} | {sum(errs) / len(errs):+.1f} % | {errs[len(errs) // 2]:+.1f} % |")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from ncu_choices import _spec

    ap.add_argument("specs", nargs="*", type=_spec, metavar="SPEC", help="kernel:key=value,... (the local build's loop)")
    ap.add_argument("--record", metavar="JSON[:LABELS]", help="an ncu_stall_pcs.py record")
    ap.add_argument("--replay", action="store_true", help="replay each SPEC's loop, its warps on their own and in step")
    ap.add_argument("--latency", type=float, help="--replay: the shared loads' latency in cycles (default: the H200's)")
    ap.add_argument("--points", nargs="+", metavar="CSV", help="recorded points (perfmodel accuracy --points)")
    ap.add_argument("--pairs", metavar="RUN", help="a results folder: its configurations measured with B plain and padded, replayed")
    ap.add_argument("--rank", nargs="+", metavar="RUN", help="recorded sweep runs scored with the model's rule and with "
                    "its warps in step (--calibration: the figures for runs of its device)")
    ap.add_argument("--calibration", type=Path, help="--pairs: also the model's predictions, with this calibration's figures; "
                    "--rank: the figures of runs of its device")
    ap.add_argument("--ffmas", type=int, default=4, help="a wait is tight below this many FFMAs after its load (default 4)")
    a = ap.parse_args(argv)
    for f in ([a.record.partition(":")[0]] if a.record else []) + (a.points or []):
        if not Path(f).is_file():
            print(f"error: {f}: no such file (a record of benchmarks/ncu_stall_pcs.py, or perfmodel accuracy --points)",
                  file=sys.stderr)
            return 2
    if a.ffmas < 1:
        print(f"error: --ffmas must be at least 1, got {a.ffmas}", file=sys.stderr)
        return 2
    if a.latency is not None and not 0 < a.latency <= 10000:
        print(f"error: --latency must be a number of cycles in (0, 10000], got {a.latency:g}", file=sys.stderr)
        return 2
    if a.calibration is not None and not a.calibration.is_file():
        print(f"error: --calibration {a.calibration}: no such file (a perfmodel calibrate file)", file=sys.stderr)
        return 2
    if a.rank:
        bad = [r for r in a.rank if not (Path(r) / "raw.json").is_file() and not (Path(r) / "raw.json.xz").is_file()]
        if bad:
            print(f"error: --rank {bad[0]}: not a recorded run (a results folder holding raw.json)", file=sys.stderr)
            return 2
        if a.calibration is not None:
            try:
                run_device_of_calibration(a.calibration)
            except (ValueError, KeyError, UnicodeDecodeError):
                print(f"error: --calibration {a.calibration}: not a perfmodel calibrate file (TOML with the device's "
                      f"`name`)", file=sys.stderr)
                return 2
        return rank([Path(r) for r in a.rank], a.calibration)
    if a.pairs:
        if not Path(a.pairs).is_dir():
            print(f"error: {a.pairs}: no such results folder (--pairs takes a run's folder, holding raw.json)", file=sys.stderr)
            return 2
        return pairs(Path(a.pairs), a.latency, a.calibration)
    if a.record:
        return record(a.record, a.ffmas)
    if a.points:
        return points(a.points, a.ffmas)
    if a.replay and a.specs:
        return replay(a.specs, a.latency)
    if not a.specs:
        print("error: give configurations (kernel:key=value,...) or --record JSON", file=sys.stderr)
        return 2
    return static(a.specs, a.ffmas)


if __name__ == "__main__":
    sys.exit(main())
