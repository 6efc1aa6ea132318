#pragma once

namespace demo {

template <typename T>
__global__ void NormKernel(T* x, T* w, T* out, int d) {
  int i = threadIdx.x;
  out[i] = x[i] * w[i];
}

template <typename T>
cudaError_t Norm(T* x, T* w, T* out, int d) {
  NormKernel<T><<<1, d>>>(x, w, out, d);
  return cudaSuccess;
}

}  // namespace demo
