"""Mondrian: local multidimensional recoding for k-anonymity and distinct l-diversity, centralized or distributed.

KGen's `anonymize` searches one full-domain generalization for the whole table (global recoding, with
suppression); Mondrian instead cuts the table into boxes of >= k rows and generalizes each box on its own
(local recoding, nothing suppressed). See docs/mondrian.md.

- `core`: the per-fragment function (`anonymize_fragment`) and the metrics (DP, NCP);
- `api`: `build_spec` (a run's settings from a stored table), `anonymize_file` (centralized) and
  `anonymize_distributed` (Dask or Spark);
- `storage`: reading a table or one fragment from CSV/Parquet storage, writing release partitions;
- `distributed`: the coordinator (sample, fragment conditions) and the Dask runner;
- `spark`: the same tasks through Spark's `mapInPandas` (optional extra; `--engine spark`);
- `command`: the `kgen mondrian` and `kgen mondrian-check` commands.

The names below are loaded on first use: importing the package (as the CLI does to register its commands)
needs neither pandas nor pyarrow, which only Mondrian uses.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "QI": "core", "STRATEGIES": "core", "FragmentResult": "core", "Spec": "core", "Tree": "core",
    "anonymize_fragment": "core", "summary": "core",
    "build_spec": "api", "load_tree": "api", "anonymize_file": "api", "numeric_columns": "api",
    "anonymize_distributed": "api", "ENGINES": "api",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"kgen.mondrian.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'kgen.mondrian' has no attribute {name!r}")
