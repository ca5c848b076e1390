"""Where a round of blocks spends what the model does not charge: before, in and after the k-tile loop (CPU; reads
records of benchmarks/ncu_stall_pcs.py, Nsight Compute's PC sampling with the source page per SASS instruction).

Default: the lent H200's results/archive/ncu-stall-pcs-20261202-h200-4096x{64,512}.json and their source pages
(`…-{double-buffer-16x8,double-buffer,double-buffer-64x128-16x8}.csv.xz`): double_buffer 128 x 128 x 8 with 16 x 8
thread tiles, its default (8 x 8) and 64 x 128 x 8 (16 x 8) at 4096 x 4096 x 64 (eight k-tiles a block) and x 512.

The executed instructions split by how often they ran: the k-tile loop is the code that ran most, the prologue
(the first tile's loads and shared stores) what comes before it, the epilogue (the last tile's FFMAs, peeled out of
the loop, the C stores, EXIT and the drain after it, whose samples land on the instruction after EXIT) what comes
after. Per configuration:
  share       the samples of each region over all (the warps' time there)
  long_sb     the samples waiting on the long scoreboard in each region, over all
  epi excess  the epilogue's share less one k-tile of the loop's (loop share / k-tiles in the loop): what the
              epilogue takes beyond computing its one k-tile at the loop's pace, as a share and as us a round of
              blocks (share x the profiled time / rounds; rounds: the model's waves, rounded up)
  reuse       the epilogue's executed instructions that write a register an earlier C store of the epilogue reads
              (its data or its address: a write after read, which waits on the long scoreboard until the store has
              read it), and the share of the epilogue's long_sb samples that sit at them

With --static POINTS.csv ... (`perfmodel accuracy RUN ... --points F`; a local toolchain): per kernel, the epilogue's
store-reuse writes of the local build of each point's configuration (sass.epilogue_store_reuse), with the points'
count and mean error (%) by K and by one or more blocks an SM (the class's or kernel's points only with --class, --kernel); then, for the
points of two or more blocks an SM and more than one round, by under 30 or 30 or more such writes and by the rounds
of blocks an SM per k-tile of a block (ceil(waves) / ceil(K / bk): how much of the time the epilogues are).

    python3 benchmarks/epilogue_waits.py [--record JSON:LABEL,LABEL,LABEL ...]
    python3 benchmarks/epilogue_waits.py --static POINTS.csv ... [--class small_k] [--kernel double_buffer]"""
import argparse
import collections
import csv
import json
import lzma
import math
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
ARCHIVE = ROOT / "results" / "archive"
LABELS = "double-buffer-16x8,double-buffer,double-buffer-64x128-16x8"
RECORDS = [f"{ARCHIVE / f'ncu-stall-pcs-20261202-h200-4096x{k}.json'}:{LABELS}" for k in (64, 512)]
ALL = "Warp Stall Sampling (All Samples)"


def regions(rows: list[dict]) -> tuple[Optional[range], Optional[range], range]:
    """(prologue, loop, epilogue) index ranges of a source page: the loop is the run of the most executed
    instructions, the prologue the code before it, the epilogue everything after (the drain's samples land
    past EXIT). Where no loop runs more than once a warp (a block of one or two k-tiles: nvcc unrolls them), no
    prologue and loop: the epilogue is then the code from the first executed global store on."""
    ex = [r.get("Instructions Executed") or 0 for r in rows]
    top = max(ex)
    if top <= (ex[0] or 1.0):
        first = next((i for i, r in enumerate(rows) if ex[i] and r["source"].strip().startswith("STG")), len(rows))
        return None, None, range(first, len(rows))
    hot = [i for i, e in enumerate(ex) if e == top]
    return range(0, hot[0]), range(hot[0], hot[-1] + 1), range(hot[-1] + 1, len(rows))


