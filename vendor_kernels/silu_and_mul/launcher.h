// The SiLU-and-mul launcher's interface: raw device pointers, no torch, no CUDA headers.
#pragma once
#include <cstdint>

// input [num_tokens, 2 * d] (gate half first), out [num_tokens, d]; dtype_code 0 fp16, 1 bf16.
int silu_and_mul(int dtype_code, void* out, void* input, uint32_t num_tokens, uint32_t d,
                 void* stream);
