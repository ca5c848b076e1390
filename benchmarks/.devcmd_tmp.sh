source .devwheels/install.sh >/dev/null 2>&1
export OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
timeout 300 python3 benchmarks/fixed_costs.py > $OUT/fixed_costs.txt 2> $OUT/fixed_costs.err; echo "fixed rc $?"
timeout 240 bash benchmarks/ncu_configs.sh subwave; echo "ncu rc $?"
cat $OUT/fixed_costs.txt
