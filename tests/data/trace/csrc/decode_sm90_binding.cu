void decode_run_sm90(Tensor q, Tensor k, Tensor v, Tensor o);

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, decode_run_sm90);
