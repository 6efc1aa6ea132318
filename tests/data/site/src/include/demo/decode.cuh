// A second tiny file: calls across files, an unresolved call, a kernel launch.
#pragma once
#include "norm.cuh"

namespace demo {

__device__ float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) {
    x += math::shfl_xor_sync(x, offset);
  }
  return x;
}

__global__ void DecodeKernel(const float* q, const float* k, float* out, int n) {
  float acc = 0.f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    acc += q[i] * k[i];
  }
  acc = warp_sum(acc);
  if (threadIdx.x == 0) out[blockIdx.x] = acc;
  undefined_helper(out);
}

cudaError_t Decode(const float* q, const float* k, float* out, int n, cudaStream_t stream) {
  DecodeKernel<<<1, 32, 0, stream>>>(q, k, out, n);
  return RMSNorm<float>(out, out, 1, n, 1e-6f, stream);
}
}  // namespace demo

// A type and a macro, for the notes on types and macros.
#define DEMO_SWITCH(COND, NAME, ...) \
  if (COND) {                        \
    constexpr bool NAME = true;      \
    __VA_ARGS__();                   \
  } else {                           \
    constexpr bool NAME = false;     \
    __VA_ARGS__();                   \
  }

namespace demo {
struct DecodeParams {
  const float* q;
  float* out;
  int n, stride;
};

__global__ void ParamsKernel(DecodeParams p) {
  DEMO_SWITCH(p.stride == 1, kDense, [&] {
    int i = threadIdx.x * (kDense ? 1 : p.stride);
    if (i < p.n) p.out[i] = p.q[i] * 2.f;
  });
}
}  // namespace demo
