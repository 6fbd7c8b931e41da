"""Compression methods: each takes a trained model and returns a smaller or faster one.

One method per module, one contract (``suite.compress.method.Method``): check that it applies
(before any work), transform the model, optionally fine-tune it through the trainer (with the
method's callbacks and training task), and save its own artefact. ``job=compress``
(``suite/jobs/compress.py``) measures the result against the uncompressed model in the same
process. ``footprint`` counts what an artefact holds (bytes, non-zero weights, bits per weight).
"""
