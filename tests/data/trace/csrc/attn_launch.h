#pragma once
#include "dispatch.h"

namespace demo {

template <typename T>
__device__ void compute_attn_1rowblock(const Params &params, int m_block) {
  float acc = 0.f;
  for (int i = 0; i < params.d; ++i) {
    acc += params.q[i] * params.k[i];
  }
  params.o[m_block] = acc;
}

template <typename T>
__device__ void compute_attn(const Params &params) {
  const int m_block = blockIdx.x;
  compute_attn_1rowblock<T>(params, m_block);
}

template <typename T, int kBlockN, bool Is_causal>
__global__ void attn_fwd_kernel(const Params params) {
  compute_attn<T>(params);
}

template <typename T, int kBlockN, bool Is_causal>
void run_attn_kernel(Params &params) {
  BOOL_SWITCH(params.is_even, IsEven, [&] {
    auto kernel = &attn_fwd_kernel<T, kBlockN, Is_causal>;
    kernel<<<params.b, 128>>>(params);
  });
}

template <typename T, bool Is_causal>
void run_attn_hdim128(Params &params) {
  if constexpr (!Is_causal) {
    run_attn_kernel<T, 64, Is_causal>(params);
  } else {
    run_attn_kernel<T, 128, Is_causal>(params);
  }
}

template <typename T, int kHeadDim, bool Is_causal>
void run_attn_(Params &params);

}  // namespace demo
