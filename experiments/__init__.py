"""Reproductions of the KGen paper's evaluation on the public API (see experiments/paper.py)."""
