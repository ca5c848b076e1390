#!/bin/bash
# A kernel launch's cost timed back to back (the situation of the published latency.back_to_back_launch_us)
# and as validate times a kernel, on this machine's GPU (GPU and nvcc; benchmarks/launch/back_to_back.cu says
# what each part does). Writes $OUT/launch-back-to-back.json (OUT default /tmp/out) and prints a table last.
#   bash benchmarks/launch_back_to_back.sh
set -euo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)/back_to_back
nvcc -O3 -std=c++17 -o "$bin" "$here/launch/back_to_back.cu"
"$bin" > "$OUT/launch-back-to-back.json"
python3 - "$OUT/launch-back-to-back.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{d['gpu']}: a launch of a kernel moving {d['bytes_per_launch']:,} B")
for blk, us in d["back_to_back_us"].items():
    print(f"  back to back, {int(blk):4d}-thread blocks: {us:6.3f} us per launch = {d['bytes_per_launch'] / us / 1e3:5.1f} GB/s")
for k in ("empty", "scale", "two_scale"):
    t = d[f"{k}_event_us"]
    print(f"  as validate times it, {k:9s}: {t['median']:6.3f} us (q10-q90 {t['q10']:.3f}-{t['q90']:.3f})")
print(f"  the second launch adds {d['two_scale_event_us']['median'] - d['scale_event_us']['median']:.3f} us")
PY
