"""Every rule of annotate/index/rules/memory.yaml on a snippet written for it, plus the rule
table's validation. Adding a rule without an example here fails test_every_rule_has_an_example."""

from __future__ import annotations

import pytest

from annotate.index.facts import RuleError, parse_rules, rules
from tests.index_support import index_snippets

# rule id -> (statement(s) placed in a __device__ function body, text on the line expected to match)
EXAMPLES = {
    "shared-dynamic": ("extern __shared__ uint8_t smem[];", "extern __shared__"),
    "shared-static": ("__shared__ float red[32];", "__shared__ float"),
    "ptx-cp-async": ('asm volatile("cp.async.cg.shared.global [%0], [%1], %2;\\n" :: "r"(s), "l"(g), "n"(16));',
                     "asm volatile"),
    "flashinfer-cp-async": ("cp_async::pred_load<128, PrefetchMode::kPrefetch>(dst, src, pred);", "pred_load"),
    "flashinfer-smem-async": ("k_smem.load_128b_async<SharedMemFillMode::kNoFill>(off, ptr, pred);",
                              "load_128b_async"),
    "cute-cp-async-atom": ("using Atom = Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<cute::uint128_t>, T>;",
                           "SM80_CP_ASYNC"),
    "cute-tiled-copy-gmem": ("flash::copy<true>(gmem_tiled_copy_QKV, tQgQ, tQsQ, tQcQ);", "gmem_tiled_copy_QKV"),
    "cuda-memcpy-async": ("cuda::memcpy_async(block, smem, gmem, bytes, pipe);", "memcpy_async"),
    "pipeline-primitives-group": ("__pipeline_wait_prior(0);", "__pipeline_wait_prior"),
    "ptx-mbarrier": ('asm volatile("mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;" :: "r"(a), "r"(b));',
                     "mbarrier"),
    "cutlass-pipeline": ("pipeline_k.consumer_wait(smem_pipe_read);", "consumer_wait"),
    "ptx-cp-async-group": ('asm volatile("cp.async.commit_group;\\n" ::);', "commit_group"),
    "flashinfer-cp-async-group": ("cp_async::wait_group<1>();", "wait_group"),
    "cute-cp-async-group": ("FLASH_NAMESPACE::cp_async_wait<0>();", "cp_async_wait"),
    "ptx-tma": ('asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes'
                ' [%0], [%1, {%2, %3}], [%4];" :: "r"(a), "l"(b), "r"(c), "r"(d), "r"(e));', "asm volatile"),
    "cute-tma-atom": ("using TmaLoad = SM90_TMA_LOAD;", "SM90_TMA_LOAD"),
    "tma-call": ("auto tma = make_tma_copy(SM90_TMA_LOAD{}, gmem, smem_layout);", "make_tma_copy"),
    "syncthreads": ("__syncthreads();", "__syncthreads"),
    "cg-sync": ("block.sync();", "block.sync"),
    "named-barrier": ("cutlass::arch::NamedBarrier::sync(256, 1);", "NamedBarrier"),
    "ptx-barrier": ('asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n));', "bar.sync"),
    "shfl-intrinsic": ("x += __shfl_xor_sync(0xffffffff, x, 16);", "__shfl_xor_sync"),
    "shfl-wrapper": ("sum += math::shfl_xor_sync(sum, 8);", "math::shfl_xor_sync"),
    "ptx-shfl": ('asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(y) : "r"(x), "r"(m));',
                 "shfl.sync"),
    "ptx-mma": ('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7},'
                ' {%8,%9}, {%10,%11,%12,%13};\\n" : "=f"(c0) : "r"(a0));', "mma.sync"),
    "flashinfer-mma": ("mma::mma_sync_m16n16k16_row_col_f16f16f32<DTypeQ>(s_frag, a_frag, b_frag);",
                       "mma_sync_m16n16k16"),
    "smem-ldmatrix": ("q_smem.ldmatrix_m8n8x4(q_off, a_frag);", "ldmatrix_m8n8x4"),
    "wmma": ("wmma::mma_sync(c_frag, a_frag, b_frag, c_frag);", "wmma::mma_sync"),
    "cute-gemm": ("flash::gemm(acc_s, tSrQ, tSrK, tSsQ, tSsK, tiled_mma, smem_tiled_copy_Q, smem_tiled_copy_K,"
                  " smem_thr_copy_Q, smem_thr_copy_K);", "flash::gemm"),
    "cute-wgmma": ("warpgroup_arrive();", "warpgroup_arrive"),
    "cute-tiled-copy-smem": ("cute::copy(smem_tiled_copy_Q, tSsQ(_, _, 0), tSrQ_copy_view(_, _, 0));",
                             "smem_tiled_copy_Q"),
    "vec-t-load-store": ("st_local.o.cast_store(o + offset);", "cast_store"),
    "cute-tiled-copy-vector": ("cute::copy(gmem_tiled_copy_O, tOsO, tOrO);", "gmem_tiled_copy_O"),
    "vec-t-static": ("vec_t<float, 4>::memcpy(dst, src);", "memcpy"),
    "vector-reinterpret": ("float4 v = *reinterpret_cast<const float4*>(ptr);", "reinterpret_cast"),
    "ptx-vector": ('asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(a), "=r"(b), "=r"(c),'
                   ' "=r"(d) : "l"(p));', "ld.global"),
    "atomic": ("atomicAdd(counter, 1);", "atomicAdd"),
    "ptx-atomic": ('asm volatile("red.global.add.f32 [%0], %1;" :: "l"(p), "f"(v));', "red.global"),
    "inline-ptx": ('asm volatile("prefetch.global.L2 [%0];" :: "l"(p));', "prefetch"),
}


