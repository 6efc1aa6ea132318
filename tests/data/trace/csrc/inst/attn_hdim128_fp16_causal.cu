#include "../attn_launch.h"

namespace demo {

template<>
void run_attn_<cutlass::half_t, 128, true>(Params &params) {
    run_attn_hdim128<cutlass::half_t, true>(params);
}

}  // namespace demo
