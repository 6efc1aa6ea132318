// Thin torch binding for the SiLU-and-mul launcher.
#include "annotate_binding.h"
#include "launcher.h"

void silu_and_mul_py(torch::Tensor out, torch::Tensor input, int64_t stream) {
  const auto dt = input.scalar_type();
  ANNOTATE_CHECK_TENSOR(input, dt);
  ANNOTATE_CHECK_TENSOR(out, dt);
  TORCH_CHECK(input.dim() == 2 && out.dim() == 2 && input.size(1) == 2 * out.size(1),
              "input [n, 2d], out [n, d]");
  annotate_raise(silu_and_mul(annotate_dtype_code(input, "silu_and_mul"), out.data_ptr(),
                              input.data_ptr(), input.size(0), out.size(1),
                              annotate_stream(stream)),
                 "activation::act_and_mul_kernel<silu>");
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("silu_and_mul", &silu_and_mul_py); }
