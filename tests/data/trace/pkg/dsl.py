import cutlass.cute as cute


class NormKernel:
    def __init__(self, dtype):
        self.dtype = dtype

    @cute.jit
    def __call__(self, x, w, out):
        self.kernel(x, w, out).launch(grid=[1, 1, 1], block=[128, 1, 1])

    @cute.kernel
    def kernel(self, x, w, out):
        pass


def _compiled_norm(dtype):
    kernel_obj = NormKernel(dtype)
    return cute.compile(kernel_obj, None, None, None)


def norm_dsl(x, w, out):
    kernel = _compiled_norm(x.dtype)
    kernel(x, w, out)
