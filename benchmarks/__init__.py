"""Benchmark scripts (run as `python -m benchmarks.<name>`); see docs/performance.md."""
