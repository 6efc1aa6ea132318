#!/bin/bash
# Rewrite the committed compiled view (vendor_kernels/results/sass/ and identity/) from the pins:
# nvcc, nvdisasm and cuobjdump only, no GPU. The profiles (results/profiles/) need a GPU and
# Nsight Compute: see docs/compiled.md.
#
#   cd <repo> && ANNOTATE_CACHE_DIR=<cache with the fetched pins> bash vendor_kernels/compiled_records.sh [KERNEL...]
#
# Per kernel: the SASS record and fact report for sm_90 and sm_80 (`--save` needs the pins
# indexed, which the first run does), then the identity card (sm_90). Builds are cached by key,
# so a second run rewrites the same files in seconds; `git diff --stat vendor_kernels/results`
# shows what changed.
set -eu
ANNOTATE=${ANNOTATE:-python3 -m annotate}
ARCHS=${ARCHS:-90 80}
KERNELS=${*:-$(for spec in vendor_kernels/*/spec.yaml; do basename "$(dirname "$spec")"; done)}
for k in $KERNELS; do
  for a in $ARCHS; do
    $ANNOTATE sass "$k" --arch "$a" --save > /dev/null
  done
  $ANNOTATE sass "$k" --identity --save > /dev/null
done
du -ch vendor_kernels/results/sass vendor_kernels/results/identity vendor_kernels/results/profiles | tail -1
