"""Run one perfmodel command with model switches set: how a rule that is evaluated but not adopted (or one that is
on, turned off) is scored on the recorded runs with the same command as the model's own figures (CPU only).

    python3 benchmarks/with_switch.py schedule.LATENCY_APART=1 -- accuracy RUN... --points F
    python3 benchmarks/with_switch.py schedule.BLOCKS_APART=0 terms.EDGE_FETCH=1 -- accuracy RUN...
    python3 benchmarks/with_switch.py --diff A.csv B.csv      # two `--points` files: the points that moved

A switch is MODULE.NAME=VALUE, MODULE one of perfmodel.model's modules (schedule, terms, predict, figures), NAME an upper-case
module-level bool of it, VALUE 1/0/true/false/on/off. --diff prints, over the points present in both files (the same
run, kernel, configuration and shape), the MAPE and bias of each file, then of the points whose prediction moved, by
kernel and by blocks an SM."""
from __future__ import annotations

import importlib
import sys
from typing import Sequence

MODULES = ("schedule", "terms", "predict", "figures")
TRUE, FALSE = ("1", "true", "on", "yes"), ("0", "false", "off", "no")


def _fail(msg: str) -> None:
    print(f"with_switch: {msg}", file=sys.stderr)
    raise SystemExit(2)


def parse_switch(text: str):
    """(module, name, value) from MODULE.NAME=VALUE; SystemExit(2) with one line naming what is wrong."""
    target, eq, raw = text.partition("=")
    mod, dot, name = target.partition(".")
    if not (eq and dot):
        _fail(f"switch {text!r} is not MODULE.NAME=VALUE (e.g. schedule.LATENCY_APART=1)")
    if mod not in MODULES:
        _fail(f"switch {text!r}: module {mod!r} is not one of {', '.join(MODULES)}")
    module = importlib.import_module(f"perfmodel.model.{mod}")
    if not name.isupper() or not isinstance(getattr(module, name, None), bool):
        names = sorted(k for k, v in vars(module).items() if k.isupper() and isinstance(v, bool))
        _fail(f"switch {text!r}: {mod}.{name} is no switch; {mod}'s switches are {', '.join(names) or 'none'}")
    if raw.lower() not in TRUE + FALSE:
        _fail(f"switch {text!r}: value {raw!r} is not one of {'/'.join(TRUE + FALSE)}")
    return module, name, raw.lower() in TRUE


def diff(path_a: str, path_b: str) -> str:
    """The points of two `perfmodel accuracy --points` files side by side (see the module doc)."""
    import pandas as pd

    key = ["run", "kernel", "config", "shape", "class"]
    frames = []
    for p in (path_a, path_b):
        try:
            frames.append(pd.read_csv(p))
        except (OSError, ValueError) as e:
            _fail(f"points file {p!r} cannot be read ({type(e).__name__}); give two files written by accuracy --points")
        missing = [c for c in key + ["error_pct", "predicted_gflops", "blocks_per_sm"] if c not in frames[-1].columns]
        if missing:
            _fail(f"points file {p!r} lacks column(s) {', '.join(missing)}; give files written by accuracy --points")
    m = frames[0].merge(frames[1], on=key, suffixes=("_a", "_b"))
    if m.empty:
        _fail("the two points files share no point (run, kernel, config, shape)")
    for s in "ab":
        m["ape_" + s] = m["error_pct_" + s].abs()
    lines = [f"points in both: {len(m)} (A {len(frames[0])}, B {len(frames[1])})",
             f"A: MAPE {m.ape_a.mean():.3f} %, bias {m.error_pct_a.mean():+.2f} %",
             f"B: MAPE {m.ape_b.mean():.3f} %, bias {m.error_pct_b.mean():+.2f} %"]
    moved = m[(m.predicted_gflops_a - m.predicted_gflops_b).abs() > 1e-6 * m.predicted_gflops_a.abs()]
    lines.append(f"moved: {len(moved)} points")
    if len(moved):
        for by in ("kernel", "blocks_per_sm_a"):
            g = moved.groupby(by).agg(points=("ape_a", "size"), mape_a=("ape_a", "mean"), mape_b=("ape_b", "mean"),
                                      bias_a=("error_pct_a", "mean"), bias_b=("error_pct_b", "mean"))
            lines.append(f"\nmoved points by {by.replace('_a', '')} (MAPE and bias, %, A then B):")
            lines.append(g.round(2).to_string())
    return "\n".join(lines)


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if argv[:1] == ["--diff"]:
        if len(argv) != 3:
            _fail("--diff takes two points files: --diff A.csv B.csv")
        print(diff(argv[1], argv[2]))
        return 0
    if "--" not in argv:
        _fail("give switches, then -- and the perfmodel command (e.g. schedule.LATENCY_APART=1 -- accuracy RUN)")
    at = argv.index("--")
    switches, command = argv[:at], argv[at + 1:]
    if not switches or not command:
        _fail("give at least one switch before -- and a perfmodel command after it")
    for module, name, value in [parse_switch(s) for s in switches]:
        setattr(module, name, value)
        print(f"with_switch: {module.__name__}.{name} = {value}", file=sys.stderr)
    from perfmodel.cli import main as cli_main

    return cli_main(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
