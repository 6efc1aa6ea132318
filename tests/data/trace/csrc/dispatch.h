#pragma once
// Dispatch macros in the two shapes the pins use: a switch over a runtime code (with one case
// coming from a helper macro), and if / else if chains that bind a constexpr or a type.

#define DISPATCH_DTYPE(code, T_NAME, ...)  [&]() -> bool { \
    switch (code) { \
      _DISPATCH_CASE_F16(T_NAME, __VA_ARGS__) \
      case bfloat16_code: { using T_NAME = nv_bfloat16; return __VA_ARGS__(); } \
      default: return false; \
    } }()

#define _DISPATCH_CASE_F16(T_NAME, ...) \
  case float16_code: { using T_NAME = nv_half; return __VA_ARGS__(); }

#define BOOL_SWITCH(FLAG, NAME, ...) [&] { \
    if (FLAG) { constexpr static bool NAME = true; return __VA_ARGS__(); } \
    else { constexpr static bool NAME = false; return __VA_ARGS__(); } }()

#ifdef DEMO_DISABLE_CAUSAL
#define CAUSAL_SWITCH(FLAG, NAME, ...) [&] { constexpr static bool NAME = false; return __VA_ARGS__(); }()
#else
#define CAUSAL_SWITCH BOOL_SWITCH
#endif

#define FP16_SWITCH(IS_HALF, ...) [&] { \
    if (IS_HALF) { using elem_type = cutlass::half_t; return __VA_ARGS__(); } \
    else { using elem_type = cutlass::bfloat16_t; return __VA_ARGS__(); } }()

#define HEADDIM_SWITCH(D, ...) [&] { \
    if (D <= 64) { constexpr static int kHeadDim = 64; return __VA_ARGS__(); } \
    else if (D <= 128) { constexpr static int kHeadDim = 128; return __VA_ARGS__(); } }()
