// Runs FlashInfer's decode kernels exactly as the pinned headers define them.
// Nothing upstream is copied or edited: this file only fills the parameter structs and calls
// the upstream *Dispatched launchers, which pick the block shape and launch
// SingleDecodeWithKVCacheKernel / BatchDecodeWithPagedKVCacheKernel.
// The instantiation (dtype, head dim) comes from spec.yaml through the generated instantiation.h.
#include <flashinfer/attention/decode.cuh>
#include <flashinfer/attention/default_decode_params.cuh>
#include <flashinfer/attention/variants.cuh>

#include "annotate_launcher.h"
#include "instantiation.h"
#include "launcher.h"

using namespace flashinfer;

using DType = ANNOTATE_DTYPE;
constexpr uint32_t kHeadDim = ANNOTATE_HEAD_DIM;
// Plain softmax attention: no custom mask, no sliding window, no soft cap, no ALiBi.
using Variant = DefaultAttention<false, false, false, false>;

int single_decode(void* q, void* k, void* v, void* o, void* tmp, uint32_t kv_len,
                  uint32_t num_qo_heads, uint32_t num_kv_heads, float sm_scale, void* stream) {
  SingleDecodeParams<DType, DType, DType> params(
      static_cast<DType*>(q), static_cast<DType*>(k), static_cast<DType*>(v),
      static_cast<DType*>(o), /*maybe_alibi_slopes=*/nullptr, kv_len, num_qo_heads, num_kv_heads,
      QKVLayout::kNHD, kHeadDim, /*window_left=*/-1, /*logits_soft_cap=*/0.f, sm_scale,
      /*rope_scale=*/1.f, /*rope_theta=*/1e4f);
  return annotate_status(SingleDecodeWithKVCacheDispatched<kHeadDim, PosEncodingMode::kNone, Variant>(
      params, static_cast<DType*>(tmp), static_cast<cudaStream_t>(stream)));
}

int batch_decode_paged(void* q, void* k_pages, void* v_pages, int32_t* indices, int32_t* indptr,
                       int32_t* last_page_len, void* o, int32_t* request_indices,
                       int32_t* kv_tile_indices, int32_t* o_indptr, int32_t* kv_chunk_size,
                       uint32_t batch_size, uint32_t num_qo_heads, uint32_t num_kv_heads,
                       uint32_t page_size, float sm_scale, void* stream) {
  paged_kv_t<DType, int32_t> paged_kv(num_kv_heads, page_size, kHeadDim, batch_size,
                                      QKVLayout::kNHD, static_cast<DType*>(k_pages),
                                      static_cast<DType*>(v_pages), indices, indptr, last_page_len);
  BatchDecodeParams<DType, DType, DType, int32_t> params(
      static_cast<DType*>(q), /*q_rope_offset=*/nullptr, paged_kv, static_cast<DType*>(o),
      /*lse=*/nullptr, /*maybe_alibi_slopes=*/nullptr, num_qo_heads,
      /*q_stride_n=*/num_qo_heads * kHeadDim, /*q_stride_h=*/kHeadDim, /*window_left=*/-1,
      /*logits_soft_cap=*/0.f, sm_scale, /*rope_scale=*/1.f, /*rope_theta=*/1e4f);
  params.request_indices = request_indices;
  params.kv_tile_indices = kv_tile_indices;
  params.o_indptr = o_indptr;
  params.kv_chunk_size_ptr = kv_chunk_size;
  params.padded_batch_size = batch_size;
  // tmp_v == nullptr: the no-split path (one block row per request).
  return annotate_status(
      BatchDecodeWithPagedKVCacheDispatched<kHeadDim, PosEncodingMode::kNone, Variant>(
          params, /*tmp_v=*/nullptr, /*tmp_s=*/nullptr, /*enable_pdl=*/false,
          static_cast<cudaStream_t>(stream)));
}
