// Helpers for the thin torch bindings: tensor checks, dtype codes, optional buffers, streams,
// and a launch status turned into an exception. Only bindings include this (it needs torch);
// launchers never do.
#pragma once
#include <cuda_runtime_api.h>
#include <torch/extension.h>

#include <string>

#define ANNOTATE_CHECK_TENSOR(t, dtype)                                             \
  TORCH_CHECK((t).is_cuda(), #t " must be a CUDA tensor");                          \
  TORCH_CHECK((t).is_contiguous(), #t " must be contiguous");                       \
  TORCH_CHECK((t).scalar_type() == (dtype), #t " has dtype ", (t).scalar_type(),    \
              ", expected ", (dtype))

// A launcher returns 0 or a cudaError_t value (annotate_launcher.h).
inline void annotate_raise(int status, const char* what) {
  if (status != 0) {
    throw std::runtime_error(std::string(what) + " failed: " +
                             cudaGetErrorString(static_cast<cudaError_t>(status)));
  }
}

// The dtype code annotate_dispatch_dtype (annotate_launcher.h) takes: fp16 0, bf16 1.
inline int annotate_dtype_code(const torch::Tensor& t, const char* kernel) {
  if (t.scalar_type() == torch::kHalf) return 0;
  if (t.scalar_type() == torch::kBFloat16) return 1;
  TORCH_CHECK(false, kernel, ": unsupported dtype ", t.scalar_type());
}

// An optional scratch buffer: an empty tensor means none (upstream takes nullptr for that).
inline void* annotate_optional_ptr(const torch::Tensor& t) {
  return t.numel() ? t.data_ptr() : nullptr;
}

// Streams travel from Python as integers (torch.cuda.current_stream().cuda_stream), which
// keeps CUDA's stream type out of the launchers' interfaces.
inline void* annotate_stream(int64_t stream) { return reinterpret_cast<void*>(stream); }
