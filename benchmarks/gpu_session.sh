#!/usr/bin/env bash
# One session of gpuperf measurements on an NVIDIA GPU, written to the folder OUT:
#
#   benchmarks/gpu_session.sh OUT [DEVICE]        (DEVICE: cuda:0 by default)
#
# Each step runs under its own time limit (SIGINT at the limit: a campaign keeps every point it
# stored) and logs to OUT/STEP.log; a failed step does not stop the next. The steps:
#   env        the GPU, driver, clocks and Python packages
#   smoke      one catalog kernel measured and checked against NumPy
#   timer      benchmarks/bench_cuda_timer.py: the launch gate against the ungated events
#   tune       benchmarks/bench_tune.py: real tuning runs of three stencil spaces, the online search
#              started from the H100 count model's ranking, from a model trained on the H100's
#              measured variants of other stencils, and from random picks (OUT/tune.csv)
#   linear     benchmarks/bench_linear_model.py: the linear count model calibrated on the GPU and
#              tested on held-out kernels (store OUT/linear_model.sqlite)
#   geometry   gpuperf geometry-sweep: two parallel loops over a (threads, blocks) grid, short loops
#              (trip counts below the SM count) included
#   stencils   benchmarks/stencil_space_campaign.py: a sample of every stencil variant space
#   advise     benchmarks/advise_pairs_campaign.py: the advisor's stencil before/after variants (four
#              stencils x 30 variants) at ADVISE_SIZES (n = m; 1024,2048,4096 by default)
# Seen on an H200 (2026-11-27, data/gpu_session_h200.log): env 10 s, smoke 5 s, tune about 50 s per run
# (one space and seed, three starts of 12 trials at 4096 x 4096), linear 95 s (10 cycles), geometry
# 49 s at trips 64,128,1000,100000 and 5 cycles, stencils about 265 s (192 variants, 10 cycles; it
# resumes from its store when rerun). A 15-minute lease, the machine's start included, holds about
# two thirds of that: run the steps that matter first.
# Limits (seconds) can be set with LIMIT_<STEP>=N; GPU_SESSION_STEPS="env smoke" runs only those
# steps; GPU_SESSION_QUICK=1 shrinks every step (a dry run); TRIPS=a,b,... and GEOMETRY_CYCLES=N
# set the geometry sweep's trip counts and cycles.
set -u
out=${1:?usage: benchmarks/gpu_session.sh OUT [DEVICE]}
device=${2:-cuda:0}
quick=${GPU_SESSION_QUICK:-0}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}

steps=" ${GPU_SESSION_STEPS:-env smoke timer tune linear geometry stencils advise} "

step() {
    local name=$1 limit=$2
    shift 2
    [[ "$steps" == *" $name "* ]] || return 0
    echo "=== $name: start $(date -u +%T), limit ${limit} s"
    local start=$SECONDS
    timeout --signal=INT --kill-after=20 "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "=== $name: exit $rc after $((SECONDS - start)) s"
    tail -n "${TAIL_LINES:-25}" "$out/$name.log"
}

if [ "$quick" = 1 ]; then
    per_space=1; stencil_size=512; trips=64,1000; cycles=2; tune_args="--spaces srad1 --seeds 1 --budget 3"
    advise_sizes=64
else
    per_space=24; stencil_size=4096; trips=${TRIPS:-64,128,1000,100000,10000000}; cycles=10; tune_args="--seeds 1"
    advise_sizes=${ADVISE_SIZES:-1024,2048,4096}
fi

step env "${LIMIT_ENV:-60}" bash -c "nvidia-smi; nvidia-smi -q -d CLOCK | head -40; $py -c 'import numpy, pandas, sklearn, loopy, cupy; print(\"numpy\", numpy.__version__, \"pandas\", pandas.__version__, \"sklearn\", sklearn.__version__, \"cupy\", cupy.__version__)'; $py -m gpuperf devices"
step smoke "${LIMIT_SMOKE:-60}" "$py" -m gpuperf measure vector_copy -p n=16777216 --device "$device" --json
step timer "${LIMIT_TIMER:-90}" "$py" benchmarks/bench_cuda_timer.py --device "$device" --out "$out/cuda_timer.csv" \
    $([ "$quick" = 1 ] && echo "--rounds 1 --launches 20")
step tune "${LIMIT_TUNE:-150}" bash -c "$py -m gpuperf calibrate --table data/linear_model_h100.csv.gz \
    --out $out/h100_count_model.json && $py benchmarks/bench_tune.py --device $device --size $stencil_size \
    --table stencil_spaces_h100.csv.gz --count-model $out/h100_count_model.json --out $out/tune.csv $tune_args"
step linear "${LIMIT_LINEAR:-170}" "$py" benchmarks/bench_linear_model.py --device "$device" --cycles "$cycles" \
    --store "$out/linear_model.sqlite" --no-progress
step geometry "${LIMIT_GEOMETRY:-150}" "$py" -m gpuperf geometry-sweep --device "$device" --trips "$trips" \
    --blocks-step 2 --cycles "${GEOMETRY_CYCLES:-$cycles}" --out "$out/geometry_sweep.csv" --report "$out/geometry_sweep_report" \
    --no-progress
step stencils "${LIMIT_STENCILS:-120}" "$py" benchmarks/stencil_space_campaign.py --device "$device" \
    --per-space "$per_space" --size "$stencil_size" --cycles "$cycles" --store "$out/stencil_spaces.sqlite" \
    --out "$out/stencil_spaces.csv.gz" --campaign "$out/stencil_spaces.campaign.toml"
step advise "${LIMIT_ADVISE:-420}" "$py" benchmarks/advise_pairs_campaign.py --device "$device" \
    --sizes "$advise_sizes" --cycles "$cycles" --store "$out/advise_pairs.sqlite" --out "$out/advise_pairs.csv.gz" \
    --campaign "$out/advise_pairs.campaign.toml"
echo "=== done $(date -u +%T)"
