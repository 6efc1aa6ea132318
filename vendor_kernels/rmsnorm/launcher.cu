// Runs FlashInfer's norm::RMSNormKernel through the upstream host launcher norm::RMSNorm,
// which picks the vector width (gcd(16 / sizeof(T), d)) and block size and launches it.
// Only the element types named in spec.yaml are instantiated (instantiation.h).
#include <flashinfer/norm.cuh>

#include "instantiation.h"
#define ANNOTATE_DEFINE_ERROR_STRING
#include "annotate_launcher.h"
#include "launcher.h"

using namespace flashinfer;

template <typename T>
static int run(void* input, void* weight, void* output, uint32_t batch_size, uint32_t d,
               uint32_t stride_input, uint32_t stride_output, float eps, void* stream) {
  return annotate_status(norm::RMSNorm<T>(static_cast<T*>(input), static_cast<T*>(weight),
                                          static_cast<T*>(output), batch_size, d, stride_input,
                                          stride_output, eps, /*enable_pdl=*/false,
                                          static_cast<cudaStream_t>(stream)));
}

int rmsnorm(int dtype_code, void* input, void* weight, void* output, uint32_t batch_size,
            uint32_t d, uint32_t stride_input, uint32_t stride_output, float eps, void* stream) {
  switch (dtype_code) {
    case 0:
      return run<ANNOTATE_DTYPE_0>(input, weight, output, batch_size, d, stride_input,
                                   stride_output, eps, stream);
#ifdef ANNOTATE_DTYPE_1
    case 1:
      return run<ANNOTATE_DTYPE_1>(input, weight, output, batch_size, d, stride_input,
                                   stride_output, eps, stream);
#endif
    default:
      return static_cast<int>(cudaErrorInvalidValue);
  }
}
