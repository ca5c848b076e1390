"""Compile each published point's own kernel (published/sgemm.toml, `[point.binary]`) and compare the
registers and spill bytes the compiler reports, and the FFMAs of its k-tile loop in the SASS, with the
figures the file records (CPU only; needs nvcc, nvdisasm and a clone of every source repository).

  python3 benchmarks/published_binaries.py REPOS_DIR            # a table: recorded vs compiled
  python3 benchmarks/published_binaries.py REPOS_DIR --check    # exit 1 where a figure differs
  python3 benchmarks/published_binaries.py REPOS_DIR --source-loops   # also: the points scored with the sources' own loops

REPOS_DIR/<owner>+<name> is a git clone (or a directory holding one as `repo`) of each source's
repository; the file is read at the source's commit (`git archive`). For each point the kernel's file
(the lines `lines` names, where the file also holds host code) is compiled with a prelude of standard
headers and without its cuBLAS include, with the template instance `instance` taken by address, by
`nvcc -cubin -O3 -arch=<ptx> -code=<arch> -Xptxas -v` (`ptx`: the virtual architecture the source's build
targets, where the driver compiles its PTX for the GPU; else the GPU's own). The entry whose demangled
name is `entry` gives the figures; `nvdisasm -hex` of the cubin, its FFMAs in the loop whose backward
branch holds the most (`sass.loop_lines`, as the catalogue's loops are read)."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from perfmodel.measure.toolchain import find_nvcc, resource_usage
from perfmodel.published import load

PRELUDE = "".join(f"#include <{h}>\n" for h in ("cstdio", "cstdlib", "cassert", "cstdint", "vector", "string",
                                               "iostream", "iomanip", "algorithm", "cuda_runtime.h"))
CUBLAS = re.compile(r'^\s*#\s*include\s*[<"]cublas_v2\.h[>"]', re.M)
# what a source's own headers may declare with cuBLAS's types (a launcher's prototype): the kernels never call it,
# and a machine with only the compiler has no cuBLAS headers
CUBLAS_STUB = ("#pragma once\ntypedef struct cublasContext *cublasHandle_t;\n"
               "typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;\n")


def the_nvcc() -> str | None:
    """The local toolkit's nvcc (these builds need the whole compiler driver, not the wheels' cicc and ptxas)."""
    return find_nvcc() or shutil.which("nvcc")


def checkout(repos: Path, repository: str, commit: str, dest: Path) -> Path:
    owner, name = repository.split("/")
    git = repos / f"{owner}+{name}"
    if (git / "repo").exists():
        git = git / "repo"
    if not git.exists():
        raise SystemExit(f"no clone of {repository} at {git}")
    out = dest / f"{owner}+{name}"
    if not out.exists():
        out.mkdir(parents=True)
        tar = subprocess.run(["git", "-C", str(git), "archive", commit], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=tar, check=True)
    return out


def demangle(names: list[str]) -> list[str]:
    r = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
    return r.stdout.splitlines()


def compile_module(nvcc: str, tree: Path, b, arch: str | None = None, ptx: str | None = None) -> tuple[bytes, dict]:
    """(cubin, {demangled entry without its parameters: (mangled name, registers, spill store bytes)}) of the
    point's file built for `arch` (default the point's: b.arch from b.ptx's PTX, or from the GPU's own)."""
    src = tree / b.file
    text = src.read_text(errors="replace")
    if b.lines:
        text = "\n".join(text.splitlines()[b.lines[0] - 1:b.lines[1]]) + "\n"
    body = src.with_name(src.name + ".pm.cuh")
    body.write_text(CUBLAS.sub("", text))
    wrapper = src.with_name(src.name + ".pm.cu")
    wrapper.write_text(PRELUDE + f'#include "{body.name}"\n' + (f"static void *pm_instance = (void *)&{b.instance};\n" if b.instance else ""))
    arch = arch or b.arch
    ptx = ptx or (b.ptx if arch == b.arch else None) or f"compute_{arch.replace('sm_', '')}"
    out = src.with_name(src.name + f".{arch}.cubin")
    stubs = tree / ".pm-stubs"
    stubs.mkdir(exist_ok=True)
    (stubs / "cublas_v2.h").write_text(CUBLAS_STUB)
    cmd = [nvcc, "-cubin", "-O3", f"-arch={ptx}", f"-code={arch}", "-Xptxas", "-v", "-o", str(out),
           *[f"-I{tree / i}" for i in b.includes], f"-I{stubs}", str(wrapper)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{b.file}: nvcc failed: {r.stderr.strip()[-600:]}")
    found = {}
    for name in re.findall(r"Compiling entry function '(\w+)'", r.stderr):
        use = resource_usage(r.stderr, name)
        found[name] = [use["registers"], use["spill_stores"]]
    names = list(found)
    loops = loop_ffmas(out)
    entries = {entry_name(d): (n, *found[n], loops.get(n, 0)) for n, d in zip(names, demangle(names))}
    return out.read_bytes(), entries


def entry_name(demangled: str) -> str:
    """A demangled kernel's name without its return type and parameter list: "sgemm_naive",
    "sgemm_global_mem_coalesce<32u>", "(anonymous namespace)::matmul_naive_kernel"."""
    d = demangled.strip()
    if d.endswith(")"):  # cut the parameter list: the parenthesis that opens the final one
        depth = 0
        for i in range(len(d) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(d[i], 0)
            if depth == 0:
                d = d[:i]
                break
    return d.removeprefix("void ").strip()


def sections(cubin: Path) -> dict[str, str]:
    """{mangled entry: its section of `nvdisasm -hex`}."""
    from perfmodel.measure import sass

    exe = sass.find_nvdisasm()
    if exe is None:
        raise SystemExit("needs nvdisasm (the CUDA toolkit, or pip install 'perfmodel[sass]')")
    return sass.function_sections(subprocess.run([exe, "-hex", str(cubin)], capture_output=True, text=True, check=True).stdout)


def loop_ffmas(cubin: Path) -> dict[str, int]:
    """{mangled entry: FFMAs in its k-tile loop (the backward branch whose body holds the most, sass.loop_lines)}."""
    from perfmodel.measure import sass

    out = {}
    for name, text in sections(cubin).items():
        body = sass.loop_lines(text)
        out[name] = 0 if body is None else sum("FFMA" in ln for ln in body)
    return out


def compile_entries(nvcc: str, tree: Path, b) -> dict[str, tuple[int, int, int]]:
    """{demangled entry without its parameters: (registers, spill store bytes, FFMAs in its k-tile loop)} of
    the point's file."""
    return {k: (regs, spills, loop) for k, (_, regs, spills, loop) in compile_module(nvcc, tree, b)[1].items()}


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print("usage: python3 benchmarks/published_binaries.py REPOS_DIR [--check] [--source-loops]", file=sys.stderr)
        return 2
    repos, check = Path(argv[0]), "--check" in argv[1:]
    nvcc = the_nvcc()
    if not nvcc:
        print("needs nvcc (the CUDA toolkit)", file=sys.stderr)
        return 2
    data = load()
    sources = {s.id: s for s in data.source}
    bad = 0
    print(f"{data.binaries_compiled_with}; this run: {subprocess.run([nvcc, '--version'], capture_output=True, text=True).stdout.strip().splitlines()[-1]}")
    print(f"| source | row | entry | arch | recorded registers / spills / loop FFMAs | compiled | |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="published-") as tmp:
        cache: dict = {}
        for pt in data.point:
            b = pt.binary
            if b is None:
                continue
            s = sources[pt.source]
            tree = checkout(repos, s.repository, s.commit, Path(tmp))
            key = (s.id, b.file, b.instance, b.arch, b.ptx, tuple(b.lines or ()))
            if key not in cache:
                cache[key] = compile_entries(nvcc, tree, b)
            got = cache[key].get(b.entry)
            ok = got == (b.registers, b.spill_bytes, b.loop_ffma)
            bad += not ok
            shown = "no such entry: " + ", ".join(cache[key]) if got is None else f"{got[0]} / {got[1]} B / {got[2]}"
            print(f"| {s.id} | {pt.row} | {b.entry} | {b.arch} | {b.registers} / {b.spill_bytes} B / {b.loop_ffma} | {shown} | "
                  f"{'ok' if ok else 'DIFFERS'} |")
    print(f"{bad} point(s) differ")
    if "--source-loops" in argv[1:]:
        score_with_source_loops(repos, nvcc, data, sources)
    return 1 if (check and bad) else 0


def score_with_source_loops(repos: Path, nvcc: str, data, sources) -> None:
    """The published points scored as `perfmodel accuracy --published` scores them, and again with each
    source's own k-tile loop (its entry's section of `nvdisasm -hex`, sass.loop_program) replayed in place
    of the catalogue kernel's."""
    from perfmodel import published
    from perfmodel.measure import sass

    loops = {}
    with tempfile.TemporaryDirectory(prefix="published-") as tmp:
        for pt in data.point:
            b = pt.binary
            if b is None or (pt.source, b.entry) in loops:
                continue
            key = (pt.source, b.entry)
            s = sources[pt.source]
            cubin, entries = compile_module(nvcc, checkout(repos, s.repository, s.commit, Path(tmp)), b)
            out = Path(tmp) / "k.cubin"
            out.write_bytes(cubin)
            loops[key] = sass.loop_program(sections(out)[entries[b.entry][0]])
    print("| source | row | measured | catalogue's loop | source's loop |")
    print("|---|---|---|---|---|")
    a, _ = published.score()
    c, _ = published.score(loops=loops)
    for x, y in zip(a, c):
        print(f"| {x.source} | {x.row} | {x.measured_gflops:,.0f} | {x.predicted_gflops:,.0f} ({x.error_pct:+.1f} %) | "
              f"{y.predicted_gflops:,.0f} ({y.error_pct:+.1f} %) |")
    for name, rows in (("catalogue's loops", a), ("sources' loops", c)):
        e = [r.error_pct for r in rows]
        ae = sorted(abs(v) for v in e)
        print(f"{name}: MAPE {sum(ae) / len(ae):.1f} % (median {(ae[len(ae) // 2 - 1] + ae[len(ae) // 2]) / 2:.1f} %, "
              f"bias {sum(e) / len(e):+.1f} %) over {len(e)} points")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
