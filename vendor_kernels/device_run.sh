#!/bin/bash
# Build, verify and time every catalog kernel on a GPU machine, writing logs and records to $OUT.
#
#   cd <repo> && ANNOTATE_CACHE_DIR=<cache with the fetched pins> bash vendor_kernels/device_run.sh [KERNEL...]
#
# 1. cold builds of all harnesses in parallel (torch cpp_extension + ninja),
# 2. warm starts (cache hits) timed per kernel, 3. `annotate run` for each kernel (verify + time),
# 4. results.tgz with the JSON records and build stamps.
set -u
export PYTHONUNBUFFERED=1 MAX_JOBS=${MAX_JOBS:-16} COLUMNS=${COLUMNS:-200}
OUT=${OUT:-/tmp/annotate-out}
mkdir -p "$OUT"
# The catalog is the folders holding a spec.yaml (what `annotate run --list` lists).
KERNELS=${*:-$(for spec in vendor_kernels/*/spec.yaml; do basename "$(dirname "$spec")"; done)}
now() { python3 -c 'import time; print(f"{time.time():.2f}")'; }
{
  nvidia-smi
  python3 -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -c 'import yaml, jinja2, rich, filelock, ninja; print("yaml jinja2 rich filelock ninja: ok")'
  nvcc --version | tail -2
  ls /usr/local/cuda/include/cublasLt.h /usr/local/cuda/include/curand_kernel.h 2>&1
  nproc; free -g | head -2
} > "$OUT/env.txt" 2>&1

t0=$(now)
for k in $KERNELS; do
  ( s=$(now); python3 -m annotate run "$k" --build-only > "/tmp/build-$k.txt" 2>&1; rc=$?
    echo "$k: cold build rc=$rc, process wall $(python3 -c "print(round($(now) - $s, 1))") s" >> "/tmp/build-$k.txt" ) &
done
wait
echo "== cold builds, all in parallel: $(python3 -c "print(round($(now) - $t0, 1))") s"
for k in $KERNELS; do cat "/tmp/build-$k.txt"; done
echo "== warm starts (cache hit; process wall includes python + torch import)"
for k in $KERNELS; do
  s=$(now); python3 -m annotate run "$k" --build-only; echo "$k: warm process wall $(python3 -c "print(round($(now) - $s, 2))") s"
done
echo "== runs"
for k in $KERNELS; do
  python3 -m annotate run "$k"; echo "$k: exit $?"
  # after each kernel, so that a run cut off at its time limit still returns what it has
  tar czf "$OUT/results.tgz" -C "$ANNOTATE_CACHE_DIR" results $(cd "$ANNOTATE_CACHE_DIR" && ls builds/*/annotate-build.json builds/*/build.log 2>/dev/null)
done
