#include "../attn_launch.h"

namespace demo {

template<>
void run_attn_<cutlass::half_t, 64, false>(Params &params) {
    run_attn_hdim128<cutlass::half_t, false>(params);
}

}  // namespace demo