def test_every_rule_has_an_example():
    assert {r.id for r in rules()} == set(EXAMPLES)


@pytest.fixture(scope="module")
def ix(tmp_path_factory):
    parts = ["namespace demo {"]
    for i, (rid, (stmt, _)) in enumerate(EXAMPLES.items()):
        parts.append(f"template <typename T>\n__device__ void f_{i}(T* ptr) {{\n  int pad = 0;\n  {stmt}\n}}\n")
    parts.append("}")
    return index_snippets(tmp_path_factory.mktemp("facts"), {"rules.cuh": "\n".join(parts)})


@pytest.mark.parametrize("i,rid", list(enumerate(EXAMPLES)))
def test_rule_fires_on_its_line(ix, i, rid):
    (s,) = ix.find(f"demo::f_{i}")
    stmt_line = s.start_line + 3
    got = [(f.rule, f.line) for f in ix.facts(s)]
    assert (rid, stmt_line) in got, got
    rule = next(r for r in rules() if r.id == rid)
    fact = next(f for f in ix.facts(s) if f.rule == rid)
    assert fact.kind == rule.kind and fact.detail and fact.symbol == s.key


def test_plain_code_has_no_facts(tmp_path):
    ix = index_snippets(tmp_path, {"a.cuh": """
        __device__ float plain(float* x, int n) {
          float acc = 0.f;
          for (int i = 0; i < n; ++i) acc += x[i] * 2.f;
          return foo(acc);
        }
        """})
    (s,) = ix.find("plain")
    assert ix.facts(s) == []


def test_facts_inside_lambdas_belong_to_the_function(tmp_path):
    ix = index_snippets(tmp_path, {"a.cuh": """
        __global__ void k(float* x) {
          auto step = [&](int i) {
            __syncthreads();
          };
          step(0);
        }
        """})
    (s,) = ix.find("k")
    assert [(f.kind, f.line) for f in ix.facts(s)] == [("barrier", 3)]


@pytest.mark.parametrize("bad,msg", [
    ({"rules": [{"id": "a", "kind": "k", "node": "call_expression", "match": {"nope": "x"}, "detail": "d"}]},
     "unknown field"),
    ({"rules": [{"id": "a", "kind": "k", "node": "call_expression", "match": {"callee": "("}, "detail": "d"}]},
     "bad regex"),
    ({"rules": [{"id": "a", "kind": "k", "node": "x", "match": {"text": "x"}}]}, "missing `detail`"),
    ({"rules": [{"id": "a", "kind": "k", "node": "x", "match": {"text": "x"}, "detail": "{oops}"}]}, "unknown fields"),
    ({"rules": [{"id": "a", "kind": "k", "node": "x", "match": {"text": "x"}, "detail": "d"}] * 2}, "duplicate"),
    ({"nope": 1}, "expected a mapping"),
])
def test_rule_table_validation(bad, msg):
    with pytest.raises(RuleError, match=msg):
        parse_rules(bad)
