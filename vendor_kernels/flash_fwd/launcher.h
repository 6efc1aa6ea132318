// The Flash-Attention 2 forward launcher's interface: raw device pointers, no torch types.
#pragma once
#include <cstdint>

// q [b, seqlen_q, h, 128], k/v [b, seqlen_k, h_k, 128], o like q (all fp16, contiguous);
// lse [b, h, seqlen_q] float. Causal masks align to the bottom right, as in FA2.
int flash_fwd_causal(void* q, void* k, void* v, void* o, float* lse, int b, int seqlen_q,
                     int seqlen_k, int h, int h_k, float softmax_scale, void* stream);
int flash_fwd_noncausal(void* q, void* k, void* v, void* o, float* lse, int b, int seqlen_q,
                        int seqlen_k, int h, int h_k, float softmax_scale, void* stream);
