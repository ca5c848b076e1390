"""Keep recorded runs' raw.json as raw.json.xz (about a tenth of the size; every reader takes either):
records.pack_record writes the packed file, reads it back, compares it byte for byte with raw.json and
only then removes raw.json.

    python benchmarks/pack_records.py RUN [RUN ...]"""
from __future__ import annotations

import sys
from pathlib import Path

from perfmodel.measure.records import pack_record


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    for run in map(Path, argv):
        before = (run / "raw.json").stat().st_size if (run / "raw.json").is_file() else 0
        if pack_record(run):
            print(f"{run}: raw.json {before / 1e6:.1f} MB -> raw.json.xz {(run / 'raw.json.xz').stat().st_size / 1e6:.2f} MB")
        else:
            print(f"{run}: nothing to pack (no raw.json, or raw.json.xz exists)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
