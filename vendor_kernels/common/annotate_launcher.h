// Shared by every launcher under vendor_kernels/ (plain C++ and CUDA, no torch): how a launch
// reports its status, and the element-type dispatch of launchers that instantiate two dtypes.
// A binding (.cpp, compiled against torch) shares nothing with a launcher but the launcher's
// own interface header (plain C++) and the convention here: 0 is success, anything else a
// cudaError_t value (annotate_binding.h names it).
#pragma once

#ifdef __CUDACC__
#include <cuda_runtime.h>

#include "instantiation.h"

// The launch itself can succeed while the kernel launch failed (bad configuration): ask.
static inline int annotate_status(cudaError_t launched) {
  if (launched != cudaSuccess) return static_cast<int>(launched);
  return static_cast<int>(cudaGetLastError());
}

// A type carried as a value, so that a generic lambda can take it.
template <typename T>
struct annotate_type {
  using type = T;
};

#ifdef ANNOTATE_DTYPE_0
// fn(annotate_type<T>{}) for the element type the binding's dtype code names (0 = the spec's
// DTYPE_0, 1 = DTYPE_1 where the spec instantiates one); cudaErrorInvalidValue otherwise.
// Only these types are instantiated.
template <typename Fn>
int annotate_dispatch_dtype(int dtype_code, Fn&& fn) {
  switch (dtype_code) {
    case 0:
      return fn(annotate_type<ANNOTATE_DTYPE_0>{});
#ifdef ANNOTATE_DTYPE_1
    case 1:
      return fn(annotate_type<ANNOTATE_DTYPE_1>{});
#endif
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}
#endif
#endif
