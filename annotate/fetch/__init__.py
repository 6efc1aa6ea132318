"""Fetch stage: pinned upstream sources into the cache (see annotate.fetch.api)."""
