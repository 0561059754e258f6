"""Row-partitioned evaluation on Dask, for tables that do not fit one process (docs/partitioned.md).

The parts a run path needs: where the rows are (`source`), the coded domain of the QIs (`domain`), each
worker's part (`part`), the merge of their class tables (`merge`, `keys`), the evaluator (`evaluator`) and
the release written part by part (`release`). `kgen.run.partitioned` is the run path that uses them.
"""

from __future__ import annotations

import distributed  # noqa: F401 (first: without Dask's extra, the run path reports the missing package in one line)

from kgen.runners.partitioned.evaluator import PartitionedEvaluator

__all__ = ["PartitionedEvaluator"]
