#include "attn_launch.h"

namespace demo {

void run_attn(Params &params, bool force_split = false) {
  FP16_SWITCH(!params.is_bf16, [&] {
    HEADDIM_SWITCH(params.d, [&] {
      CAUSAL_SWITCH(params.is_causal, Is_causal, [&] {
        if (params.num_splits <= 1 && !force_split) {
          run_attn_<elem_type, kHeadDim, Is_causal>(params);
        }
      });
    });
  });
}

std::vector<at::Tensor> attn_fwd(at::Tensor q, at::Tensor k, at::Tensor v, bool causal) {
  Params params;
  params.is_causal = causal;
  auto launch = &run_attn;
  launch(params);
  return {q};
}

}  // namespace demo

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "demo attention";
  m.def("fwd", &demo::attn_fwd, "Forward pass");
}
