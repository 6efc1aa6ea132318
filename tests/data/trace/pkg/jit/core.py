class JitSpec:
    def __init__(self, name, sources):
        self.name = name
        self.sources = sources

    def build_and_load(self):
        return load(self.name, self.sources)


def load(name, sources):
    return None


def gen_jit_spec(name, sources):
    return JitSpec(name, sources)
