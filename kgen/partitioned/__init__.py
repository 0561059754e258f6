"""Row-partitioned evaluation on Dask, for tables that do not fit one process (issue 15, docs/partitioned.md).

`anonymize(data, config, output, progress=None)` is the `--partitioned` route (`kgen.api.anonymize` with
`config.partitioned`); `anonymize_source(data, config, output=...)` also takes a client of yours;
`PartitionedEvaluator` is the evaluator for your own searches.
"""

from __future__ import annotations

import distributed  # noqa: F401 (imported first: without Dask's extra, kgen.api reports the missing package in one line)

from kgen.partitioned.evaluator import PartitionedEvaluator
from kgen.partitioned.run import anonymize, anonymize_source, open_cluster, prepare

__all__ = ["PartitionedEvaluator", "anonymize", "anonymize_source", "open_cluster", "prepare"]
