"""Symbols and edges on small CUDA / Python snippets written for each tricky construct."""

from __future__ import annotations

import pytest

from annotate.index.fingerprint import fingerprint
from tests.index_support import index_snippets, line_of

KERNELS = """
#include "helpers.cuh"
namespace flashinfer {
namespace {
__device__ __forceinline__ int helper(int x) { return x + 1; }
}  // namespace

template <typename T, uint32_t VEC_SIZE>
FLASHINFER_INLINE void scale(T* x) {
  x[0] = helper(x[0]);
}

template <uint32_t HEAD_DIM, typename DTypeKV>
__global__ void __launch_bounds__(128) DecodeKernel(DTypeKV* k, float* out) {
  scale<float, 4>(out);
  math::shfl_xor_sync(1.f, 16);
  auto fn = [&](int i) { return compute_qk(i); };
  fn(3);
}

template <uint32_t HEAD_DIM>
cudaError_t DecodeDispatched(float* out, cudaStream_t stream) {
  auto kernel = DecodeKernel<HEAD_DIM, half>;
  void* args[] = {(void*)&out};
  FLASHINFER_CUDA_CALL(cudaLaunchKernel((void*)kernel, dim3(1), dim3(128), args, 0, stream));
  return cudaSuccess;
}

void LaunchDirect(float* out) {
  auto k2 = &DecodeKernel<64, float>;
  k2<<<1, 128>>>(nullptr, out);
  DecodeKernel<128, half><<<2, 64, 0>>>(nullptr, out);
}

__global__ void __launch_bounds__(128, 1) __cluster_dims__(2, 1, 1) ClusterKernel(float* out) {
  out[0] = 1.f;
}

void LaunchEx(float* out, cudaLaunchConfig_t config) {
  auto kernel = DecodeKernel<64, float>;
  cudaLaunchKernelEx(&config, kernel, nullptr, out);
  auto* kernel_instance = &DecodeKernel<32, float>;
  cudaLaunchKernelEx(&config, kernel_instance, nullptr, out);
  void (*fp)(float*, float*) = DecodeKernel<16, float>;
  fp<<<1, 1>>>(nullptr, out);
  void* args[] = {&out};
  auto launch_sort = [&](auto kernel, uint32_t threads) -> cudaError_t {
    return cudaLaunchKernel((void*)kernel, dim3(1), dim3(threads), args, 0, 0);
  };
  launch_sort(DecodeKernel<8, float>, 256);
}

template <typename T>
struct Softmax {
  __device__ void rescale(T x) { norm(x); }
  __device__ void norm(T x) {}
  template <int N> __device__ T pick(T x) const { return x; }
  T operator()(T a) const { return a; }
};

template <typename T>
__device__ void Softmax<T>::rescale_out_of_class(T x) {
  this->template pick<3>(x);
}

__device__ float use(Softmax<float>& s) {
  s.rescale(1.f);
  s.template pick<2>(1.f);
  return s(2.f);
}
}  // namespace flashinfer

namespace math {
__device__ __forceinline__ float shfl_xor_sync(float x, int lane) { return __shfl_xor_sync(0xffffffff, x, lane); }
}
"""

HELPERS = """
namespace flashinfer {
__device__ float compute_qk(int i) { return i; }
}
"""

FLASH = """
#define FLASH_NAMESPACE flash
namespace FLASH_NAMESPACE {
template <typename Kernel_traits, bool Is_causal, typename Params>
inline __device__ void compute_attn_1rowblock(const Params &params, const int bidb) {
  typename Kernel_traits::TiledMma tiled_mma;
}

template <typename Kernel_traits, bool Is_causal, typename Params>
inline __device__ void compute_attn(const Params &params) {
  FLASH_NAMESPACE::compute_attn_1rowblock<Kernel_traits, Is_causal>(params, 0);
}

#define DEFINE_FLASH_FORWARD_KERNEL(kernelName, ...) \\
template<typename Kernel_traits, __VA_ARGS__> \\
__global__ void kernelName(const Flash_fwd_params params)

DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, bool Is_dropout, bool Is_causal) {
  FLASH_NAMESPACE::compute_attn<Kernel_traits, Is_causal>(params);
}

template <typename Kernel_traits, bool Is_dropout>
void run_flash_fwd(Flash_fwd_params &params, cudaStream_t stream) {
  BOOL_SWITCH(params.is_causal, Is_causal, [&] {
    auto kernel = &flash_fwd_kernel<Kernel_traits, Is_dropout, Is_causal>;
    kernel<<<1, 128, 0, stream>>>(params);
  });
}
}  // namespace FLASH_NAMESPACE
"""

