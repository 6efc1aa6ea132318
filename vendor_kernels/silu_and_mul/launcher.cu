// Runs FlashInfer's activation::act_and_mul_kernel with SiLU.
// Upstream has no host launcher for this kernel in include/: its JIT (flashinfer/jit/activation.py)
// renders one per activation. This launcher does what that generated launcher does: grid =
// num_tokens, block = min(d / vec_size, 1024) with vec_size = 16 / sizeof(T), launched with
// cudaLaunchKernelEx (programmatic stream serialisation off).
#include <flashinfer/activation.cuh>

#include "annotate_launcher.h"
#include "instantiation.h"
#include "launcher.h"

using namespace flashinfer;

// SiLU(x) = x * sigmoid(x), the definition FlashInfer's JIT pastes in (it uses __expf).
__device__ __forceinline__ float silu(const float& val) { return val / (1.0f + __expf(-val)); }

template <typename T>
static int launch(void* out, void* input, uint32_t num_tokens, uint32_t d, void* stream) {
  const uint32_t vec_size = 16 / sizeof(T);
  cudaLaunchConfig_t config = {};
  config.gridDim = num_tokens;
  config.blockDim = std::min(d / vec_size, 1024U);
  config.dynamicSmemBytes = 0;
  config.stream = static_cast<cudaStream_t>(stream);
  cudaLaunchAttribute attrs[1];
  attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attrs[0].val.programmaticStreamSerializationAllowed = false;
  config.numAttrs = 1;
  config.attrs = attrs;
  auto kernel = activation::act_and_mul_kernel<T, silu>;
  return annotate_status(cudaLaunchKernelEx(&config, kernel, static_cast<T*>(out),
                                            static_cast<const T*>(input), static_cast<int>(d)));
}

int silu_and_mul(int dtype_code, void* out, void* input, uint32_t num_tokens, uint32_t d,
                 void* stream) {
  return annotate_dispatch_dtype(dtype_code, [&](auto type) {
    return launch<typename decltype(type)::type>(out, input, num_tokens, d, stream);
  });
}
