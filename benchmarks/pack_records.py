"""Keep recorded runs' raw.json as raw.json.xz (about a tenth of the size; every reader takes either):
records.pack_record writes the packed file, reads it back, compares it byte for byte with raw.json and
only then removes raw.json. A shape run that stopped before its last point (plan.json and the append log
points.jsonl, no raw.json) gets its log packed the same way (records.pack_file); `perfmodel validate
--resume RUN` (or `bench --resume`) unpacks it before it measures the rest.

    python benchmarks/pack_records.py RUN [RUN ...]"""
from __future__ import annotations

import sys
from pathlib import Path

from perfmodel.measure.records import pack_file, pack_record


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for run in map(Path, argv):
        before = (run / "raw.json").stat().st_size if (run / "raw.json").is_file() else 0
        if pack_record(run):
            print(f"{run}: raw.json {before / 1e6:.1f} MB -> raw.json.xz {(run / 'raw.json.xz').stat().st_size / 1e6:.2f} MB")
        elif not (run / "raw.json.xz").is_file() and (run / "plan.json").is_file() and (run / "points.jsonl").is_file():
            size = (run / "points.jsonl").stat().st_size
            packed = pack_file(run / "points.jsonl")
            print(f"{run}: a stopped run: points.jsonl {size / 1e6:.1f} MB -> {packed.name} {packed.stat().st_size / 1e6:.2f} MB "
                  f"(perfmodel validate --resume {run} unpacks it)")
        else:
            print(f"{run}: nothing to pack (no raw.json, or raw.json.xz exists)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
