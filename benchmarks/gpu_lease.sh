#!/usr/bin/env bash
# The device checks of issue 29 for a session lent one NVIDIA H200 (or H100), in two calls of the device
# tool; results/benchmarks/gpu.md says how to prepare the wheels and what each part costs.
#
#   part1 (at most 8 min)  : the device tests on CuPy, then the benchmark at 1M/4M/20M/100M rows
#   part2 (at most 5 min):   kgen anonymize's path (kgen.run.pipeline, phases) on a 100M-row Parquet file
#                            with --device gpu and 5,000 GA evaluations, the release written and checked
#                            (the CSV write + check, host work, may be cut by the limit: the phases before it
#                            are printed as they end)
# Both fit one task's 15 minutes of device time with the machine's start (about 1.5 min).
#
# Each part writes its figures and logs under $OUT (the device tool brings them back).
set -o pipefail
part=${1:?usage: benchmarks/gpu_lease.sh part1|part2}
out=${OUT:-/tmp/kgen-lease}
mkdir -p "$out"
if compgen -G ".whl/*.whl" >/dev/null; then  # bitarray and deap: kgen's needs that the GPU image lacks
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" PYTHONUNBUFFERED=1
[ -d .gpu-data/data ] && export KGEN_SHARED="$PWD/.gpu-data"  # Adult and Cargo 2000 for the API tests
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python3 -c 'import cupy, numpy; print("cupy", cupy.__version__, "numpy", numpy.__version__)' | tee -a "$out/gpu.txt"
case $part in
part1)
    KGEN_DEVICE_TEST_SCALE=0.25 timeout 80 python3 -m pytest -q -x -p no:cacheprovider -k cupy \
        tests/test_device_evaluator.py 2>&1 \
        | tail -15 | tee "$out/tests.txt"
    timeout 370 python3 -m benchmarks.gpu --device gpu --rows 1000000,4000000,20000000,100000000 --nodes 8 \
        --case-nodes 4 --cpu-nodes 2,2,1,0 --batch 100 --cpu-batch 1000000,4000000 --ga 5000 --ga-cpu 500 \
        --deadline 190 --out "$out/gpu-gpu.md" 2>&1 | tee "$out/bench.log"
    ;;
part2)
    timeout 300 python3 -m benchmarks.gpu_e2e --rows 100000000 --device gpu --evaluations 5000 --phases \
        --dir /tmp/e2e --out "$out/gpu-e2e.md" 2>&1 | tee "$out/e2e.log"
    ;;
*)
    echo "usage: benchmarks/gpu_lease.sh part1|part2" >&2
    exit 2
    ;;
esac
