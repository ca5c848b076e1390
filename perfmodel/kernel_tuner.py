"""A kernel's search space and the model's order as Kernel Tuner takes them (`perfmodel sweep --kernel-tuner
FILE`): a Python module, readable without perfmodel, holding `tune_params`, `restrictions` (one function:
the manifest's and the device's constraints, as the set of valid configurations), the model's order
(`model_order`, best first, with predicted GFLOPS and the threads per block each launches) and its top
configuration as `x0` (the start of Kernel Tuner's local strategies); `defines` gives the kernels' macro
names. No GPU, no Kernel Tuner needed to write it."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .catalogue import LAUNCH_PARAMS, VALUES, KernelConfig, get_kernel, values_of
from .errors import UserError
from .measure.build import MACROS
from .paths import data_dir

KT_KERNEL = "sgemm"  # every source's kernel function


def tune_params(kernel: str, configs: list[KernelConfig]) -> dict:
    """{parameter: values}: the kernel's tile (and launch) parameters over the sweep's values, its design
    choices over the values the configurations take. (The threads per block follow from them; as a tune
    parameter of its own it would multiply the product Kernel Tuner's search-space construction walks.)"""
    spec = get_kernel(kernel)
    out = {p: list(values_of(spec, p)) for p in spec.params if p in VALUES}
    for c in configs:
        for k, v in c.params().items():
            if k not in out:
                out[k] = []
            if k not in VALUES and v not in out[k]:
                out[k].append(v)
    return out


def _row(c: KernelConfig, keys: list[str]) -> tuple:
    p = c.params()
    return tuple(p[k] for k in keys)


def module_text(kernel: str, device: str, M: int, N: int, K: int, configs: list[KernelConfig], gflops) -> str:
    """The module's text: the configs (all valid for the device) in the model's order by `gflops`."""
    if not configs:
        raise UserError(f"{kernel} has no valid configuration on {device}; nothing to write")
    kinds = {c.kernel for c in configs}
    if kinds != {kernel}:
        raise UserError(f"--kernel-tuner writes one kernel's search space; got {', '.join(sorted(kinds))} (name one --kernel)")
    order = list(np.argsort(-np.asarray(gflops), kind="stable"))
    tp = tune_params(kernel, configs)
    keys = list(tp)
    rows = [_row(configs[i], keys) for i in order]
    macros = {k: m for k, m in MACROS.items() if k in keys and k not in LAUNCH_PARAMS}
    src = data_dir("kernels") / get_kernel(kernel).source
    lines = [
        f'"""Kernel Tuner search space of perfmodel\'s {kernel} on {device}, M={M} N={N} K={K}: {len(rows)} valid',
        "configurations, in the model's order (best first). Written by `perfmodel sweep --kernel-tuner`.",
        "",
        "    import kernel_tuner, space",
        "    kernel_tuner.tune_kernel(space.kernel_name, space.kernel_file, space.problem_size, ARGS, space.tune_params,",
        "                             restrictions=space.restrictions, strategy=..., strategy_options={'x0': space.x0}, ...)",
        "",
        "`model_order` lists every configuration with the model's GFLOPS (measure its head first) and its threads",
        "per block (`threads(p)`); `defines` maps the kernels' macros to the parameters (the sources read BM, BN, ...;",
        "split_k's splits is the grid's z).",
        '"""',
        f"kernel_name = {KT_KERNEL!r}",
        f"kernel_file = {str(src)!r}",
        f"problem_size = ({N}, {M}, {K})  # grid x covers N (columns of C), y covers M",
        "grid_div_x = ['bn']",
        "grid_div_y = ['bm']",
        f"tune_params = {tp!r}",
        f"keys = {keys!r}",
        "model_order = [",
        *(f"    ({r!r}, {float(gflops[i]):.1f}, {configs[i].threads})," for r, i in zip(rows, order)),
        "]  # (values in the order of `keys`, predicted GFLOPS, threads per block)",
        "VALID = frozenset(r for r, _, _ in model_order)",
        "THREADS = {r: t for r, _, t in model_order}",
        "x0 = list(model_order[0][0])",
        f"defines = {{{', '.join(f'{m!r}: (lambda p, k={k!r}: p[k])' for k, m in macros.items())}}}",
        "",
        "",
        "def restrictions(p):",
        '    """True for the configurations the kernel and the device allow."""',
        "    return tuple(p[k] for k in keys) in VALID",
        "",
        "",
        "def threads(p):",
        '    """Threads per block the configuration launches (one dimension)."""',
        "    return THREADS[tuple(p[k] for k in keys)]",
        "",
    ]
    return "\n".join(lines)


def write_check(path: Path) -> None:
    """UserError where the module cannot be written there (before the ranking's work)."""
    path = Path(path)
    if path.suffix != ".py":
        raise UserError(f"--kernel-tuner {path}: the search space is written as a Python module (a name ending in .py)")
    if path.exists():
        raise UserError(f"{path} exists; files are never overwritten")
    if not path.parent.is_dir():
        raise UserError(f"--kernel-tuner {path}: folder {path.parent} does not exist")


def write(path: Path, text: str) -> None:
    write_check(path)
    Path(path).write_text(text)
