// The merge-state launcher's interface: raw device pointers, no torch, no CUDA headers.
#pragma once
#include <cstdint>

// v_a/v_b [seq_len, num_heads, head_dim] (DTypeIn), s_a/s_b [seq_len, num_heads] float
// (log-sum-exp, base 2); v_merged (DTypeO), s_merged float.
int merge_state(void* v_a, float* s_a, void* v_b, float* s_b, void* v_merged, float* s_merged,
                uint32_t seq_len, uint32_t num_heads, uint32_t head_dim, void* stream);