def store_reuse(rows: list[dict], idx) -> list[int]:
    """The executed instructions of idx that write a register an earlier C store of idx reads
    (perfmodel.measure.sass.store_reuse_writes on the source page's SASS text)."""
    from perfmodel.measure import sass

    run = [i for i in idx if rows[i].get("Instructions Executed") or 0]
    return [run[k] for k in sass.store_reuse_writes([f"/*0000*/ {rows[i]['source'].strip()} ;" for i in run])]


def analyse(rows: list[dict], ktiles: int) -> dict:
    """Shares of the samples by region (None where regions finds no loop), the epilogue's excess over its k-tiles at
    the loop's pace (None without a loop), and its store-reuse writes with the share of its long-scoreboard samples
    that sit at them."""
    pro, loop, epi = regions(rows)
    total = sum(r.get(ALL) or 0 for r in rows) or 1.0

    def share(idx, key=ALL):
        return None if idx is None else sum(rows[i].get(key) or 0 for i in idx) / total

    entries = rows[0].get("Instructions Executed") or 1.0  # the first instruction runs once a warp
    loop_tiles = round(max(r.get("Instructions Executed") or 0 for r in rows) / entries) if loop else 0
    reuse = store_reuse(rows, epi)
    excess = share(epi) - (ktiles - loop_tiles) * share(loop) / max(loop_tiles, 1) if loop else None
    return dict(prologue=share(pro), loop=share(loop), epilogue=share(epi), prologue_lsb=share(pro, "stall_long_sb"),
                loop_lsb=share(loop, "stall_long_sb"), epilogue_lsb=share(epi, "stall_long_sb"),
                epilogue_drain=share(epi, "stall_drain"), epilogue_lg=share(epi, "stall_lg"), loop_tiles=loop_tiles,
                epilogue_tiles=ktiles - loop_tiles, excess=excess,
                reuse=len(reuse), reuse_lsb=share(reuse, "stall_long_sb") / max(share(epi, "stall_long_sb"), 1e-12))


def _f(x, spec=".3f") -> str:
    return "-" if x is None else format(x, spec)


def rounds_of(spec: str, M: int, N: int, K: int) -> int:
    """The rounds of blocks an SM runs in the model (predict's waves, rounded up), on the H200's own figures and
    the local build's registers (facts.compiled; the estimate without a toolchain)."""
    from ncu_choices import parse
    from perfmodel import facts, predict
    from perfmodel.devices import load_device

    cfg = parse(spec)
    return math.ceil(predict(load_device("h200"), cfg, M, N, K, build=facts.compiled(cfg, "9.0")).waves.waves - 1e-9)


def reuse_of(kernel: str, config: str) -> "int | None":
    """sass.epilogue_store_reuse of the local build of a configuration (kernel, its JSON parameters)."""
    from perfmodel.catalogue import KernelConfig
    from perfmodel.measure import sass

    listing = sass.listing_of(KernelConfig.make(kernel=kernel, **json.loads(config)), "9.0")
    return None if listing is None else sass.epilogue_store_reuse(listing)


