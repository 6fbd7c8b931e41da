"""Probes of a task's data against runs' test predictions: what a score is made of (not tasks themselves)."""
