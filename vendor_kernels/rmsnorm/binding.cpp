// Thin torch binding for the RMSNorm launcher.
#include "annotate_binding.h"
#include "launcher.h"

void rmsnorm_py(torch::Tensor input, torch::Tensor weight, torch::Tensor output, double eps,
                int64_t stream) {
  const auto dt = input.scalar_type();
  ANNOTATE_CHECK_TENSOR(input, dt);
  ANNOTATE_CHECK_TENSOR(weight, dt);
  ANNOTATE_CHECK_TENSOR(output, dt);
  TORCH_CHECK(input.dim() == 2, "input [batch, d]");
  annotate_raise(rmsnorm(annotate_dtype_code(input, "rmsnorm"), input.data_ptr(),
                         weight.data_ptr(), output.data_ptr(), input.size(0), input.size(1),
                         input.stride(0), output.stride(0), (float)eps, annotate_stream(stream)),
                 "norm::RMSNorm");
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("rmsnorm", &rmsnorm_py); }
