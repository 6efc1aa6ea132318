// Thin torch binding for the single-prefill launchers.
#include "annotate_binding.h"
#include "launcher.h"

void single_prefill_py(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor o,
                       torch::Tensor tmp, bool causal, double sm_scale, int64_t stream) {
  ANNOTATE_CHECK_TENSOR(q, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(k, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(v, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(o, torch::kHalf);
  TORCH_CHECK(q.dim() == 3 && k.dim() == 3, "q [qo_len, Hq, D], k/v [kv_len, Hkv, D]");
  auto fn = causal ? &single_prefill_causal : &single_prefill_noncausal;
  annotate_raise(fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), /*lse=*/nullptr,
                    annotate_optional_ptr(tmp), q.size(0), k.size(0), q.size(1), k.size(1),
                    sm_scale, annotate_stream(stream)),
                 "SinglePrefillWithKVCacheDispatched");
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("single_prefill", &single_prefill_py); }
