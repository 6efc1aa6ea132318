"""The CUDA-aware index: symbols, call edges (with kernel launches) and memory-access facts."""
