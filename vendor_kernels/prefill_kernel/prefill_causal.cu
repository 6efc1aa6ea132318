// SinglePrefillWithKVCacheKernel with MaskMode::kCausal (see launcher_impl.cuh).
#include "launcher_impl.cuh"

int single_prefill_causal(void* q, void* k, void* v, void* o, float* lse, void* tmp,
                          uint32_t qo_len, uint32_t kv_len, uint32_t num_qo_heads,
                          uint32_t num_kv_heads, float sm_scale, void* stream) {
  return annotate_prefill::run<flashinfer::MaskMode::kCausal>(
      q, k, v, o, lse, tmp, qo_len, kv_len, num_qo_heads, num_kv_heads, sm_scale, stream);
}
