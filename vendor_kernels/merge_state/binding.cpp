// Thin torch binding for the merge-state launcher.
#include "annotate_binding.h"
#include "launcher.h"

void merge_state_py(torch::Tensor v_a, torch::Tensor s_a, torch::Tensor v_b, torch::Tensor s_b,
                    torch::Tensor v_merged, torch::Tensor s_merged, int64_t stream) {
  ANNOTATE_CHECK_TENSOR(v_a, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(v_b, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(v_merged, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(s_a, torch::kFloat);
  ANNOTATE_CHECK_TENSOR(s_b, torch::kFloat);
  ANNOTATE_CHECK_TENSOR(s_merged, torch::kFloat);
  TORCH_CHECK(v_a.dim() == 3, "v [seq_len, num_heads, head_dim]");
  annotate_raise(merge_state(v_a.data_ptr(), s_a.data_ptr<float>(), v_b.data_ptr(),
                             s_b.data_ptr<float>(), v_merged.data_ptr(),
                             s_merged.data_ptr<float>(), v_a.size(0), v_a.size(1), v_a.size(2),
                             annotate_stream(stream)),
                 "MergeState");
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("merge_state", &merge_state_py); }
