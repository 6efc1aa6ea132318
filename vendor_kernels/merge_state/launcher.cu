// Runs FlashInfer's MergeStateKernel through the upstream host launcher MergeState
// (attention/cascade.cuh), which dispatches on head_dim and launches one block per position.
#include <flashinfer/attention/cascade.cuh>

#include "annotate_launcher.h"
#include "instantiation.h"
#include "launcher.h"

using namespace flashinfer;
using DTypeIn = ANNOTATE_DTYPE;
using DTypeO = ANNOTATE_DTYPE;

int merge_state(void* v_a, float* s_a, void* v_b, float* s_b, void* v_merged, float* s_merged,
                uint32_t seq_len, uint32_t num_heads, uint32_t head_dim, void* stream) {
  return annotate_status(MergeState<DTypeIn, DTypeO>(
      static_cast<DTypeIn*>(v_a), s_a, static_cast<DTypeIn*>(v_b), s_b,
      static_cast<DTypeO*>(v_merged), s_merged, seq_len, num_heads, head_dim,
      static_cast<cudaStream_t>(stream)));
}
