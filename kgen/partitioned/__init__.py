"""Row-partitioned evaluation on Dask, for tables that do not fit one process (issue 15, docs/partitioned.md).

`anonymize(config, progress=None)` is the `--partitioned` route (input `config.input`, release folder
`config.output`); `anonymize_source(data, config, output=...)` takes a glob or a dask.dataframe directly;
`PartitionedEvaluator` is the evaluator for your own searches.
"""

from __future__ import annotations

from kgen.partitioned.evaluator import PartitionedEvaluator
from kgen.partitioned.run import anonymize, anonymize_source, open_cluster, prepare

__all__ = ["PartitionedEvaluator", "anonymize", "anonymize_source", "open_cluster", "prepare"]
