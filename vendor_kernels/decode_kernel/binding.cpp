// Thin torch binding for the decode launcher: checks tensors, passes raw pointers.
#include "annotate_binding.h"
#include "launcher.h"

static const auto kDType = torch::kHalf;

void single_decode_py(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor o,
                      torch::Tensor tmp, double sm_scale, int64_t stream) {
  ANNOTATE_CHECK_TENSOR(q, kDType);
  ANNOTATE_CHECK_TENSOR(k, kDType);
  ANNOTATE_CHECK_TENSOR(v, kDType);
  ANNOTATE_CHECK_TENSOR(o, kDType);
  TORCH_CHECK(k.dim() == 3 && q.dim() == 2, "q [Hq, D], k/v [L, Hkv, D]");
  annotate_raise(single_decode(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                               annotate_optional_ptr(tmp), k.size(0), q.size(0), k.size(1),
                               sm_scale, annotate_stream(stream)),
                 "SingleDecodeWithKVCacheDispatched");
}

void batch_decode_paged_py(torch::Tensor q, torch::Tensor k_pages, torch::Tensor v_pages,
                           torch::Tensor indices, torch::Tensor indptr, torch::Tensor last_page_len,
                           torch::Tensor o, torch::Tensor request_indices,
                           torch::Tensor kv_tile_indices, torch::Tensor o_indptr,
                           torch::Tensor kv_chunk_size, double sm_scale, int64_t stream) {
  ANNOTATE_CHECK_TENSOR(q, kDType);
  ANNOTATE_CHECK_TENSOR(k_pages, kDType);
  ANNOTATE_CHECK_TENSOR(v_pages, kDType);
  ANNOTATE_CHECK_TENSOR(o, kDType);
  for (auto* t : {&indices, &indptr, &last_page_len, &request_indices, &kv_tile_indices,
                  &o_indptr, &kv_chunk_size}) {
    ANNOTATE_CHECK_TENSOR(*t, torch::kInt32);
  }
  TORCH_CHECK(k_pages.dim() == 4 && q.dim() == 3, "q [B, Hq, D], pages [P, page_size, Hkv, D]");
  annotate_raise(
      batch_decode_paged(q.data_ptr(), k_pages.data_ptr(), v_pages.data_ptr(),
                         indices.data_ptr<int32_t>(), indptr.data_ptr<int32_t>(),
                         last_page_len.data_ptr<int32_t>(), o.data_ptr(),
                         request_indices.data_ptr<int32_t>(), kv_tile_indices.data_ptr<int32_t>(),
                         o_indptr.data_ptr<int32_t>(), kv_chunk_size.data_ptr<int32_t>(),
                         q.size(0), q.size(1), k_pages.size(2), k_pages.size(1), sm_scale,
                         annotate_stream(stream)),
      "BatchDecodeWithPagedKVCacheDispatched");
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("single_decode", &single_decode_py);
  m.def("batch_decode_paged", &batch_decode_paged_py);
}
