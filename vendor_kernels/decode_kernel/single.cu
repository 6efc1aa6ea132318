// The single-request decode through FlashInfer's own JIT module, with raw pointers.
// single_decode_kernel.cu and single_decode_config.inc are rendered from the pinned
// csrc/single_decode_*.jinja with the values FlashInfer's JIT uses (spec.yaml `generate:`), so
// the kernels are instantiated with the `Params` struct FlashInfer's Python path instantiates
// them with. This file does what csrc/single_decode.cu does for tvm-ffi: fill that struct and
// call upstream's SingleDecodeWithKVCacheDispatched (it picks the block shape, and splits KV
// across blocks, then merges with MergeStates, when it is given `tmp`). The instantiation is
// single_decode_kernel.cu's: `extern template` keeps this file from compiling it again.
#include <flashinfer/pos_enc.cuh>

#include "annotate_launcher.h"
#include "launcher.h"
#include "single_decode_config.inc"
#include <flashinfer/attention/decode.cuh>

extern template cudaError_t flashinfer::SingleDecodeWithKVCacheDispatched<
    HEAD_DIM_QK, POS_ENCODING_MODE, DefaultAttention<false, false, false, false>, Params>(
    Params params, DTypeO* tmp, cudaStream_t stream);

int single_decode(void* q, void* k, void* v, void* o, void* tmp, uint32_t kv_len,
                  uint32_t num_qo_heads, uint32_t num_kv_heads, double sm_scale, void* stream) {
  int status = 0;
  DISPATCH_context(
      DTypeQ, DTypeKV, DTypeO, IdType, HEAD_DIM_QK, HEAD_DIM_VO, POS_ENCODING_MODE,
      USE_SLIDING_WINDOW, USE_LOGITS_SOFT_CAP, AttentionVariant, Params, [&] {
        Params params;
        params.q = static_cast<DTypeQ*>(q);
        params.k = static_cast<DTypeKV*>(k);
        params.v = static_cast<DTypeKV*>(v);
        params.o = static_cast<DTypeO*>(o);
        params.lse = nullptr;
        params.kv_len = kv_len;
        params.num_qo_heads = num_qo_heads;
        params.num_kv_heads = num_kv_heads;
        // NHD: q [Hq, D], k/v [kv_len, Hkv, D]
        params.q_stride_n = num_qo_heads * HEAD_DIM_QK;
        params.q_stride_h = HEAD_DIM_QK;
        params.kv_stride_n = num_kv_heads * HEAD_DIM_VO;
        params.kv_stride_h = HEAD_DIM_VO;
        params.window_left = -1;
        params.kv_chunk_size = 0;
        // FlashInfer's Python defaults: no ALiBi, no soft cap, rope_scale 1, rope_theta 1e4
        params.maybe_alibi_slopes = nullptr;
        params.logits_soft_cap = 0.0;
        params.sm_scale = sm_scale;
        params.rope_rcp_scale = 1.0;
        params.rope_rcp_theta = 1e-4;
        status = annotate_status(
            flashinfer::SingleDecodeWithKVCacheDispatched<HEAD_DIM_QK, POS_ENCODING_MODE,
                                                          AttentionVariant>(
                params, static_cast<DTypeO*>(tmp), static_cast<cudaStream_t>(stream)));
      });
  return status;
}
