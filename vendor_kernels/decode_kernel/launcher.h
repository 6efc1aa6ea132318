// The decode launcher's interface: raw device pointers, no torch, no CUDA headers.
#pragma once
#include <cstdint>

// q [num_qo_heads, D], k/v [kv_len, num_kv_heads, D] (NHD), o [num_qo_heads, D];
// tmp: scratch for the split-KV path (nullptr disables it, as upstream allows).
int single_decode(void* q, void* k, void* v, void* o, void* tmp, uint32_t kv_len,
                  uint32_t num_qo_heads, uint32_t num_kv_heads, double sm_scale, void* stream);

// q [batch, num_qo_heads, D]; k_pages/v_pages [num_pages, page_size, num_kv_heads, D] (NHD);
// indices/indptr/last_page_len: the paged_kv_t page table; request_indices, kv_tile_indices,
// o_indptr, kv_chunk_size: the work split that FlashInfer's planner would produce when it
// does not split KV (one block row per request).
int batch_decode_paged(void* q, void* k_pages, void* v_pages, int32_t* indices, int32_t* indptr,
                       int32_t* last_page_len, void* o, int32_t* request_indices,
                       int32_t* kv_tile_indices, int32_t* o_indptr, int32_t* kv_chunk_size,
                       uint32_t batch_size, uint32_t num_qo_heads, uint32_t num_kv_heads,
                       uint32_t page_size, double sm_scale, void* stream);
