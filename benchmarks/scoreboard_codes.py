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
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from perfmodel.measure import sass
from perfmodel.paths import cache_dir

ROOT = Path(__file__).resolve().parent.parent


def loops_of(cubin: str) -> dict:
    """{program id: scoreboard fields} of a cubin's k-tile loop and edge-body loop (sm_90 cubins only)."""
    with open(cubin, "rb") as f:
        head = f.read(52)
    if len(head) < 52 or (struct.unpack("<I", head[48:52])[0] >> 8) & 0xFF != 90:  # ELF e_flags: the SM
        return {}
    r = subprocess.run([sass.find_nvdisasm(), *sass.DISASM_ARGS, cubin], capture_output=True, text=True)
    if r.returncode != 0:
        return {}
    listing = sass.without_aux_kernels(r.stdout)
    out = {}
    for text in (listing, sass.edge_listing(listing)):
        body = sass.loop_lines(text) if text else None
        fields = sass.scoreboard_fields(body) if body else None
        if fields:
            out[sass.program_id(body)] = fields
    return out


OLD_BUILD = """import json, sys
from perfmodel.catalogue import KernelConfig
from perfmodel.errors import UserError
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
    sys.path.insert(0, str(ROOT / "benchmarks"))
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
    wanted = set()
    for p in sorted((ROOT / "results").glob(sass.ARCHIVE_GLOB)):
        wanted |= set(json.loads(lzma.decompress(p.read_bytes()))["programs"])
    if "--rebuild" in sys.argv:
        rebuild(sys.argv[sys.argv.index("--rebuild") + 1:], max(1, min(4, os.cpu_count() or 1)))
    cubins = sorted(str(p) for p in cache_dir().glob("*.cubin"))
    found: dict = {}
    with ProcessPoolExecutor() as pool:
        for i, got in enumerate(pool.map(loops_of, cubins, chunksize=16), 1):
            found.update({k: v for k, v in got.items() if k in wanted})
            if i % 200 == 0 or i == len(cubins):
                print(f"  {i}/{len(cubins)} cubins read, {len(found)}/{len(wanted)} archived programs found", file=sys.stderr)
    dest.write_bytes(lzma.compress(json.dumps(dict(codes=found), separators=(",", ":"), sort_keys=True).encode()))
    print(f"{len(found)} of {len(wanted)} archived loop programs have their scoreboard fields in {dest}; "
          f"{len(wanted) - len(found)} not in the build cache")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
