// Helpers for the thin torch bindings: tensor checks and turning a launch status into an
// exception. Only bindings include this (it needs torch); launchers never do.
#pragma once
#include <torch/extension.h>

#include <string>

#include "annotate_launcher.h"

#define ANNOTATE_CHECK_TENSOR(t, dtype)                                             \
  TORCH_CHECK((t).is_cuda(), #t " must be a CUDA tensor");                          \
  TORCH_CHECK((t).is_contiguous(), #t " must be contiguous");                       \
  TORCH_CHECK((t).scalar_type() == (dtype), #t " has dtype ", (t).scalar_type(),    \
              ", expected ", (dtype))

inline void annotate_raise(int status, const char* what) {
  if (status != 0) {
    throw std::runtime_error(std::string(what) + " failed: " + annotate_error_string(status));
  }
}

// Streams travel from Python as integers (torch.cuda.current_stream().cuda_stream), which
// keeps CUDA's headers out of the binding.
inline void* annotate_stream(int64_t stream) { return reinterpret_cast<void*>(stream); }
