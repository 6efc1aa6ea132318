// Runs FlashInfer's norm::RMSNormKernel through the upstream host launcher norm::RMSNorm,
// which picks the vector width (gcd(16 / sizeof(T), d)) and block size and launches it.
// Only the element types named in spec.yaml are instantiated (instantiation.h).
#include <flashinfer/norm.cuh>

#include "annotate_launcher.h"
#include "instantiation.h"
#include "launcher.h"

using namespace flashinfer;

int rmsnorm(int dtype_code, void* input, void* weight, void* output, uint32_t batch_size,
            uint32_t d, uint32_t stride_input, uint32_t stride_output, float eps, void* stream) {
  return annotate_dispatch_dtype(dtype_code, [&](auto type) {
    using T = typename decltype(type)::type;
    return annotate_status(norm::RMSNorm<T>(static_cast<T*>(input), static_cast<T*>(weight),
                                            static_cast<T*>(output), batch_size, d, stride_input,
                                            stride_output, eps, /*enable_pdl=*/false,
                                            static_cast<cudaStream_t>(stream)));
  });
}
