"""Static register-bank counts of a binary's k-tile loop (CPU; nvcc or the compiler wheels, nvdisasm):
per configuration, the FFMAs whose source registers that the operand reuse cache does not serve share
a bank (register number mod BANKS), for 2 and 4 banks; beside them, where a results file of
benchmarks/ncu_choices.py is given, ncu's dispatch stalls per issued instruction and the time.

    PYTHONPATH=. python3 benchmarks/register_banks.py [NCU_JSON] SPEC ...   (SPEC as in ncu_choices.py)
    PYTHONPATH=. python3 benchmarks/register_banks.py --runs RUN ...
With --runs: over the recorded runs' tiled points (reference calibration), the correlation of the
model's error with the share of loop instructions that are such FFMAs (4 banks), per bound.
With --replay NCU_JSON SPEC ... (the first SPEC the reference): each binary's k-tile loop replayed by
model.schedule at one issue clock per FFMA with two resident blocks' warps on a scheduler (8 warps per
SM), without and with the register-bank term, as time over the first's, beside the measured time over
the first's (ncu's gpu__time_duration in NCU_JSON).

    PYTHONPATH=. python3 benchmarks/register_banks.py --replay NCU_JSON SPEC ..."""
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from perfmodel.measure import build, sass

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ncu_choices import parse  # noqa: E402


def ffma_bank_pairs(cfg, banks: int, cc: str = "9.0") -> tuple[int, int]:
    """(FFMAs in the loop, FFMAs with two or more non-reused source registers in one bank)."""
    text = subprocess.run([sass.find_nvdisasm(), str(build.compile_cubin(cfg, cc))], capture_output=True, text=True).stdout
    n = shared = 0
    for line in sass.loop_lines(text) or []:
        m = sass._INSTRUCTION.search(line)
        if not m or not m.group(2).startswith("FFMA"):
            continue
        n += 1
        ops = [p.strip() for p in m.group(3).split(",")][1:]
        regs = [int(re.match(r"R(\d+)", p).group(1)) for p in ops if re.match(r"R\d", p) and ".reuse" not in p]
        shared += max(Counter(r % banks for r in regs).values(), default=0) >= 2
    return n, shared


def against_runs(runs: list[str]) -> None:
    import numpy as np

    from perfmodel.accuracy import figures_for
    from perfmodel.analysis import load_run, rows, run_facts
    from perfmodel.catalogue import KernelConfig

    pts = []
    for rd in runs:
        run = load_run(rd)
        for r in rows(run, figures_for(Path(rd), "measured", None, Path("results")), run_facts(run, rd)):
            if r.get("error_pct") is None or r["kernel"] in ("cublas", "naive", "coalesced", "smem_tiled"):
                continue
            cfg = KernelConfig.make(r["kernel"], **json.loads(r["config"]))
            prog = sass.sass_facts(cfg, "9.0")["loop_program"]
            n, b4 = ffma_bank_pairs(cfg, 4)
            pts.append((r["bound"], r["error_pct"], b4 / len(prog["cls"])))
    for bound in sorted({p[0] for p in pts}):
        sel = [p for p in pts if p[0] == bound]
        if len(sel) >= 10:
            e, f = np.array([p[1] for p in sel]), np.array([p[2] for p in sel])
            print(f"{bound:8} {len(sel):4d} points: correlation of the error with the bank-sharing FFMA share {np.corrcoef(e, f)[0, 1]:+.2f}")


def replay(ncu_file: str, specs: list[str]) -> None:
    from perfmodel.devices import load_device
    from perfmodel.model.schedule import simulate

    ncu = json.loads(Path(ncu_file).read_text())["kernels"]
    lat = load_device("h100-sxm").latency
    rows = []
    for spec in specs:
        cfg = parse(spec)
        prog = sass.sass_facts(cfg, "9.0")["loop_program"]
        per_block = max(1, cfg.threads // 128)  # warps of one block on one of the 4 schedulers
        args = (prog, 2, per_block, 1.0, lat.smem_latency_cycles, lat.l1_latency_cycles, lat.fma_latency_cycles, 1.0, 1.0, 4.0)
        rows.append((cfg.label(), ncu[cfg.label()]["gpu__time_duration.sum"], simulate(*args), simulate(*args, banks=2)))
    t0, a0, b0 = rows[0][1:]
    print(f"{'configuration':92} {'measured':>9} {'replay':>7} {'with banks':>11}   (time over the first's)")
    for label, t, a, b in rows:
        print(f"{label:92} {t / t0:9.2f} {a / a0:7.2f} {b / b0:11.2f}")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--runs":
        against_runs(args[1:])
        sys.exit(0)
    if args and args[0] == "--replay":
        replay(args[1], args[2:])
        sys.exit(0)
    ncu = json.loads(Path(args.pop(0)).read_text())["kernels"] if args and args[0].endswith(".json") else {}
    print(f"{'configuration':80} {'FFMA':>5} {'2 banks':>8} {'4 banks':>8} {'dispatch':>9} {'time us':>8}")
    for spec in args:
        cfg = parse(spec)
        n, b2 = ffma_bank_pairs(cfg, 2)
        _, b4 = ffma_bank_pairs(cfg, 4)
        v = ncu.get(cfg.label(), {})
        d = v.get("smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio")
        t = v.get("gpu__time_duration.sum")
        print(f"{cfg.label():80} {n:5d} {b2:8d} {b4:8d} {'' if d is None else f'{d:.2f}':>9} {'' if t is None else f'{t / 1e3:.0f}':>8}")
