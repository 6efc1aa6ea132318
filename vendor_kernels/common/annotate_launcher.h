// Shared by every launcher and binding under vendor_kernels/: plain C++ only, so that a
// binding (.cpp, compiled against torch) and a launcher (.cu, compiled against the pinned
// upstream headers) agree on how a launch reports failure without sharing any headers.
#pragma once

// A launch returns 0 on success, otherwise a cudaError_t value; this names it.
const char* annotate_error_string(int status);

#ifdef __CUDACC__
#include <cuda_runtime.h>
// Define once per extension (in exactly one launcher .cu: the one that sets
// ANNOTATE_DEFINE_ERROR_STRING before including this header).
#ifdef ANNOTATE_DEFINE_ERROR_STRING
const char* annotate_error_string(int status) {
  return cudaGetErrorString(static_cast<cudaError_t>(status));
}
#endif
// The launch itself can succeed while the kernel launch failed (bad configuration): ask.
static inline int annotate_status(cudaError_t launched) {
  if (launched != cudaSuccess) return static_cast<int>(launched);
  return static_cast<int>(cudaGetLastError());
}
#endif
