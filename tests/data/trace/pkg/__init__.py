from .ops import norm as norm
from .attn import attn_func as attn_func
