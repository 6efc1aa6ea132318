void rmsnorm(Tensor out, Tensor x, Tensor w);

TVM_FFI_DLL_EXPORT_TYPED_FUNC(rmsnorm, rmsnorm);
