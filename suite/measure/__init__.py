"""Measurement primitives: timing, FLOPs, matmul peaks, memory, contention, and the speed harness."""
