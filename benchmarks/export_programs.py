"""Archive the k-tile loop programs (measure.sass.loop_program) of every tiled config in the recorded
runs, so that replays (tests, report, accuracy) need no nvcc (CPU; nvcc, nvdisasm and git).

Runs made with today's kernel sources are built here; a run made with older sources is rebuilt with
the kernels and build code of the commit whose kernels/ hash to the run's kernel_sources_sha256 (in a
temporary worktree, same nvcc flags as recorded), so its programs are those of the binaries that ran.
Keys: measure.sass.archive_key (sources, flags, config). Never overwrites. With `--today-only`, only the
builds of today's sources that no archive under results/ holds yet with its stall counts (a new file
beside the older ones).
With `--edge`, the edge-body loop programs (keys: measure.sass.edge_archive_key) of the points of
today's sources that have blocks on a ragged edge (catalogue.edge_blocks), which no archive holds yet
with stall counts.
With `--one-element`, the loops of the one-element kernels (naive, coalesced: no tile, no shared memory) of
every run, today's sources and older ones, that no archive under results/ holds yet (the model counts their
global-load waits, predict.one_element_steps).
With `--runs RUN ...` (last), only those runs' builds.
    PYTHONPATH=. python3 benchmarks/export_programs.py results/sass-programs-sm_90-YYYYMMDD.json.xz [--today-only | --edge | --one-element] [--runs RUN ...]"""
import hashlib
import json
import lzma
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from perfmodel.catalogue import KernelConfig, edge_blocks
from perfmodel.measure import sass
from perfmodel.measure.records import PEERS
from perfmodel.measure.sass import archive_key, sass_facts, write_program_archive
from perfmodel.measure.build import sources_sha256

ROOT = Path(__file__).resolve().parent.parent
OLD_BUILD = """import json, sys
from perfmodel.catalogue import KernelConfig
from perfmodel.measure.build import compile_cubin
for kernel, params in json.loads(sys.stdin.read()):
    print(compile_cubin(KernelConfig.make(kernel, **params), "9.0"))
"""


def kernels_hash(commit: str) -> str:
    """sources_sha256 of kernels/ at a commit (the same concatenation of the sorted *.cu* files)."""
    names = sorted(n for n in subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", commit, "kernels/"],
                                             capture_output=True, text=True, check=True).stdout.split()
                   if ".cu" in n.rsplit("/", 1)[-1])
    return hashlib.sha256(b"".join(subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{n}"], capture_output=True,
                                                  check=True).stdout for n in names)).hexdigest()


def commit_with_sources(sha: str) -> str | None:
    for c in subprocess.run(["git", "-C", str(ROOT), "log", "--format=%H", "--", "kernels"], capture_output=True, text=True,
                            check=True).stdout.split():
        if kernels_hash(c) == sha:
            return c
    return None


def build_old(commit: str, configs: list) -> list:
    """Loop programs of configs built with the kernels and build code of `commit`."""
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "wt"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), commit], check=True, capture_output=True)
        try:
            env = dict(os.environ, PYTHONPATH=str(wt), PERFMODEL_CACHE=str(Path(tmp) / "cache"))
            r = subprocess.run([sys.executable, "-c", OLD_BUILD], input=json.dumps(configs), cwd=wt, env=env,
                               capture_output=True, text=True, check=True)
            out = []
            for cubin in r.stdout.split():
                listing = subprocess.run([sass.find_nvdisasm(), *sass.DISASM_ARGS, cubin], capture_output=True, text=True, check=True).stdout
                out.append(sass.loop_program(listing))
            return out
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], capture_output=True)


def recorded_runs():
    """The raw.json records under results/ (only the runs named after `--runs`, where given)."""
    only = {Path(r).name for r in sys.argv[sys.argv.index("--runs") + 1:]} if "--runs" in sys.argv else None
    for raw in sorted(p for p in (ROOT / "results").glob("*/raw.json*") if p.name in ("raw.json", "raw.json.xz")):
        if only is None or raw.parent.name in only:
            yield json.loads(lzma.decompress(raw.read_bytes()) if raw.suffix == ".xz" else raw.read_text())


