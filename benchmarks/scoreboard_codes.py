"""The scoreboard fields of the control codes (measure.sass.control_codes: each instruction's write and read
scoreboards and the mask it waits on) of the loop programs in the archives beside the recorded runs, read off
the cubins in the build cache (CPU; nvdisasm): every cached sm_90 cubin is disassembled, its k-tile loop and
edge-body loop found as measure.sass.loop_program finds them, and their fields kept under the program's id (a
digest of the loop's SASS, control words included, so the fields belong to that id whatever sources built it).
Archived programs no cached cubin holds are counted, not guessed.
With `--rebuild RUN ...` (last), first the builds of those runs' points are made where the cache lacks them:
a run made with older kernel sources is built with the kernels and build code of the commit whose kernels/
hash to its kernel_sources_sha256 (a temporary worktree, into the same build cache, as
benchmarks/export_programs.py rebuilds them), today's sources here. Writes a new file (never overwrites):
{"codes": {program id: [[write, read, wait], ...]}}, which measure.sass.ProgramArchive adds to the programs it
returns (model.schedule's scoreboard waits).

    PYTHONPATH=. python3 benchmarks/scoreboard_codes.py results/scoreboard-codes-sm_90-YYYYMMDD.json.xz [--rebuild RUN ...]"""
import json
import lzma
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perfmodel.measure import sass  # noqa: E402
from perfmodel.paths import cache_dir  # noqa: E402
from register_reads import archived_ids, read_cache  # noqa: E402  (the cubin walk: loops_of with another fact)

ROOT = Path(__file__).resolve().parent.parent


OLD_BUILD = """import json, sys
from perfmodel.catalogue import KernelConfig
from perfmodel.measure.build import compile_cubin
for kernel, params in json.loads(sys.stdin.read()):
    try:
        compile_cubin(KernelConfig.make(kernel, **params), "9.0")
    except Exception as e:
        print(kernel, params, e, file=sys.stderr)
"""


def _build_group(job) -> int:
    """Build one group of configurations (commit or None for today's sources) into the build cache."""
    commit, items = job
    if commit is None:
        from perfmodel.catalogue import KernelConfig
        from perfmodel.measure.build import compile_cubin
        for k, p in items:
            try:
                compile_cubin(KernelConfig.make(k, **p), "9.0")
            except Exception as e:  # a config today's catalogue refuses: counted, not built
                print(k, p, e, file=sys.stderr)
        return len(items)
    with tempfile.TemporaryDirectory() as tmp:
        wt = Path(tmp) / "wt"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(wt), commit], check=True, capture_output=True)
        try:
            env = dict(os.environ, PYTHONPATH=str(wt), PERFMODEL_CACHE=str(cache_dir()))
            subprocess.run([sys.executable, "-c", OLD_BUILD], input=json.dumps(items), cwd=wt, env=env, text=True, check=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(wt)], capture_output=True)
    return len(items)


def rebuild(runs: list[str], workers: int) -> None:
    """Build every tiled configuration of the runs with the sources each run used (see the module doc)."""
    from export_programs import commit_with_sources
    from perfmodel.measure.build import sources_sha256
    from perfmodel.measure.records import PEERS
    today = sources_sha256()
    groups: dict[str, dict] = {}
    for run in runs:
        raw = next(p for p in (Path(run) / "raw.json.xz", Path(run) / "raw.json") if p.exists())
        r = json.loads(lzma.decompress(raw.read_bytes()) if raw.suffix == ".xz" else raw.read_text())
        sha = r["environment"].get("kernel_sources_sha256")
        if r["environment"]["compute_capability"] != "9.0" or not sha:
            continue
        g = groups.setdefault(sha, {})
        for m in r["measurements"]:
            if m["kernel"] not in PEERS:
                g[json.dumps([m["kernel"], m["config"]], sort_keys=True)] = (m["kernel"], m["config"])
    jobs = []
    for sha, cfgs in groups.items():
        commit = None if sha == today else commit_with_sources(sha)
        if sha != today and commit is None:
            print(f"sources {sha[:10]}: no commit has them; {len(cfgs)} configs not built", file=sys.stderr)
            continue
        items = sorted(cfgs.values(), key=json.dumps)
        for w in range(workers):  # each worker a share of the group (its own worktree)
            if items[w::workers]:
                jobs.append((commit, items[w::workers]))
        print(f"sources {sha[:10]} ({'today' if commit is None else commit[:7]}): {len(items)} configs", file=sys.stderr)
    done = 0
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for n in pool.map(_build_group, jobs):
            done += n
            print(f"  {done} configs built or found in the cache", file=sys.stderr)


def main(dest: str) -> int:
    dest = Path(dest)
    if dest.exists():
        print(f"{dest} exists; never overwritten", file=sys.stderr)
        return 2
    wanted = archived_ids()
    if "--rebuild" in sys.argv:
        rebuild(sys.argv[sys.argv.index("--rebuild") + 1:], max(1, min(4, os.cpu_count() or 1)))
    found = read_cache(wanted, {}, sass.scoreboard_fields)
    dest.write_bytes(lzma.compress(json.dumps(dict(codes=found), separators=(",", ":"), sort_keys=True).encode()))
    print(f"{len(found)} of {len(wanted)} archived loop programs have their scoreboard fields in {dest}; "
          f"{len(wanted) - len(found)} not in the build cache")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
