// Single-request prefill through FlashInfer's own JIT module (fa2 backend), with raw pointers.
// single_prefill_kernel_mask_{0,1}.cu and single_prefill_config.inc are rendered from the pinned
// csrc/single_prefill_*.jinja with the values FlashInfer's JIT uses (spec.yaml `generate:`), so
// the kernels are instantiated with the `Params` struct FlashInfer's Python path uses. This file
// does what csrc/single_prefill.cu does for tvm-ffi: fill that struct and call upstream's
// SinglePrefillWithKVCacheDispatched, which chooses CTA_TILE_Q from the packed query length and
// NUM_MMA_KV from the shared-memory budget, and splits KV (then merges) when the grid would be
// too small. Upstream's module also instantiates mask modes 2 (custom) and 3 (multi-item
// scoring); the harness launches only 0 and 1 and compiles only those. The instantiations are
// those files': `extern template` keeps this one from compiling them again.
#include <flashinfer/attention/mask.cuh>
#include <flashinfer/pos_enc.cuh>

#include "annotate_launcher.h"
#include "flashinfer/fastdiv.cuh"
#include "launcher.h"
#include "single_prefill_config.inc"
#include <flashinfer/attention/prefill.cuh>

// What the config's DISPATCH_context names for mask modes 0 and 1 (the spec's variant_name
// with use_custom_mask = false).
using AttentionVariant = DefaultAttention<false, false, false, false>;

#define ANNOTATE_PREFILL_INSTANCE(MASK)                                                        \
  extern template cudaError_t flashinfer::SinglePrefillWithKVCacheDispatched<                \
      HEAD_DIM_QK, HEAD_DIM_VO, POS_ENCODING_MODE, USE_FP16_QK_REDUCTION, MASK, AttentionVariant, \
      Params>(Params params, DTypeO * tmp, cudaStream_t stream);
ANNOTATE_PREFILL_INSTANCE(MaskMode::kNone)
ANNOTATE_PREFILL_INSTANCE(MaskMode::kCausal)

namespace {
template <MaskMode MASK_MODE>
int run(void* q, void* k, void* v, void* o, float* lse, void* tmp, uint32_t qo_len,
        uint32_t kv_len, uint32_t num_qo_heads, uint32_t num_kv_heads, double sm_scale,
        void* stream) {
  Params params;
  params.q = static_cast<DTypeQ*>(q);
  params.k = static_cast<DTypeKV*>(k);
  params.v = static_cast<DTypeKV*>(v);
  params.o = static_cast<DTypeO*>(o);
  params.lse = lse;
  params.num_qo_heads = num_qo_heads;
  params.num_kv_heads = num_kv_heads;
  params.group_size = uint_fastdiv(num_qo_heads / num_kv_heads);
  params.qo_len = qo_len;
  params.kv_len = kv_len;
  // NHD: q [qo_len, Hq, D], k/v [kv_len, Hkv, D]
  params.q_stride_n = num_qo_heads * HEAD_DIM_QK;
  params.q_stride_h = HEAD_DIM_QK;
  params.k_stride_n = num_kv_heads * HEAD_DIM_QK;
  params.k_stride_h = HEAD_DIM_QK;
  params.v_stride_n = num_kv_heads * HEAD_DIM_VO;
  params.v_stride_h = HEAD_DIM_VO;
  params.head_dim = HEAD_DIM_QK;
  params.window_left = -1;
  params.partition_kv = false;
  // FlashInfer's Python defaults: no mask, ALiBi, soft cap or KV scale factors; rope 1 / 1e4
  params.maybe_custom_mask = nullptr;
  params.maybe_alibi_slopes = nullptr;
  params.maybe_k_cache_sf = nullptr;
  params.maybe_v_cache_sf = nullptr;
  params.logits_soft_cap = 0.0;
  params.sm_scale = sm_scale;
  params.rope_rcp_scale = 1.0;
  params.rope_rcp_theta = 1e-4;
  return annotate_status(
      flashinfer::SinglePrefillWithKVCacheDispatched<HEAD_DIM_QK, HEAD_DIM_VO, POS_ENCODING_MODE,
                                                     USE_FP16_QK_REDUCTION, MASK_MODE,
                                                     AttentionVariant>(
          params, static_cast<DTypeO*>(tmp), static_cast<cudaStream_t>(stream)));
}
}  // namespace

int single_prefill_causal(void* q, void* k, void* v, void* o, float* lse, void* tmp,
                          uint32_t qo_len, uint32_t kv_len, uint32_t num_qo_heads,
                          uint32_t num_kv_heads, double sm_scale, void* stream) {
  return run<MaskMode::kCausal>(q, k, v, o, lse, tmp, qo_len, kv_len, num_qo_heads, num_kv_heads,
                                sm_scale, stream);
}

int single_prefill_noncausal(void* q, void* k, void* v, void* o, float* lse, void* tmp,
                             uint32_t qo_len, uint32_t kv_len, uint32_t num_qo_heads,
                             uint32_t num_kv_heads, double sm_scale, void* stream) {
  return run<MaskMode::kNone>(q, k, v, o, lse, tmp, qo_len, kv_len, num_qo_heads, num_kv_heads,
                              sm_scale, stream);
}