UNBALANCED = """
namespace flashinfer {
template <typename KTraits>
__device__ __forceinline__ void PrefillDevice(int x) {
#if (__CUDA_ARCH__ < 800)
  if constexpr (true) {
    trap();
  } else {
#endif
    body_call(x);
#if (__CUDA_ARCH__ < 800)
  }
#endif
}

template <typename KTraits>
__global__ __launch_bounds__(KTraits::NUM_THREADS) void PrefillKernel(int x) {
  PrefillDevice<KTraits>(x);
}

template <int N>
__global__ void
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)
__launch_bounds__(512, 4) quantize(
#else
quantize(
#endif
    int n, float* out) {
  out[0] = n;
}
}
"""

PY = '''
import functools


def gen_spec(name):
    return JitSpec(name).build()


class JitSpec:
    def __init__(self, name):
        self.name = name

    @functools.cache
    def build(self):
        return self._compile()

    def _compile(self):
        return gen_spec("x")


def make():
    return JitSpec("y")
'''


VARIANTS = """
#define REGISTER_LOGITS_MASK(params, batch_idx, qo_idx, kv_idx, ...) \\
  template <typename Params>                                        \\
  __device__ __forceinline__ bool LogitsMask(const Params& params, uint32_t batch_idx, \\
                                             uint32_t qo_idx, uint32_t kv_idx) {      \\
    __VA_ARGS__                                                                       \\
  }
namespace flashinfer {
template <bool use_sliding_window>
struct DefaultAttention {
  uint32_t kv_len, window_left;
  REGISTER_LOGITS_MASK(params, batch_idx, qo_idx, kv_idx, { return kv_idx < kv_len; })

  REGISTER_LOGITS_MASK(params, batch_idx, qo_idx, kv_idx, {
    bool mask = true;
    if constexpr (use_sliding_window) {
      mask &= (kv_idx + window_left >= kv_len + qo_idx);
    }
    return mask;
  })
};

template <typename AttentionVariant, typename Params>
__device__ __forceinline__ void logits_mask(const Params& params, AttentionVariant variant) {
  bool keep = variant.LogitsMask(params, 0, 1, 2);
}
}  // namespace flashinfer
"""


@pytest.fixture(scope="module")
def ix(tmp_path_factory):
    return index_snippets(tmp_path_factory.mktemp("ix"), {
        "include/kernels.cuh": KERNELS, "include/helpers.cuh": HELPERS,
        "src/flash_fwd.h": FLASH, "include/prefill.cuh": UNBALANCED, "pkg/jit/core.py": PY,
        "include/variants.cuh": VARIANTS,
    })


def sym(ix, q):
    (s,) = ix.find(q)
    return s


def test_anonymous_namespace_is_marked_and_transparent(ix):
    s = sym(ix, "flashinfer::helper")
    assert s.anonymous_namespace and s.kind == "device"


def test_macro_in_head_gives_qualifiers_and_template_head(ix):
    s = sym(ix, "flashinfer::scale")
    assert s.kind == "device"
    assert "__device__" in s.is_cuda_qualified
    assert s.template_params == "typename T, uint32_t VEC_SIZE"
    assert s.start_line == line_of(KERNELS, "template <typename T, uint32_t VEC_SIZE>")
    assert s.body_start_line == line_of(KERNELS, "FLASHINFER_INLINE void scale")
    assert s.signature.startswith("FLASHINFER_INLINE void scale(")


