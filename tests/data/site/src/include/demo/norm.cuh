// A tiny CUDA file for the site builder's tests (written for this project, not upstream code).
#pragma once
#include <cuda_runtime.h>

namespace demo {
namespace math {
__device__ __forceinline__ float shfl_xor_sync(float x, int lane_mask) {
  return __shfl_xor_sync(0xffffffff, x, lane_mask);
}
}  // namespace math

template <typename T>
__global__ void RMSNormKernel(const T* input, T* output, float eps, int d) {
  __shared__ float smem[32];
  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    float x = float(input[i]);
    sum_sq += x * x;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum_sq += math::shfl_xor_sync(sum_sq, offset);
  }
  if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = sum_sq;
  __syncthreads();
  const float rms = rsqrtf(smem[0] / d + eps);
  for (int i = threadIdx.x; i < d; i += blockDim.x) {
    output[i] = T(float(input[i]) * rms);  // "scale" <b>not markup</b> & more
  }
}

template <typename T>
cudaError_t RMSNorm(const T* input, T* output, int rows, int d, float eps, cudaStream_t stream) {
  RMSNormKernel<T><<<rows, 256, 0, stream>>>(input, output, eps, d);
  return cudaGetLastError();
}
}  // namespace demo
