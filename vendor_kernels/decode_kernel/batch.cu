// The paged batch decode through FlashInfer's own JIT module, with raw pointers.
// batch_decode_kernel.cu and batch_decode_config.inc are rendered from the pinned
// csrc/batch_decode_*.jinja with the values FlashInfer's JIT uses (spec.yaml `generate:`).
// This file does what BatchDecodeWithPagedKVCacheRun in csrc/batch_decode.cu does for tvm-ffi
// when the planner chose not to split KV: tmp_v = tmp_s = nullptr, one block row per request.
// The instantiation is batch_decode_kernel.cu's: `extern template` keeps this file from
// compiling it again.
#include "annotate_launcher.h"
#include "batch_decode_config.inc"
#include "launcher.h"
#include <flashinfer/attention/decode.cuh>

extern template cudaError_t flashinfer::BatchDecodeWithPagedKVCacheDispatched<
    HEAD_DIM_QK, POS_ENCODING_MODE, DefaultAttention<false, false, false, false>, Params>(
    Params params, DTypeO* tmp_v, float* tmp_s, bool enable_pdl, cudaStream_t stream);

int batch_decode_paged(void* q, void* k_pages, void* v_pages, int32_t* indices, int32_t* indptr,
                       int32_t* last_page_len, void* o, int32_t* request_indices,
                       int32_t* kv_tile_indices, int32_t* o_indptr, int32_t* kv_chunk_size,
                       uint32_t batch_size, uint32_t num_qo_heads, uint32_t num_kv_heads,
                       uint32_t page_size, double sm_scale, void* stream) {
  int status = 0;
  DISPATCH_context(
      DTypeQ, DTypeKV, DTypeO, IdType, HEAD_DIM_QK, HEAD_DIM_VO, POS_ENCODING_MODE,
      USE_SLIDING_WINDOW, USE_LOGITS_SOFT_CAP, AttentionVariant, Params, [&] {
        // contiguous NHD pages [num_pages, page_size, Hkv, D]: the strides torch would report
        const int64_t strides[4] = {int64_t(page_size) * num_kv_heads * HEAD_DIM_QK,
                                    int64_t(num_kv_heads) * HEAD_DIM_QK, HEAD_DIM_QK, 1};
        paged_kv_t<DTypeKV, IdType> paged_kv(
            num_kv_heads, page_size, HEAD_DIM_QK, batch_size, QKVLayout::kNHD,
            static_cast<DTypeKV*>(k_pages), static_cast<DTypeKV*>(v_pages), strides, indices,
            indptr, last_page_len);
        Params params;
        params.q = static_cast<DTypeQ*>(q);
        params.paged_kv = paged_kv;
        params.o = static_cast<DTypeO*>(o);
        params.lse = nullptr;
        params.num_qo_heads = num_qo_heads;
        params.q_stride_n = num_qo_heads * HEAD_DIM_QK;
        params.q_stride_h = HEAD_DIM_QK;
        params.window_left = -1;
        params.enable_pdl = false;
        params.request_indices = request_indices;
        params.kv_tile_indices = kv_tile_indices;
        params.o_indptr = o_indptr;
        params.kv_chunk_size_ptr = kv_chunk_size;
        params.block_valid_mask = nullptr;
        params.partition_kv = false;
        params.padded_batch_size = batch_size;
        params.maybe_alibi_slopes = nullptr;
        params.logits_soft_cap = 0.0;
        params.sm_scale = sm_scale;
        params.rope_rcp_scale = 1.0;
        params.rope_rcp_theta = 1e-4;
        status = annotate_status(
            flashinfer::BatchDecodeWithPagedKVCacheDispatched<HEAD_DIM_QK, POS_ENCODING_MODE,
                                                              AttentionVariant>(
                params, /*tmp_v=*/nullptr, /*tmp_s=*/nullptr, /*enable_pdl=*/false,
                static_cast<cudaStream_t>(stream)));
      });
  return status;
}
