; Names in type positions (`vec_t<float, 4> v;`, `const Flash_fwd_params& params`,
; `run<Flash_fwd_kernel_traits<...>>()`, `using KTraits = KernelTraits<...>;`) and scopes of
; qualified names (`PosEncodingMode::kNone`, `Kernel_traits::kBlockM`): which of them name a
; type of the upstream is decided when the whole upstream is extracted (uses.py).
[(type_identifier) (namespace_identifier)] @tn
