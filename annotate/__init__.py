"""annotate: a code-reading companion for FlashInfer and Flash-Attention."""

__version__ = "0.1.0"
