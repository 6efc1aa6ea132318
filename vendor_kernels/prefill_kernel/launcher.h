// The single-prefill launcher's interface: raw device pointers, no torch, no CUDA headers.
#pragma once
#include <cstdint>

// q [qo_len, num_qo_heads, D], k/v [kv_len, num_kv_heads, D] (NHD), o like q;
// lse [qo_len, num_qo_heads] float or nullptr; tmp: split-KV scratch or nullptr.
// The causal mask is aligned to the bottom right (query i sees keys <= i + kv_len - qo_len).
int single_prefill_causal(void* q, void* k, void* v, void* o, float* lse, void* tmp,
                          uint32_t qo_len, uint32_t kv_len, uint32_t num_qo_heads,
                          uint32_t num_kv_heads, double sm_scale, void* stream);
int single_prefill_noncausal(void* q, void* k, void* v, void* o, float* lse, void* tmp,
                             uint32_t qo_len, uint32_t kv_len, uint32_t num_qo_heads,
                             uint32_t num_kv_heads, double sm_scale, void* stream);
