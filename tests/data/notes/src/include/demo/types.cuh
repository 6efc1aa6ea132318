#include <cstdint>
// A header written for the tests of notes on types and macros (not upstream code).
#define DEMO_INLINE inline __device__
#define DEMO_SWITCH(COND, NAME, ...) \
  [&] {                              \
    if (COND) {                      \
      constexpr bool NAME = true;    \
      return __VA_ARGS__();          \
    } else {                         \
      constexpr bool NAME = false;   \
      return __VA_ARGS__();          \
    }                                \
  }()
#if defined(DEMO_WIDE)
#define DEMO_WIDTH 8
#else
#define DEMO_WIDTH 4
#endif

namespace demo {

template <typename T, int N>
struct pack_t {
  T data[N];
  static constexpr int kSize = N * sizeof(T);
  using value_type = T;
  DEMO_INLINE void fill(T v);
  DEMO_INLINE T sum() const {
    T s = 0;
    for (int i = 0; i < N; ++i) s += data[i];
    return s;
  }
};

template <int N>
struct pack_t<float, N> {
  float4 data[N / 4];
};

enum class Mode : uint8_t { kPlain = 0, kScaled = 1 };

struct Params {
  float* input;   // [rows, cols], row-major
  float* output;
  int rows;
  int cols;
  Mode mode;
  struct Extra {
    float scale;
  } extra;
};

template <bool kScaled>
__global__ void ScaleKernel(Params params) {
  pack_t<float, DEMO_WIDTH> p;
  if (kScaled) p.data[0].x *= params.extra.scale;
}

void Launch(const Params& params, bool scaled) {
  DEMO_SWITCH(scaled, kScaled, [&] { ScaleKernel<kScaled><<<params.rows, 128>>>(params); });
}

struct ScaledParams : public Params {
  float bias;
};

}  // namespace demo
