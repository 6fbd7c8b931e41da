"""The suite's default Hydra sweeper: every point of a sweep in a directory of its own.

The work is in ``suite.runtime.sweep_dirs``.
"""
