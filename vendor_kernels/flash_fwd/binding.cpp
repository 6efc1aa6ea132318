// Thin torch binding for the Flash-Attention 2 forward launchers.
#include "annotate_binding.h"
#include "launcher.h"

void flash_fwd_py(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor o,
                  torch::Tensor lse, bool causal, double softmax_scale, int64_t stream) {
  ANNOTATE_CHECK_TENSOR(q, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(k, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(v, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(o, torch::kHalf);
  ANNOTATE_CHECK_TENSOR(lse, torch::kFloat);
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && q.size(3) == 128, "q [b, s, h, 128], k/v [b, s, h_k, 128]");
  auto fn = causal ? &flash_fwd_causal : &flash_fwd_noncausal;
  annotate_raise(fn(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr<float>(),
                    q.size(0), q.size(1), k.size(1), q.size(2), k.size(2), (float)softmax_scale,
                    annotate_stream(stream)),
                 "flash::run_flash_fwd");
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("flash_fwd", &flash_fwd_py); }
