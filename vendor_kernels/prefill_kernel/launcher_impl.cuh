// Shared by prefill_causal.cu and prefill_noncausal.cu: one mask mode per translation unit,
// so ninja compiles the two instantiations in parallel.
//
// Calls the upstream SinglePrefillWithKVCacheDispatched, which chooses CTA_TILE_Q from the
// packed query length and NUM_MMA_KV from the shared-memory budget, builds KernelTraits and
// launches SinglePrefillWithKVCacheKernel (and MergeStates when it splits KV).
#pragma once
#include <flashinfer/attention/default_prefill_params.cuh>
#include <flashinfer/attention/mask.cuh>
#include <flashinfer/attention/prefill.cuh>
#include <flashinfer/attention/variants.cuh>

#include "annotate_launcher.h"
#include "instantiation.h"
#include "launcher.h"

namespace annotate_prefill {
using namespace flashinfer;
using DType = ANNOTATE_DTYPE;
constexpr uint32_t kHeadDim = ANNOTATE_HEAD_DIM;
using Variant = DefaultAttention</*custom_mask=*/false, /*sliding_window=*/false,
                                 /*logits_soft_cap=*/false, /*alibi=*/false>;

template <MaskMode MASK_MODE>
int run(void* q, void* k, void* v, void* o, float* lse, void* tmp, uint32_t qo_len,
        uint32_t kv_len, uint32_t num_qo_heads, uint32_t num_kv_heads, float sm_scale,
        void* stream) {
  SinglePrefillParams<DType, DType, DType> params(
      static_cast<DType*>(q), static_cast<DType*>(k), static_cast<DType*>(v),
      /*maybe_custom_mask=*/nullptr, static_cast<DType*>(o), lse, /*maybe_alibi_slopes=*/nullptr,
      num_qo_heads, num_kv_heads, qo_len, kv_len, /*q_stride_n=*/num_qo_heads * kHeadDim,
      /*q_stride_h=*/kHeadDim, /*kv_stride_n=*/num_kv_heads * kHeadDim, /*kv_stride_h=*/kHeadDim,
      kHeadDim, /*window_left=*/-1, /*logits_soft_cap=*/0.f, sm_scale, /*rope_scale=*/1.f,
      /*rope_theta=*/1e4f);
  return annotate_status(
      SinglePrefillWithKVCacheDispatched<kHeadDim, kHeadDim, PosEncodingMode::kNone,
                                         /*USE_FP16_QK_REDUCTION=*/false, MASK_MODE, Variant>(
          params, static_cast<DType*>(tmp), static_cast<cudaStream_t>(stream)));
}
}  // namespace annotate_prefill
