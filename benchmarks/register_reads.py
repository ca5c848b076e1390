"""Register-bank reads (measure.sass.register_reads) of the loop programs in the archives beside the
recorded runs, read off the cubins in the build cache (CPU; nvdisasm): every cached cubin is
disassembled, its k-tile loop and edge-body loop found as measure.sass.loop_program finds them, and
their reads kept under the program's id (a digest of the loop's SASS, which names the loop whatever
kernel sources built it). Archived programs no cached cubin holds are listed, not guessed.
With `--from ARCHIVE ...` (last), also the reads of the programs those archives hold (archives that
benchmarks/export_programs.py wrote since loop programs carry them: a run's builds rebuilt at its
commit, e.g. `--runs` of runs whose sources the cache no longer holds).
Writes a new file (never overwrites): {program id: reads}.

    PYTHONPATH=. python3 benchmarks/register_reads.py results/register-reads-sm_90-YYYYMMDD.json.xz [--from ARCHIVE ...]"""
import json
import lzma
import struct
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

from perfmodel.measure import sass
from perfmodel.paths import cache_dir

ROOT = Path(__file__).resolve().parent.parent


def loops_of(cubin: str, fact=sass.register_reads) -> dict:
    """{program id: fact(loop body)} of a cubin's k-tile loop and edge-body loop (sm_90 cubins only: the archives');
    fact: register_reads here, another per-body fact for benchmarks/scoreboard_codes.py (a body it gives None is left out)."""
    with open(cubin, "rb") as f:
        head = f.read(52)
    if len(head) < 52 or (struct.unpack("<I", head[48:52])[0] >> 8) & 0xFF != 90:  # ELF e_flags: the SM
        return {}
    r = subprocess.run([sass.find_nvdisasm(), *sass.DISASM_ARGS, cubin], capture_output=True, text=True)
    if r.returncode != 0:
        return {}
    listing = sass.without_aux_kernels(r.stdout)
    out = {}
    edge = sass.edge_listing(listing)
    for text in (listing, edge):
        body = sass.loop_lines(text) if text else None
        got = fact(body) if body else None
        if got is not None:
            out[sass.program_id(body)] = got
    return out


def archived_ids() -> set:
    """The ids of every loop program the archives under results/ hold."""
    wanted = set()
    for p in sorted((ROOT / "results").glob(sass.ARCHIVE_GLOB)):
        wanted |= set(json.loads(lzma.decompress(p.read_bytes()))["programs"])
    return wanted


def read_cache(wanted: set, found: dict, fact=sass.register_reads) -> dict:
    """found, updated with fact of every cached sm_90 cubin's loops whose program id is wanted (progress shown)."""
    cubins = sorted(str(p) for p in cache_dir().glob("*.cubin"))
    with ProcessPoolExecutor() as pool:
        for i, got in enumerate(pool.map(partial(loops_of, fact=fact), cubins, chunksize=16), 1):
            found.update({k: v for k, v in got.items() if k in wanted})
            if i % 200 == 0 or i == len(cubins):
                print(f"  {i}/{len(cubins)} cubins read, {len(found)}/{len(wanted)} archived programs found", file=sys.stderr)
    return found


def main(dest: str) -> int:
    dest = Path(dest)
    if dest.exists():
        print(f"{dest} exists; never overwritten", file=sys.stderr)
        return 2
    wanted = archived_ids()
    found: dict = {}
    for extra in sys.argv[sys.argv.index("--from") + 1:] if "--from" in sys.argv else []:
        progs = json.loads(lzma.decompress(Path(extra).read_bytes()))["programs"]
        found.update({k: p["reads"] for k, p in progs.items() if k in wanted and "reads" in p})
        print(f"  {extra}: {len(found)}/{len(wanted)} archived programs found", file=sys.stderr)
    read_cache(wanted, found)
    dest.write_bytes(lzma.compress(json.dumps(dict(reads=found), separators=(",", ":"), sort_keys=True).encode()))
    missing = sorted(wanted - set(found))
    print(f"{len(found)} of {len(wanted)} archived loop programs have their reads in {dest}; {len(missing)} not in the build cache")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
