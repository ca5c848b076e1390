"""Where a kernel's warps wait, instruction by instruction (GPU machine): Nsight Compute's PC sampling
(the SourceCounters section) of catalogue configurations at one problem size, each profiled alone, its
source page read back per SASS instruction. Writes, under OUT, each configuration's raw source-page CSV
and one JSON (the binary reports stay in a temporary folder) with, per configuration, the time, the samples by stall reason and by instruction class
(FFMA, LDS, STS, LDG, LDGSTS, BAR, LDL/STL, other) and the instructions with the most samples; prints a
short table last.

    python3 benchmarks/ncu_stall_pcs.py OUT --mnk 256,256,16384 double_buffer:bm=128,bn=64,bk=8,tm=8,tn=8 ...
    python3 benchmarks/ncu_stall_pcs.py --warm OUT ...   (the second of two launches, no flush: A and B in the L2)

A sample is a warp seen at its program counter (every 2^N cycles on each scheduler): a warp that waits
many cycles at an instruction collects many samples there, so the samples of an instruction class,
divided by all of them, are the share of the warps' time spent at (before issuing) such instructions."""
import argparse
import csv
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncu_choices import _mnk, _spec, local_device, misfits  # noqa: E402

CHILD = Path(__file__).with_name("ncu_choices.py")  # its --child mode launches each configuration once

CLASSES = (("LDGSTS", "LDGSTS"), ("LDG", "LDG"), ("LDS", "LDS"), ("STS", "STS"), ("LDL", "LDL"), ("STL", "STL"),
           ("BAR", "BAR"), ("FFMA", "FFMA"), ("STG", "STG"))


def opcode(sass: str) -> str:
    """An instruction's opcode from its SASS text (after any predicate)."""
    return re.sub(r"^@!?U?P\w+\s+", "", sass.strip()).split(" ")[0]


def op_class(sass: str) -> str:
    """An instruction's class from its SASS text (the opcode after any predicate)."""
    op = opcode(sass)
    return next((c for prefix, c in CLASSES if op.startswith(prefix)), "other")


def _num(v: str):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None


def parse_source_page(text: str) -> list[dict]:
    """ncu --page source --csv --print-source sass -> one dict per SASS instruction: address, source,
    and every numeric column (the stall-reason sample counts among them)."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"Address"') or ln.startswith('"#"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    hdr = rows[0]
    out = []
    for r in rows[1:]:
        if len(r) != len(hdr):
            continue
        d = dict(zip(hdr, r))
        rec = dict(address=d.get("Address", ""), source=d.get("Source", ""))
        rec.update({h: x for h, x in ((h, _num(v)) for h, v in d.items() if h not in ("Address", "Source")) if x is not None})
        out.append(rec)
    return out


US_PER = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}


def raw_values(text: str) -> dict:
    """ncu --page raw --csv of one kernel: {metric: value}, durations in microseconds (its units row)."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    if len(rows) < 3:
        return {}
    out = {}
    for h, unit, v in zip(rows[0], rows[1], rows[2]):
        x = _num(v)
        if x is not None:
            out[h] = x * US_PER[unit] if unit in US_PER else x
    return out


def summarise(rows: list[dict]) -> dict:
    """Samples by stall reason and by instruction class, and the top instructions."""
    cols = list(rows[0]) if rows else []
    total_col = next((h for h in cols if h.startswith("Warp Stall Sampling (All")), None)
    reasons = [h for h in cols if "stall" in h.lower() and not h.startswith("Warp Stall Sampling")]
    total = sum(r.get(total_col, 0) for r in rows) if total_col else 0
    by_class = defaultdict(lambda: defaultdict(float))
    for r in rows:
        c = op_class(r["source"])
        by_class[c]["samples"] += r.get(total_col, 0) if total_col else 0
        by_class[c]["instructions"] += 1
        for h in reasons:
            by_class[c][h] += r.get(h, 0)
    top = sorted(rows, key=lambda r: -(r.get(total_col, 0) if total_col else 0))[:25]
    return dict(total_samples=total, columns=list(rows[0].keys()) if rows else [],
                by_reason={h: sum(r.get(h, 0) for r in rows) for h in reasons},
                by_class={c: dict(v) for c, v in by_class.items()},
                top=[dict(address=r["address"], source=r["source"], samples=r.get(total_col, 0),
                          reasons={h: r[h] for h in reasons if r.get(h)}) for r in top])


