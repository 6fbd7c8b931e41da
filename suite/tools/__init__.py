"""Command-line benchmarks and profilers that build whole jobs (``python -m suite.tools.<name>``)."""
