#include "decode_config.inc"

void decode_run(Tensor q, Tensor k, Tensor v, Tensor o) {
  DISPATCH_context(DTypeQ, HEAD_DIM_QK, AttentionVariant, [&] {
    Params params;
    DecodeDispatched<HEAD_DIM_QK, AttentionVariant>(params);
    return true;
  });
}
