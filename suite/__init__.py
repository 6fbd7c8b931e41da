"""The shared core of the benchmark suite: models, training, measurement and records.

Nothing under ``suite`` knows a domain; domains live in ``tasks``.
"""
