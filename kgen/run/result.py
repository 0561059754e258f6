"""The outcome of a run, in memory: what `kgen.anonymize` returns and `kgen.write_release` publishes.

A module of its own: the in-memory path (`kgen.run.pipeline`) and the partitioned one (`kgen.run.partitioned`)
both return it, and neither may import the other at module level."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fitness.evaluator import Evaluation
from kgen.io.table import Table
from kgen.report.public import public_report
from lattice.search.base import SearchResult


@dataclass(frozen=True, eq=False)
class Result:
    """An anonymization (`anonymize`), in memory: nothing is written until `kgen.write_release`.

    Attributes
    ----------
    release : Table, PartsRelease or None
        The anonymized table: same columns and row order as the input (suppressed rows dropped with
        `drop_suppressed`); for a partitioned run its folder of checked parts
        (`kgen.runners.partitioned.release.PartsRelease`), or None when it only searched.
    evaluation : Evaluation
        The chosen node's evaluation (node, loss, LOG, LOS, suppressed rows, classes, ...).
    search : SearchResult
        What the search did: evaluations, seconds, why it stopped, its trace.
    report : dict
        The report (`kgen.report.build.anonymize_report`; docs/report.md); `verified` is added only when a
        release is written and checked.
    suppressed_rows : numpy.ndarray or None
        Per input row, whether it is suppressed.
    """

    release: Table | object | None
    evaluation: Evaluation
    search: SearchResult
    report: dict
    suppressed_rows: np.ndarray | None

    def public_report(self) -> dict:
        """What may be published beside the release (`kgen.report.public`): no absolute path, no hierarchy
        row, no input value the release does not show; `report` stays the steward's."""
        return public_report(self.report)
