"""decode_kernel: inputs, launch, float64 reference, PyTorch baseline and cost per shape.

The harness calls these (see docs/harness.md); it poisons every output with NaN before each
launch and compares each entry that reference() returns.
"""

import torch

from annotate.harness import refs

HEAD_DIM = 128
SCRATCH_BYTES = 32 << 20  # what FlashInfer's Python API allocates for the split-KV path


def _kv_lens(shape):
    if shape.get("kv_lens") is not None:
        return [int(x) for x in shape["kv_lens"]]
    return [int(shape["kv_len"])] * int(shape["batch"])


def _page_table(kv_lens, page_size, gen, device):
    """A paged KV layout: each request owns ceil(len / page_size) pages scattered at random."""
    pages_per_req = [(n + page_size - 1) // page_size for n in kv_lens]
    total = sum(pages_per_req)
    perm = torch.randperm(total, generator=gen, device=device).to(torch.int32)
    indptr = torch.zeros(len(kv_lens) + 1, dtype=torch.int32)
    indptr[1:] = torch.cumsum(torch.tensor(pages_per_req, dtype=torch.int32), 0)
    last = torch.tensor([n - (p - 1) * page_size for n, p in zip(kv_lens, pages_per_req)], dtype=torch.int32)
    return perm, indptr.to(device), last.to(device), total


def make_inputs(shape, gen, device):
    dt = refs.torch_dtype(shape["dtype"])
    hq, hkv = int(shape["num_qo_heads"]), int(shape["num_kv_heads"])
    if shape["variant"] == "single":
        n = int(shape["kv_len"])
        return {
            "q": refs.randn((hq, HEAD_DIM), dt, gen, device),
            "k": refs.randn((n, hkv, HEAD_DIM), dt, gen, device),
            "v": refs.randn((n, hkv, HEAD_DIM), dt, gen, device),
            "tmp": torch.empty(SCRATCH_BYTES // 2, dtype=dt, device=device),
        }
    kv_lens = _kv_lens(shape)
    page_size = int(shape["page_size"])
    indices, indptr, last, total = _page_table(kv_lens, page_size, gen, device)
    b = len(kv_lens)
    return {
        "q": refs.randn((b, hq, HEAD_DIM), dt, gen, device),
        # Every slot is random, also those past a request's length: reading one would show.
        "k_pages": refs.randn((total, page_size, hkv, HEAD_DIM), dt, gen, device),
        "v_pages": refs.randn((total, page_size, hkv, HEAD_DIM), dt, gen, device),
        "indices": indices, "indptr": indptr, "last_page_len": last,
        "request_indices": torch.arange(b, dtype=torch.int32, device=device),
        "kv_tile_indices": torch.zeros(b, dtype=torch.int32, device=device),
        "o_indptr": torch.arange(b + 1, dtype=torch.int32, device=device),
        "kv_chunk_size": torch.tensor([max(kv_lens)], dtype=torch.int32, device=device),
        "kv_lens": kv_lens,
    }


def make_outputs(shape, inputs):
    return {"o": torch.empty_like(inputs["q"])}


def launch(ext, shape, inputs, outputs, stream):
    scale = refs.default_sm_scale(HEAD_DIM)
    if shape["variant"] == "single":
        ext.single_decode(inputs["q"], inputs["k"], inputs["v"], outputs["o"], inputs["tmp"], scale, stream)
    else:
        i = inputs
        ext.batch_decode_paged(i["q"], i["k_pages"], i["v_pages"], i["indices"], i["indptr"],
                               i["last_page_len"], outputs["o"], i["request_indices"],
                               i["kv_tile_indices"], i["o_indptr"], i["kv_chunk_size"], scale, stream)


def gather_request(inputs, r):
    """Request r's contiguous K and V [kv_len, Hkv, D], read through the page table."""
    ptr = inputs["indptr"].tolist()
    pages = inputs["indices"][ptr[r]:ptr[r + 1]].long()
    n = inputs["kv_lens"][r]
    k = inputs["k_pages"][pages].reshape(-1, *inputs["k_pages"].shape[2:])[:n]
    v = inputs["v_pages"][pages].reshape(-1, *inputs["v_pages"].shape[2:])[:n]
    return k, v


def reference(shape, inputs):
    scale = refs.default_sm_scale(HEAD_DIM)
    if shape["variant"] == "single":
        out = refs.attention(inputs["q"].unsqueeze(0), inputs["k"], inputs["v"], causal=False, sm_scale=scale)
        return {"o": out[0]}
    outs = []
    for r in range(len(inputs["kv_lens"])):
        k, v = gather_request(inputs, r)
        outs.append(refs.attention(inputs["q"][r:r + 1], k, v, causal=False, sm_scale=scale)[0])
    return {"o": torch.stack(outs)}


def baseline(shape, inputs):
    import torch.nn.functional as F

    scale = refs.default_sm_scale(HEAD_DIM)
    if shape["variant"] == "single":
        q = inputs["q"].reshape(1, -1, 1, HEAD_DIM)
        k, v = refs.sdpa_layout(inputs["k"]), refs.sdpa_layout(inputs["v"])
    else:
        lens = inputs["kv_lens"]
        if len(set(lens)) != 1:
            return None  # ragged batches have no dense SDPA equivalent
        ks, vs = zip(*(gather_request(inputs, r) for r in range(len(lens))))
        k = torch.stack(ks).permute(0, 2, 1, 3).contiguous()  # [B, Hkv, L, D]
        v = torch.stack(vs).permute(0, 2, 1, 3).contiguous()
        q = inputs["q"].unsqueeze(2)  # [B, Hq, 1, D]
    return lambda: F.scaled_dot_product_attention(q, k, v, scale=scale, enable_gqa=True)


def cost(shape):
    hq, hkv = int(shape["num_qo_heads"]), int(shape["num_kv_heads"])
    lens = [int(shape["kv_len"])] if shape["variant"] == "single" else _kv_lens(shape)
    kv_bytes = sum(2 * n * hkv * HEAD_DIM * 2 for n in lens)
    qo_bytes = 2 * len(lens) * hq * HEAD_DIM * 2
    return {"bytes": kv_bytes + qo_bytes, "flops": sum(4 * hq * n * HEAD_DIM for n in lens)}
