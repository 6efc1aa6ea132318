// flash_fwd_kernel with Is_causal = true (see launcher_impl.cuh).
#include "launcher_impl.cuh"

int flash_fwd_causal(void* q, void* k, void* v, void* o, float* lse, int b, int seqlen_q,
                     int seqlen_k, int h, int h_k, float softmax_scale, void* stream) {
  return annotate_flash::run<true>(q, k, v, o, lse, b, seqlen_q, seqlen_k, h, h_k, softmax_scale,
                                   stream);
}
