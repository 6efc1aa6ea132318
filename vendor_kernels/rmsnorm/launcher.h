// The RMSNorm launcher's interface: raw device pointers, no torch, no CUDA headers.
#pragma once
#include <cstdint>

// input/output [batch, d] (row strides given), weight [d]; dtype_code 0 = fp16, 1 = bf16.
int rmsnorm(int dtype_code, void* input, void* weight, void* output, uint32_t batch_size,
            uint32_t d, uint32_t stride_input, uint32_t stride_output, float eps, void* stream);