def test_kernel_with_launch_bounds(ix):
    s = sym(ix, "flashinfer::DecodeKernel")
    assert s.kind == "kernel" and s.parse_errors == 0
    assert s.start_line == line_of(KERNELS, "template <uint32_t HEAD_DIM, typename DTypeKV>")
    assert s.end_line == line_of(KERNELS, "fn(3);") + 1


def test_template_call_and_namespace_qualified_call_resolve(ix):
    s = sym(ix, "flashinfer::DecodeKernel")
    by = {e.callee_name: e for e in ix.callees(s)}
    assert by["scale"].callees == (sym(ix, "flashinfer::scale").key,)
    assert by["math::shfl_xor_sync"].callees == (sym(ix, "math::shfl_xor_sync").key,)
    # a call inside a lambda belongs to the enclosing function; resolved across files
    assert by["compute_qk"].callees == (sym(ix, "flashinfer::compute_qk").key,)
    assert by["compute_qk"].line == line_of(KERNELS, "auto fn = [&]")
    # calling the lambda variable is not a call of any definition
    assert by["fn"].callees == ()


def test_column_points_at_callee_name(ix):
    s = sym(ix, "flashinfer::DecodeKernel")
    e = next(e for e in ix.callees(s) if e.callee_name == "math::shfl_xor_sync")
    line = ix.source("demo", s.path).splitlines()[e.line - 1]
    assert line[e.column:].startswith("shfl_xor_sync")


def test_launch_through_cudaLaunchKernel_pointer(ix):
    s = sym(ix, "flashinfer::DecodeDispatched")
    launches = [e for e in ix.callees(s) if e.kind == "launch"]
    assert [(e.callee_name, e.via) for e in launches] == [("DecodeKernel", "cudaLaunchKernel")]
    assert launches[0].callees == (sym(ix, "flashinfer::DecodeKernel").key,)
    assert launches[0].line == line_of(KERNELS, "cudaLaunchKernel((void*)kernel")


def test_launch_triple_chevron_direct_and_through_pointer(ix):
    s = sym(ix, "flashinfer::LaunchDirect")
    launches = [(e.callee_name, e.via) for e in ix.callees(s) if e.kind == "launch"]
    assert launches == [("DecodeKernel", "<<<>>> via k2"), ("DecodeKernel", "<<<>>>")]
    assert all(e.resolved for e in ix.callees(s) if e.kind == "launch")


def test_cluster_dims_attribute(ix):
    s = sym(ix, "flashinfer::ClusterKernel")
    assert s.kind == "kernel" and s.parse_errors == 0


def test_launch_kernel_ex(ix):
    s = sym(ix, "flashinfer::LaunchEx")
    launches = [e for e in ix.callees(s) if e.kind == "launch"]
    assert [e.via for e in launches] == ["cudaLaunchKernelEx", "cudaLaunchKernelEx", "<<<>>> via fp",
                                         "cudaLaunchKernel"]
    assert all(e.callees == (sym(ix, "flashinfer::DecodeKernel").key,) for e in launches)


def test_methods_in_and_out_of_class(ix):
    assert sym(ix, "flashinfer::Softmax::rescale").kind == "method"
    assert sym(ix, "flashinfer::Softmax::operator()").kind == "method"
    out = sym(ix, "flashinfer::Softmax::rescale_out_of_class")
    assert out.kind == "method" and "__device__" in out.is_cuda_qualified
    (e,) = ix.callees(out)
    assert e.via == ".template" and e.callee_name.endswith("pick")
    assert e.callees == (sym(ix, "flashinfer::Softmax::pick").key,)


def test_unqualified_call_inside_method_prefers_own_class(ix):
    (e,) = ix.callees(sym(ix, "flashinfer::Softmax::rescale"))
    assert e.callees == (sym(ix, "flashinfer::Softmax::norm").key,)


def test_member_calls(ix):
    s = sym(ix, "flashinfer::use")
    by = {e.callee_name: e for e in ix.callees(s)}
    assert by["s.rescale"].via == "member"
    assert by["s.rescale"].callees == (sym(ix, "flashinfer::Softmax::rescale").key,)
    assert by["s.pick"].via == ".template"