def static(files: list[str], cls: "str | None" = None, kernel: "str | None" = None) -> int:
    rows = [r for f in files for r in csv.DictReader(open(f))
            if (cls is None or r["class"] == cls) and (kernel is None or r["kernel"] == kernel)]
    reuse = {}
    keys = sorted({(r["kernel"], r["config"]) for r in rows})
    for n, key in enumerate(keys, 1):
        reuse[key] = reuse_of(*key)
        print(f"  [{n}/{len(keys)}] {key[0]} {key[1]}: {reuse[key]}", file=sys.stderr)
    groups = collections.defaultdict(list)
    for r in rows:
        one = "1" if int(r["blocks_per_sm"]) == 1 else ">=2"
        groups[(r["kernel"], reuse[(r["kernel"], r["config"])], one, int(r["K"]))].append(float(r["error_pct"]))
    print("| kernel | store-reuse writes | blocks an SM | K | points | mean error |")
    print("|---|---:|---|---:|---:|---:|")
    for (kernel, n, one, K), errs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] if kv[0][1] is not None else -1, kv[0][2], kv[0][3])):
        print(f"| {kernel} | {n} | {one} | {K} | {len(errs)} | {sum(errs) / len(errs):+.1f} % |")
    # where an epilogue's cost can show: two or more blocks an SM, more than one round; by rounds a k-tile
    from perfmodel.catalogue import KernelConfig

    by = collections.defaultdict(list)
    for r in rows:
        n = reuse[(r["kernel"], r["config"])]
        if n is None or int(r["blocks_per_sm"]) < 2 or float(r["waves"]) <= 1.0:
            continue
        bk = KernelConfig.make(kernel=r["kernel"], **json.loads(r["config"])).bk
        ratio = math.ceil(float(r["waves"]) - 1e-9) / math.ceil(int(r["K"]) / bk)
        by[(r["kernel"], "30 or more" if n >= 30 else "under 30",
            next(lab for top, lab in ROUND_BINS if ratio < top))].append(float(r["error_pct"]))
    print("\n| kernel | store-reuse writes | rounds a k-tile | points | mean error | median |")
    print("|---|---|---|---:|---:|---:|")
    for (kernel, n, lab), errs in sorted(by.items()):
        errs.sort()
        print(f"| {kernel} | {n} | {lab} | {len(errs)} | {sum(errs) / len(errs):+.1f} % | {errs[len(errs) // 2]:+.1f} % |")
    return 0


ROUND_BINS = ((0.05, "under 0.05"), (0.2, "0.05-0.2"), (math.inf, "0.2 or more"))  # rounds of blocks an SM a k-tile


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="append", help="JSON:LABEL,... (the JSON of ncu_stall_pcs.py and, per "
                    "configuration in its order, the label of its source page JSON-minus-.json-LABEL.csv.xz)")
    ap.add_argument("--static", nargs="+", metavar="POINTS.csv", help="points of `perfmodel accuracy --points`")
    ap.add_argument("--class", dest="cls", help="only the points of this shape class")
    ap.add_argument("--kernel", help="only the points of this kernel")
    args = ap.parse_args(argv)
    if args.static:
        return static(args.static, args.cls, args.kernel)
    from ncu_choices import parse
    from ncu_stall_pcs import parse_source_page

    print("| M x N x K | configuration | us | rounds | share: prologue / loop / epilogue | long_sb: prologue / loop / "
          "epilogue | epilogue drain, lg | epi excess (share, us a round) | reuse (long_sb there) |")
    print("|---|---|---:|---:|---|---|---|---|---|")
    for rec in args.record or RECORDS:
        path, labels = rec.rsplit(":", 1)
        path = Path(path)
        d = json.loads(path.read_text())
        M, N, K = d["M"], d["N"], d["K"]
        for (spec, c), label in zip(d["configs"].items(), labels.split(",")):
            page = path.with_name(f"{path.stem}-{label}.csv.xz")
            rows = parse_source_page(lzma.open(page, "rt").read())
            cfg = parse(spec)
            a = analyse(rows, math.ceil(K / cfg.bk))
            rounds = rounds_of(spec, M, N, K)
            per_round = None if a["excess"] is None else a["excess"] * c["us"] / rounds
            print(f"| {M} x {N} x {K} | {cfg.label()} | {c['us']:.1f} | {rounds} | {_f(a['prologue'])} / {_f(a['loop'])} / "
                  f"{_f(a['epilogue'])} | {_f(a['prologue_lsb'])} / {_f(a['loop_lsb'])} / {_f(a['epilogue_lsb'])} | "
                  f"{_f(a['epilogue_drain'])}, {_f(a['epilogue_lg'])} | {_f(a['excess'])}, "
                  f"{_f(per_round, '.2f')} | {a['reuse']} ({a['reuse_lsb']:.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
