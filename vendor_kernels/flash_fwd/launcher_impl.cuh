// Shared by flash_fwd_causal.cu and flash_fwd_noncausal.cu (one Is_causal per translation unit).
//
// Flash-Attention 2 at the pinned commit, unmodified: the params struct is filled the way
// flash_api.cpp's set_params_fprop fills it for a dense (non-varlen) batch without dropout,
// ALiBi, soft-cap or a local window; then run_flash_fwd<Kernel_traits, false, Is_causal> launches
// flash_fwd_kernel -> compute_attn -> compute_attn_1rowblock.
//
// Why run_flash_fwd and not run_mha_fwd_hdim128: the latter also instantiates the dropout path
// and the sm86/sm89 tile shapes. The traits below are the ones run_mha_fwd_hdim128 picks for
// fp16, head dim 128, no dropout on sm80 and sm90 (kBlockM 128, kBlockN 64, 4 warps), so the
// kernel that runs is the one FA2 runs on an A100/H100. The FLASHATTENTION_DISABLE_* defines
// (spec.yaml) are upstream's own switches for dropping features at build time.
#pragma once
#include <cmath>

#include "namespace_config.h"
#include "flash.h"
#include "flash_fwd_launch_template.h"

#include "annotate_launcher.h"
#include "instantiation.h"
#include "launcher.h"

namespace annotate_flash {
using Element = ANNOTATE_ELEMENT;
constexpr int kHeadDim = ANNOTATE_HEAD_DIM;
using Traits = Flash_fwd_kernel_traits<kHeadDim, ANNOTATE_BLOCK_M, ANNOTATE_BLOCK_N,
                                       ANNOTATE_NUM_WARPS, false, false, Element>;

inline int round_multiple(int x, int m) { return (x + m - 1) / m * m; }

template <bool Is_causal>
int run(void* q, void* k, void* v, void* o, float* lse, int b, int seqlen_q, int seqlen_k, int h,
        int h_k, float softmax_scale, void* stream) {
  FLASH_NAMESPACE::Flash_fwd_params params = {};
  params.is_bf16 = std::is_same_v<Element, cutlass::bfloat16_t>;
  params.q_ptr = q;
  params.k_ptr = k;
  params.v_ptr = v;
  params.o_ptr = o;
  // Strides in elements for contiguous [b, s, h, d] tensors.
  params.q_row_stride = int64_t(h) * kHeadDim;
  params.k_row_stride = int64_t(h_k) * kHeadDim;
  params.v_row_stride = int64_t(h_k) * kHeadDim;
  params.o_row_stride = int64_t(h) * kHeadDim;
  params.q_head_stride = params.k_head_stride = params.v_head_stride = params.o_head_stride =
      kHeadDim;
  params.q_batch_stride = int64_t(seqlen_q) * params.q_row_stride;
  params.k_batch_stride = int64_t(seqlen_k) * params.k_row_stride;
  params.v_batch_stride = int64_t(seqlen_k) * params.v_row_stride;
  params.o_batch_stride = int64_t(seqlen_q) * params.o_row_stride;
  params.softmax_lse_ptr = lse;
  params.b = b;
  params.h = h;
  params.h_k = h_k;
  params.h_h_k_ratio = h / h_k;
  params.seqlen_q = seqlen_q;
  params.seqlen_k = seqlen_k;
  params.seqlen_q_rounded = round_multiple(seqlen_q, 128);
  params.seqlen_k_rounded = round_multiple(seqlen_k, 128);
  params.d = kHeadDim;
  params.d_rounded = kHeadDim;
  params.softcap = 0.f;
  params.scale_softmax = softmax_scale;
  params.scale_softmax_log2 = softmax_scale * float(M_LOG2E);
  params.p_dropout = 1.f;  // probability of keeping an element
  params.p_dropout_in_uint8_t = 255;
  params.rp_dropout = 1.f;
  params.scale_softmax_rp_dropout = softmax_scale;
  params.is_causal = Is_causal;
  // set_params_fprop: causal is window (seqlen_k, 0); no window is (-1, -1).
  params.window_size_left = Is_causal ? seqlen_k : -1;
  params.window_size_right = Is_causal ? 0 : -1;
  params.is_seqlens_k_cumulative = true;
  params.num_splits = 1;
  FLASH_NAMESPACE::run_flash_fwd<Traits, /*Is_dropout=*/false, Is_causal>(
      params, static_cast<cudaStream_t>(stream));
  return annotate_status(cudaSuccess);
}
}  // namespace annotate_flash