def held_with_stalls(held, key: str) -> bool:
    """Whether an archive under results/ holds key's program with its stall counts."""
    return "stall" in (held.program(key) or {})


def edge_main():
    """--edge: the edge-body loops of today's-source points with edge blocks."""
    today = sources_sha256()
    held = sass.ProgramArchive([ROOT / "results"])
    cfgs: dict[str, tuple] = {}
    for r in recorded_runs():
        env = r["environment"]
        if env["compute_capability"] != "9.0" or env.get("kernel_sources_sha256") != today:
            continue
        for m in r["measurements"]:
            if m["kernel"] in PEERS:
                continue
            c = KernelConfig.make(m["kernel"], **m["config"])
            key = sass.edge_archive_key(today, env["nvcc_flags"], c)
            if c.spec.uses_smem and edge_blocks(m["M"], m["N"], m["K"], c.bm, c.bn, c.bk, c.ragged)[1] > 0 and not held_with_stalls(held, key):
                cfgs[key] = c
    programs = {}
    for i, (key, c) in enumerate(cfgs.items(), 1):
        p = (sass_facts(c, "9.0") or {}).get("edge_loop_program")
        if p:
            programs[key] = p
        print(f"\r  {i}/{len(cfgs)} builds", end="", flush=True)
    n = write_program_archive(programs, sys.argv[1])
    print(f"\n{n} edge-body loops of {len(cfgs)} builds archived in {sys.argv[1]}")


def main():
    if "--edge" in sys.argv[2:]:
        return edge_main()
    today = sources_sha256()
    today_only = "--today-only" in sys.argv[2:]
    one_element = "--one-element" in sys.argv[2:]
    held = sass.ProgramArchive([ROOT / "results"])
    by_sources: dict[tuple, dict] = {}
    for r in recorded_runs():
        env = r["environment"]
        if env["compute_capability"] != "9.0" or not env.get("kernel_sources_sha256"):
            continue
        group = by_sources.setdefault((env["kernel_sources_sha256"], tuple(env["nvcc_flags"])), {})
        for m in r["measurements"]:
            if m["kernel"] in PEERS:
                continue
            c = KernelConfig.make(m["kernel"], **m["config"])
            if one_element and (c.spec.uses_smem or held.program(archive_key(env["kernel_sources_sha256"], env["nvcc_flags"], c))):
                continue
            if c.spec.uses_smem or one_element:
                group[json.dumps([m["kernel"], m["config"]], sort_keys=True)] = (m["kernel"], m["config"])
    programs = {}
    for (sha, flags), cfgs in by_sources.items():
        if not cfgs:
            continue
        items = list(cfgs.values())
        kcfgs = [KernelConfig.make(k, **p) for k, p in items]
        if sha == today:
            if today_only:  # what the archives under results/ already hold is not written again
                kcfgs = [c for c in kcfgs if not held_with_stalls(held, archive_key(sha, flags, c))]
                items = [(c.kernel, c.params()) for c in kcfgs]
            progs = [(sass_facts(c, "9.0") or {}).get("loop_program") for c in kcfgs]
            src = "today's sources"
        elif today_only:
            continue
        else:
            commit = commit_with_sources(sha)
            if commit is None:
                print(f"sources {sha[:10]}: no commit has them; {len(items)} configs left to the closed form")
                continue
            progs = build_old(commit, items)
            src = f"commit {commit[:7]}"
        n = 0
        for c, p in zip(kcfgs, progs):
            if p:
                programs[archive_key(sha, flags, c)] = p
                n += 1
        print(f"sources {sha[:10]} ({src}): {n} of {len(items)} configs")
    n = write_program_archive(programs, sys.argv[1])
    print(f"{n} builds archived in {sys.argv[1]}")


if __name__ == "__main__":
    main()