def test_macro_namespace_and_definer_macro_and_launch_via_pointer_in_lambda(ix):
    attn = sym(ix, "flash::compute_attn")
    (e,) = ix.callees(attn)
    assert e.callees == (sym(ix, "flash::compute_attn_1rowblock").key,)
    k = sym(ix, "flash::flash_fwd_kernel")
    assert k.kind == "kernel" and k.template_params.startswith("typename Kernel_traits, bool Is_dropout")
    run = sym(ix, "flash::run_flash_fwd")
    launches = [e for e in ix.callees(run) if e.kind == "launch"]
    assert [e.callees for e in launches] == [(k.key,)]
    assert [x.caller for x in ix.callers(k)] == [run.key]


def test_a_body_definer_call_is_the_method_it_defines(ix):
    """`REGISTER_LOGITS_MASK(params, ..., { body })` in a class defines `LogitsMask` (macros.yaml,
    body_definers): a method over the whole call, with the macro's template parameters and
    qualifiers, that calls through the variant reach."""
    one, m = sorted(ix.find("flashinfer::DefaultAttention::LogitsMask"), key=lambda s: s.start_line)
    line = line_of(VARIANTS, "REGISTER_LOGITS_MASK(params", 1)
    assert (one.start_line, one.end_line) == (line, line)  # each starts on its own line
    assert m.kind == "method" and m.template_params == "typename Params"
    assert set(m.is_cuda_qualified) == {"__device__", "__forceinline__"} and m.parse_errors == 0
    assert (m.start_line, m.end_line) == (line_of(VARIANTS, "REGISTER_LOGITS_MASK(params", 2),
                                          line_of(VARIANTS, "  })"))
    assert m.signature.startswith("REGISTER_LOGITS_MASK(params, batch_idx")
    assert not ix.find("flashinfer::DefaultAttention::REGISTER_LOGITS_MASK")
    caller = sym(ix, "flashinfer::logits_mask")
    assert [sorted(e.callees) for e in ix.callees(caller)] == [sorted([one.key, m.key])]


def test_a_body_definer_whose_function_name_does_not_fit_is_an_error():
    from annotate.errors import AnnotateError
    from annotate.index.parse import body_definers

    assert body_definers({"REGISTER_X": {"name": "X"}}) == {"REGISTER_X": {"name": "X"}}
    for bad in ({"name": "NameLongerThanMacro"}, {"name": "not an identifier"}, {}):
        with pytest.raises(AnnotateError, match=r"macros.yaml: body_definers.REG_X: name must be an identifier"):
            body_definers({"REG_X": bad})


def test_unbalanced_preprocessor_groups_do_not_lose_functions(ix):
    dev = sym(ix, "flashinfer::PrefillDevice")
    ker = sym(ix, "flashinfer::PrefillKernel")
    assert dev.end_line == line_of(UNBALANCED, "#endif", 1) + 1
    assert ker.kind == "kernel"
    assert [e.callees for e in ix.callees(ker)] == [(dev.key,)]
    q = sym(ix, "flashinfer::quantize")  # head split across #if/#else: first variant parsed
    assert q.kind == "kernel" and q.parse_errors == 0 and q.template_params == "int N"


def test_python_functions_and_methods(ix):
    build = sym(ix, "pkg.jit.core.JitSpec.build")
    assert build.kind == "python" and build.start_line == line_of(PY, "@functools.cache")
    (e,) = ix.callees(build)
    assert e.callees == (sym(ix, "pkg.jit.core.JitSpec._compile").key,)
    g = sym(ix, "gen_spec")
    assert g.qualified_name == "pkg.jit.core.gen_spec"
    assert any(x.callees == (g.key,) for x in ix.callees(sym(ix, "pkg.jit.core.JitSpec._compile")))
    (ctor,) = ix.callees(sym(ix, "pkg.jit.core.make"))  # a class call runs its __init__
    assert ctor.callees == (sym(ix, "pkg.jit.core.JitSpec.__init__").key,)


