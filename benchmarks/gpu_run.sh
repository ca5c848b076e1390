#!/usr/bin/env bash
# One GPU run of the recorded kind, parameterised. Run from the repository root on a machine with a CUDA
# GPU and pycuda; results land under results/ (never overwritten), logs and a tarball of the new folders
# under $OUT (default /tmp/out). Prints a short table last.
#   bash benchmarks/gpu_run.sh validate SEED            # perfmodel validate --seed SEED (own calibration)
#   bash benchmarks/gpu_run.sh quick                    # perfmodel validate --quick (the ladder at 2048)
#   bash benchmarks/gpu_run.sh variants SEED            # perfmodel validate --variants --seed SEED (design choices)
#   bash benchmarks/gpu_run.sh tune SEED [DEVICE]       # sweep --measure 10 --sample 100 --seed SEED, ranked
#                                                       # with results/reference-calibration-DEVICE.toml
#   bash benchmarks/gpu_run.sh overlap [DEVICE] [SIZE] [CALIBRATION]  # sweep --measure-overlap at SIZE (default
#                                                       # 4096), ranked with CALIBRATION (default
#                                                       # results/reference-calibration-DEVICE.toml)
#   bash benchmarks/gpu_run.sh calibrate                # perfmodel calibrate into results/
#   bash benchmarks/gpu_run.sh gpu-tests [PATTERN]      # the GPU test suite (pytest -m gpu; -k PATTERN where given)
#   bash benchmarks/gpu_run.sh split-k                  # benchmarks/split_k_costs.py (second launch, reduction)
#   bash benchmarks/gpu_run.sh bench CLASS [SECONDS]    # perfmodel bench --shapes CLASS|all, stopped (SIGINT) after
#                                                       # SECONDS (default 520); resume with `resume`
#   bash benchmarks/gpu_run.sh shapes CLASS [SECONDS] [SEED]  # perfmodel validate --shapes CLASS|all [--seed SEED],
#                                                       # stopped (SIGINT) after SECONDS (default 520); every
#                                                       # finished point is kept
#   bash benchmarks/gpu_run.sh resume RUN [SECONDS]     # perfmodel validate --resume RUN, the same way
#   bash benchmarks/gpu_run.sh tune-shapes CLASS K [SECONDS] [SAMPLE]  # perfmodel sweep --measure K --shapes CLASS
#                                                       # [--sample SAMPLE] (the detected device; sweep's default sample
#                                                       # is 20 random configurations a shape), stopped the same way;
#                                                       # resume with `resume`
#   bash benchmarks/gpu_run.sh fleet CLASS              # validate --shapes CLASS on one GPU (A), then A's plan measured
#                                                       # again by one worker process (--gpus 0) and on the plain path
#   bash benchmarks/gpu_run.sh gpus CLASS LIST [SAMPLE] # validate --shapes CLASS --gpus LIST [--sample SAMPLE] with an empty
#                                                       # build cache (every kernel built in the run), its wall time and
#                                                       # nvidia-smi's list of the GPUs in the log
#   bash benchmarks/gpu_run.sh interrupt CLASS LIST     # benchmarks/fleet_interrupt.py: a --gpus LIST shape run, a worker
#                                                       # killed at a quarter, the run at half, then --resume
#   bash benchmarks/gpu_run.sh fleet-repeat RUN N       # RUN's plan measured again N times more, alternately by one worker
#                                                       # process (RUN-gpus0-rI) and on the plain path (RUN-again-rI)
#   bash benchmarks/gpu_run.sh twins CLASS [SECONDS]     # benchmarks/ragged_twins.py --shapes CLASS: the ragged choice
#                                                       # measured in pairs, stopped (SIGINT) after SECONDS (default 520);
#                                                       # resume with `resume`
#   bash benchmarks/gpu_run.sh alignment                # benchmarks/row_alignment.py (K = 1024, 1020, 1023; edge and inner)
#   bash benchmarks/gpu_run.sh tail-waves               # benchmarks/block_dispatch.py, then benchmarks/tail_waves.py (grids of 0.5-3 waves)
#   bash benchmarks/gpu_run.sh ktile-depth [ARGS]       # benchmarks/ktile_depth.py (K = 64 to 4096 at M = N = 1024, 4096;
#                                                       # ARGS: its --config / --mn / --ks / --tag)
#   bash benchmarks/gpu_run.sh sweep KERNEL M N K MEASURE SAMPLE CALIBRATION  # perfmodel sweep --kernel KERNEL at one
#                                                       # size on the detected device, --measure MEASURE --sample SAMPLE,
#                                                       # ranked with CALIBRATION (a file; "-": the device's figures)
#   bash benchmarks/gpu_run.sh choose M N K CALIBRATION # perfmodel choose --measure at one size on the detected device
#                                                       # (the model's pick timed beside cuBLAS), ranked with CALIBRATION
#                                                       # (a file; "-": the device's figures)
#   bash benchmarks/gpu_run.sh space KERNEL SHAPES [SECONDS] [RUN]  # benchmarks/kernel_tuner_space.py (a kernel's whole
#                                                       # search space on corpus shapes, Kernel Tuner cache files)
#   bash benchmarks/gpu_run.sh memory-checks            # the memory figures measured on one Hopper chip, for the other:
#                                                       # dram_stream.py --flush dirty and clean (with --writeback: the
#                                                       # device file's flush_writeback_us_by_MiB), reduce_after_write.py
#                                                       # --marginal (--fit: the reduction floors) and dram_walk.py lone
#   bash benchmarks/gpu_run.sh dram-inflight            # perfmodel calibrate (the day's DRAM pointer chase), then
#                                                       # load_inflight.py --levels dram at strides of 37, 128 and 1 lines,
#                                                       # then --dram-ratio of the three against that calibration
set -uo pipefail
export PYTHONUNBUFFERED=1 PERFMODEL_CACHE=${PERFMODEL_CACHE:-/tmp/perfmodel-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ $# -lt 1 ]; then echo "usage: gpu_run.sh RUN [ARGS] with RUN one of validate, variants, quick, tune, overlap, calibrate, shapes, resume, tune-shapes, gpu-tests, split-k, bench, fleet, gpus, interrupt, fleet-repeat, alignment, tail-waves, ktile-depth, twins, space, sweep, choose, memory-checks, dram-inflight (their ARGS: the comments at the top of benchmarks/gpu_run.sh)" >&2; exit 2; fi
what=$1
# the project must import before anything runs on the GPU: name what is missing and stop (exit 2)
if ! missing=$(python3 -c "import perfmodel.cli" 2>&1); then
  echo "error: perfmodel does not import here ($(echo "$missing" | tail -1)); install the project's dependencies first" >&2
  exit 2
fi
# the shipped device file of the local GPU
local_device() {
  python3 -c "from perfmodel.measure.detect import match_shipped; from perfmodel.measure.gpu import Gpu; g = Gpu(); print(match_shipped(g.name, g.cc))"
}
# "--calibration FILE", or nothing where FILE is "-" (the device's figures)
calibration_flag() { if [ "$1" != "-" ]; then echo "--calibration $1"; fi; }
before=$(ls -d results/*/ 2>/dev/null | sort)
case "$what" in
  validate)
    seed=${2:?"validate needs a SEED"}
    python3 -m perfmodel validate --seed "$seed" > "$OUT/validate-seed$seed.log" 2>&1; echo "validate rc $?"
    tail -1 "$OUT/validate-seed$seed.log" ;;
  variants)
    seed=${2:?"variants needs a SEED"}
    python3 -m perfmodel validate --variants --seed "$seed" > "$OUT/validate-variants-seed$seed.log" 2>&1; echo "validate --variants rc $?"
    grep -A 40 "^kernel " "$OUT/validate-variants-seed$seed.log" | tail -32 ;;
  quick)
    python3 -m perfmodel validate --quick > "$OUT/validate-quick.log" 2>&1; echo "validate --quick rc $?"
    tail -14 "$OUT/validate-quick.log" ;;
  tune)
    seed=${2:?"tune needs a SEED"}; dev=${3:-h100-sxm}
    python3 -m perfmodel sweep --device "$dev" --size 4096 --measure 10 --sample 100 --seed "$seed" \
        --calibration "results/reference-calibration-$dev.toml" > "$OUT/tune-seed$seed.log" 2>&1; echo "sweep rc $?"
    grep -v compiled "$OUT/tune-seed$seed.log" | grep "(top\|best" ;;
  overlap)
    dev=${2:-h100-sxm}; size=${3:-4096}; cal=${4:-results/reference-calibration-$dev.toml}
    python3 -m perfmodel sweep --device "$dev" --size "$size" --measure-overlap \
        --calibration "$cal" > "$OUT/overlap-$size.log" 2>&1; echo "sweep rc $?"
    grep "measuring\|best" "$OUT/overlap-$size.log" ;;
  calibrate)
    python3 -m perfmodel calibrate > "$OUT/calibrate.log" 2>&1; echo "calibrate rc $?"
    tail -12 "$OUT/calibrate.log"
    new_cal=$(ls -t results/calibration-*.toml 2>/dev/null | head -1)
    [ -n "$new_cal" ] && cp "$new_cal" "$OUT/" ;;
  shapes)
    cls=${2:?"shapes needs a CLASS (or all)"}; secs=${3:-520}
    timeout -s INT "$secs" python3 -m perfmodel validate --shapes "$cls" ${4:+--seed "$4"} > "$OUT/shapes-$cls.log" 2>&1; echo "validate --shapes rc $?"
    grep -E "planned|points|still to measure|results in" "$OUT/shapes-$cls.log" | tail -4 ;;
  resume)
    run=${2:?"resume needs a RUN folder"}; secs=${3:-520}
    timeout -s INT "$secs" python3 -m perfmodel validate --resume "$run" > "$OUT/resume-$(basename "$run").log" 2>&1; echo "validate --resume rc $?"
    grep -E "planned|points|still to measure|results in" "$OUT/resume-$(basename "$run").log" | tail -4
    tar czf "$OUT/results-resume-$(basename "$run").tar.gz" "$run" ;;
  tune-shapes)
    cls=${2:?"tune-shapes needs a CLASS (or all)"}; k=${3:?"tune-shapes needs K"}; secs=${4:-520}; sample=${5:-}
    dev=$(local_device)
    timeout -s INT "$secs" python3 -m perfmodel sweep --device "$dev" --measure "$k" --shapes "$cls" ${sample:+--sample "$sample"} > "$OUT/tune-shapes-$cls.log" 2>&1; echo "sweep --shapes rc $?"
    grep -E "planned|points|still to measure|results in" "$OUT/tune-shapes-$cls.log" | tail -4 ;;
  gpu-tests)
    timeout 500 python3 -m pytest -q -m gpu -p no:warnings tests/test_gpu.py ${2:+-k "$2"} > "$OUT/pytest-gpu.log" 2>&1; echo "gpu tests rc $?"
    tail -3 "$OUT/pytest-gpu.log" ;;
  split-k)
    python3 benchmarks/split_k_costs.py > "$OUT/split-k-costs.log" 2>&1; echo "split_k_costs rc $?"
    tail -14 "$OUT/split-k-costs.log" ;;
  bench)
    cls=${2:?"bench needs a CLASS (or all)"}; secs=${3:-520}
    timeout -s INT "$secs" python3 -m perfmodel bench --shapes "$cls" > "$OUT/bench-$cls.log" 2>&1; echo "bench rc $?"
    grep -E "planned|points|still to measure|results in|^bench:|no Triton" "$OUT/bench-$cls.log" | tail -5 ;;
  fleet)
    cls=${2:?"fleet needs a CLASS"}
    python3 -m perfmodel validate --shapes "$cls" > "$OUT/fleet-plain.log" 2>&1; echo "validate --shapes rc $?"
    a=$(ls -d results/*-shapes-"${cls//_/-}" | sort | tail -1)
    for b in "$a-gpus0" "$a-again"; do mkdir "$b"; cp "$a/plan.json" "$a/calibration.toml" "$b/"; done
    tar czf "$OUT/results-fleet-a.tar.gz" "$a"
    python3 -m perfmodel validate --resume "$a-gpus0" --gpus 0 > "$OUT/fleet-gpus0.log" 2>&1; echo "validate --resume --gpus 0 rc $?"
    tar czf "$OUT/results-fleet-b.tar.gz" "$a-gpus0"
    python3 -m perfmodel validate --resume "$a-again" > "$OUT/fleet-again.log" 2>&1; echo "validate --resume (plain) rc $?"
    grep -h "^measured" "$OUT"/fleet-*.log ;;
  gpus)
    cls=${2:?"gpus needs a CLASS"}; list=${3:?"gpus needs a LIST of GPUs"}; sample=${4:-}; tag=gpus${list//,/-}
    export PERFMODEL_CACHE=/tmp/perfmodel-cache-$tag-$(date +%s)
    nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,clocks.max.sm,clocks.applications.graphics --format=csv > "$OUT/$tag.log"
    t0=$(date +%s.%N)
    python3 -m perfmodel validate --shapes "$cls" ${sample:+--sample "$sample"} --gpus "$list" >> "$OUT/$tag.log" 2>&1; rc=$?
    t1=$(date +%s.%N)
    echo "validate --shapes $cls ${sample:+--sample $sample }--gpus $list: rc $rc, wall $(python3 -c "print(f'{$t1 - $t0:.1f}')") s" | tee -a "$OUT/$tag.log"
    tr '\r' '\n' < "$OUT/$tag.log" | grep -E "^calibrating|planned [0-9]+/|compiled [0-9]+/|^measured|results in" | grep -vE "planned [0-9]+/[0-9]+ shapes \(" | tail -3
    tr '\r' '\n' < "$OUT/$tag.log" | grep -E "planned [0-9]+/[0-9]+ shapes \(" | tail -1 ;;
  interrupt)
    cls=${2:?"interrupt needs a CLASS"}; list=${3:?"interrupt needs a LIST of GPUs"}
    OUT="$OUT" python3 benchmarks/fleet_interrupt.py --shapes "$cls" --gpus "$list" > "$OUT/interrupt.log" 2>&1; echo "fleet_interrupt rc $?"
    tail -1 "$OUT/interrupt.log" ;;
  fleet-repeat)
    a=${2:?"fleet-repeat needs a RUN"}; n=${3:?"fleet-repeat needs N"}
    for i in $(seq 2 $((n + 1))); do
      for b in "$a-gpus0-r$i" "$a-again-r$i"; do mkdir "$b"; cp "$a/plan.json" "$a/calibration.toml" "$b/"; done
      python3 -m perfmodel validate --resume "$a-gpus0-r$i" --gpus 0 > "$OUT/fleet-gpus0-r$i.log" 2>&1; echo "gpus0 r$i rc $?"
      python3 -m perfmodel validate --resume "$a-again-r$i" > "$OUT/fleet-again-r$i.log" 2>&1; echo "plain r$i rc $?"
      tar czf "$OUT/results-fleet-r$i.tar.gz" "$a-gpus0-r$i" "$a-again-r$i"
    done
    grep -H "^measured" "$OUT"/fleet-*.log ;;
  alignment)
    python3 benchmarks/row_alignment.py > "$OUT/alignment.log" 2>&1; echo "row_alignment rc $?"
    grep -A 40 "^results in" "$OUT/alignment.log" ;;
  tail-waves)
    python3 benchmarks/block_dispatch.py "$OUT/block-dispatch.json" > "$OUT/block-dispatch.log" 2>&1; echo "block_dispatch rc $?"
    python3 benchmarks/tail_waves.py > "$OUT/tail-waves.log" 2>&1; echo "tail_waves rc $?"
    grep -A 12 "^results in" "$OUT/tail-waves.log" ;;
  ktile-depth)
    python3 benchmarks/ktile_depth.py "${@:2}" > "$OUT/ktile-depth.log" 2>&1; echo "ktile_depth rc $?"
    grep -A 40 "^results in" "$OUT/ktile-depth.log" ;;
  twins)
    cls=${2:?"twins needs a CLASS (or all)"}; secs=${3:-520}
    timeout -s INT "$secs" python3 benchmarks/ragged_twins.py --shapes "$cls" > "$OUT/twins-$cls.log" 2>&1; echo "ragged_twins rc $?"
    grep -E "planned|points|still to measure|results in|FAILED" "$OUT/twins-$cls.log" | tail -8 ;;
  space)
    kern=${2:?"space needs a KERNEL"}; shapes=${3:?"space needs SHAPES"}; secs=${4:-420}
    python3 benchmarks/kernel_tuner_space.py --kernel "$kern" --shapes "$shapes" --seconds "$secs" ${5:+--out "$5"} > "$OUT/space-$kern.log" 2>&1
    echo "kernel_tuner_space rc $?"; grep -E "best|configurations|^shape|^[a-z].* [0-9]+ " "$OUT/space-$kern.log" | tail -8
    run=${5:-$(ls -d results/*-space-* | sort | tail -1)}; tar czf "$OUT/results-space-$(date +%H%M%S).tar.gz" "$run" ;;
  sweep)
    kern=${2:?"sweep needs KERNEL M N K MEASURE SAMPLE CALIBRATION"}; m=$3; n=$4; k=$5; top=$6; sample=$7; cal=$8
    dev=$(local_device)
    python3 -m perfmodel sweep --device "$dev" --kernel "$kern" -M "$m" -N "$n" -K "$k" --measure "$top" --sample "$sample" \
        $(calibration_flag "$cal") > "$OUT/sweep-$kern-${m}x${n}x${k}.log" 2>&1; echo "sweep rc $?"
    grep -v compiled "$OUT/sweep-$kern-${m}x${n}x${k}.log" | grep "(top\|best" ;;
  choose)
    m=${2:?"choose needs M N K CALIBRATION"}; n=$3; k=$4; cal=$5
    dev=$(local_device)
    python3 -m perfmodel choose --device "$dev" -M "$m" -N "$n" -K "$k" --measure \
        $(calibration_flag "$cal") > "$OUT/choose-${m}x${n}x${k}.log" 2>&1; echo "choose rc $?"
    grep -v compiled "$OUT/choose-${m}x${n}x${k}.log" | grep -E "^pick|measured|cuBLAS|results in" ;;
  memory-checks)
    for how in dirty clean; do
      python3 benchmarks/dram_stream.py "$OUT/dram-stream-$how.json" --flush "$how" > "$OUT/dram-stream-$how.log" 2>&1
      echo "dram_stream --flush $how rc $?"
    done
    python3 benchmarks/reduce_after_write.py --slices 2,4,8,16,32,64 --marginal > "$OUT/reduce-after-write.log" 2>&1
    echo "reduce_after_write --marginal rc $?"
    python3 benchmarks/dram_walk.py lone > "$OUT/dram-walk-lone.log" 2>&1; echo "dram_walk lone rc $?"
    python3 benchmarks/dram_stream.py --writeback "$OUT/dram-stream-dirty.json" "$OUT/dram-stream-clean.json" | tail -1
    PYTHONPATH=. python3 benchmarks/reduce_after_write.py --fit "$OUT"/reduce_after_write*.json | grep -m 1 -A 7 reduction_floor
    tail -4 "$OUT/dram-walk-lone.log" ;;
  dram-inflight)
    python3 -m perfmodel calibrate --out "$OUT/calibration.toml" > "$OUT/calibrate.log" 2>&1; echo "calibrate rc $?"
    for s in 37 128 1; do
      python3 benchmarks/load_inflight.py "$OUT/load-inflight-dram-stride$s.json" --levels dram --dram-stride "$s" \
        > "$OUT/load-inflight-dram-stride$s.log" 2>&1; echo "load_inflight --levels dram --dram-stride $s rc $?"
    done
    python3 -c "import sys, tomllib; print('pointer chase', tomllib.load(open(sys.argv[1], 'rb'))['measured']['dram_latency_cycles'])" "$OUT/calibration.toml"
    python3 benchmarks/load_inflight.py --dram-ratio "$OUT/calibration.toml" "$OUT"/load-inflight-dram-stride*.json ;;
  *) echo "unknown run '$what'" >&2; exit 2 ;;
esac
new=$(comm -13 <(echo "$before") <(ls -d results/*/ 2>/dev/null | sort))
if [ -n "$new" ]; then tar czf "$OUT/results-$what-$(date +%H%M%S).tar.gz" $new && echo "new results: $new"; fi
