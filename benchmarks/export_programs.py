"""Archive the k-tile loop programs (measure.sass.loop_program) of every config in the recorded runs made
with today's kernel sources, so that replays (tests, report, accuracy_table) need no nvcc (CPU; nvcc and
nvdisasm). Never overwrites.
    PYTHONPATH=. python3 benchmarks/export_programs.py results/sass-programs-sm_90-YYYYMMDD.json.xz"""
import json
import sys
from pathlib import Path

from perfmodel.catalogue import KernelConfig
from perfmodel.measure.sass import write_program_archive
from perfmodel.measure.validate import sources_sha256

ROOT = Path(__file__).resolve().parent.parent
sha = sources_sha256()
cfgs = {}
for raw in sorted((ROOT / "results").glob("*/raw.json")):
    r = json.loads(raw.read_text())
    if r["environment"].get("kernel_sources_sha256") != sha or r["environment"]["compute_capability"] != "9.0":
        continue
    for m in r["measurements"]:
        if m["kernel"] != "cublas":
            cfg = KernelConfig.make(m["kernel"], **m["config"])
            if cfg.spec.uses_smem:
                cfgs[cfg.label()] = cfg
n = write_program_archive(list(cfgs.values()), "9.0", sys.argv[1])
print(f"{n} of {len(cfgs)} configs archived in {sys.argv[1]}")