def test_fingerprint_ignores_comments_and_whitespace():
    a = "{\n  int x = 1; // one\n  /* block */ return f( x );\n}"
    b = "{ int x=1; return f(x); }"
    assert fingerprint(a, "cuda") == fingerprint(b, "cuda")
    assert fingerprint(a, "cuda") != fingerprint("{ int x=2; return f(x); }", "cuda")
    assert fingerprint('{ s = "// not a comment"; }', "cuda") != fingerprint("{ s = \"\"; }", "cuda")
    assert len(fingerprint(a, "cuda")) == 16


def test_symbol_fingerprint_is_of_body(ix):
    s = sym(ix, "flashinfer::helper")
    assert s.fingerprint == fingerprint("{ return x + 1; }", "cuda")


def test_includes_resolved(ix):
    fi = ix.file("demo", "include/kernels.cuh")
    assert fi.includes == ("include/helpers.cuh",)


def test_captures_come_in_document_order_every_time(tmp_path):
    # tree-sitter's captures() order varies between calls; the index must not (includes, facts)
    from annotate.index.extract import extract_full

    src = b"".join(b'#include "h%d.cuh"\n' % i for i in range(12)) + (
        b"__global__ void k(float* x) {\n  __shared__ float s[4]; __syncthreads(); __syncthreads();\n}\n")
    runs = {(ex.file.includes, ex.file.facts) for ex in (extract_full("demo", "a.cu", src) for _ in range(20))}
    assert len(runs) == 1
    includes, _ = runs.pop()
    assert includes == tuple(f'"h{i}.cuh"' for i in range(12))


GENERIC_KERNEL = """
template <typename Operator>
CUTLASS_GLOBAL
#ifdef __CUDACC__
// the bounds only for nvcc
__launch_bounds__(Operator::MaxThreadsPerBlock, Operator::MinBlocksPerMultiprocessor)
#endif // __CUDACC__
void device_kernel(typename Operator::Params const params) {
  Operator op;
  op(params);
}

template <typename T>
CUTLASS_HOST_DEVICE
// a comment, then the function
T twice(T x) { return x + x; }

template <typename T>
#ifdef __CUDACC__
__device__
#endif
T thrice(T x) { return x + x + x; }
"""


def test_qualifier_macro_before_a_conditional_group_in_the_head(tmp_path):
    """cutlass's generic kernel: the grammar cannot read the `#ifdef` group in its head, so the
    function starts after it; the qualifier macro before the group still makes it a kernel."""
    ix = index_snippets(tmp_path, {"device_kernel.h": GENERIC_KERNEL})
    by = {s.qualified_name: s for s in ix.all_symbols()}
    k = by["device_kernel"]
    assert k.kind == "kernel" and "__global__" in k.is_cuda_qualified
    assert k.start_line == line_of(GENERIC_KERNEL, "template <typename Operator>")
    assert k.signature.startswith("void device_kernel(")  # the signature is the parsed head, as before
    assert by["twice"].kind == "host-device" and by["thrice"].kind == "device"


def test_cluster_launch_through_a_kernel_pointer(tmp_path):
    """cutlass's `launch_kernel_on_cluster(params, kernel, args...)` launches the kernel pointer
    it is given (macros.yaml `launchers`): FA3's cluster branch is a launch edge."""
    text = GENERIC_KERNEL + """
template <typename AttnKernel>
void run_fwd(typename AttnKernel::Params p) {
  void const* kernel = (void const*) device_kernel<AttnKernel>;
  launch_kernel_on_cluster(launch_params, kernel, p);
}
"""
    ix = index_snippets(tmp_path, {"launch.h": text})
    run = next(s for s in ix.all_symbols() if s.qualified_name == "run_fwd")
    (e,) = [e for e in ix.callees(run) if e.kind == "launch"]
    kernel = next(s for s in ix.all_symbols() if s.qualified_name == "device_kernel")
    assert (e.callee_name, e.via, e.callees) == ("device_kernel", "launch_kernel_on_cluster", (kernel.key,))
    assert e.line == line_of(text, "launch_kernel_on_cluster(")  # the launch site, linked on the page
