"""Datasets as samples: listing files, ground-truth formats, class lists, decoding and preprocessing,
the preprocessed-tensor cache, the dataset manifest and shards.

May import: core.
"""