def ncu_command(ncu: str, rep: Path, mnk, spec: str, warm: bool = False) -> list[str]:
    """The ncu command line that profiles spec at mnk into the report rep: after ncu's flush of the caches
    (its default, as validate times), or with warm, the second of two launches in a row with no flush, so
    that its loads find A and B in the L2 where they fit there (flush_state.py --warm's third state)."""
    state = ["--cache-control", "none", "--launch-skip", "1", "--launch-count", "1"] if warm else []
    return [ncu, "--clock-control", "none", *state, "--target-processes", "all", "-k", "regex:sgemm", "--section",
            "SourceCounters", "--section", "WarpStateStats", "--metrics",
            "gpu__time_duration.sum,smsp__inst_executed.sum,sm__cycles_elapsed.avg", "--import-source", "no", "-f",
            "-o", str(rep), sys.executable, str(CHILD), "--child-twice" if warm else "--child", ",".join(map(str, mnk)), spec]


def profile(ncu: str, out: Path, mnk, spec: str, tag: str, warm: bool = False) -> dict:
    rep = Path(tempfile.mkdtemp()) / f"{tag}.ncu-rep"  # the report stays off OUT (its CSV pages are what is kept)
    cmd = ncu_command(ncu, rep, mnk, spec, warm)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return dict(error=r.stderr[-1500:] + r.stdout[-500:])
    src = subprocess.run([ncu, "-i", str(rep), "--page", "source", "--csv", "--print-source", "sass"], capture_output=True, text=True)
    (out / f"{tag}-source.csv").write_text(src.stdout)
    raw = subprocess.run([ncu, "-i", str(rep), "--page", "raw", "--csv"], capture_output=True, text=True)
    (out / f"{tag}-raw.csv").write_text(raw.stdout)
    vals = raw_values(raw.stdout)
    s = summarise(parse_source_page(src.stdout))
    s.update(spec=spec, us=vals.get("gpu__time_duration.sum"), inst=vals.get("smsp__inst_executed.sum"),
             cycles=vals.get("sm__cycles_elapsed.avg"), source_page_error=src.stderr[-500:] if src.returncode else None)
    return s


def main(out: Path, specs: list[str], mnk, warm: bool = False) -> int:
    bad = misfits(specs, local_device())
    if bad:
        print("error: " + bad[0], file=sys.stderr)
        return 2
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    out.mkdir(parents=True, exist_ok=True)
    res = {}
    for i, s in enumerate(specs):
        print(f"[{i + 1}/{len(specs)}] {s}", flush=True)
        res[s] = profile(ncu, out, mnk, s, f"cfg{i}", warm)
    (out / "ncu_stall_pcs.json").write_text(json.dumps(dict(M=mnk[0], N=mnk[1], K=mnk[2], warm=warm, configs=res), indent=1))
    for s, v in res.items():
        if "error" in v:
            print(f"{s}: ncu failed: {v['error'][-300:]}")
            continue
        tot = v["total_samples"] or float("nan")
        cls = sorted(v["by_class"].items(), key=lambda kv: -kv[1].get("samples", 0))
        rs = sorted(v["by_reason"].items(), key=lambda kv: -kv[1])[:6]
        print(f"{s}  {v['us'] or 0:.0f} us, {tot:.0f} samples")
        print("  by class:  " + "  ".join(f"{c} {d.get('samples', 0) / tot:.1%}" for c, d in cls))
        print("  by reason: " + "  ".join(f"{h.replace('stall_', '')} {x / tot:.1%}" for h, x in rs))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    ap = argparse.ArgumentParser(description="Nsight Compute's PC sampling of catalogue configurations (GPU machine).")
    ap.add_argument("out", type=Path, help="folder for the source-page and raw CSVs and the JSON summary")
    ap.add_argument("specs", nargs="+", type=_spec, metavar="SPEC", help="kernel:key=value,...")
    ap.add_argument("--mnk", type=_mnk, default=(4096, 4096, 4096), help="M,N,K (default 4096,4096,4096)")
    ap.add_argument("--warm", action="store_true",
                    help="profile the second of two launches in a row, the caches not flushed (default: after ncu's flush)")
    a = ap.parse_args()
    sys.exit(main(a.out, a.specs, a.mnk, a.warm))
