"""The same distributed Mondrian on Apache Spark (optional extra: `pip install "kgen[spark]"`, needs a JRE).

As in the paper's implementation, one Spark task per fragment: a one-column DataFrame of fragment numbers is
spread over the cluster and `mapInPandas` runs `run_fragment` for each number, which reads the fragment from
storage by its condition, anonymizes it with the engine-agnostic per-fragment function, writes its part and
returns its metrics (pickled). The coordinator (the driver) only computes the conditions from a sample.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence

import pandas as pd

from kgen.mondrian.core import Spec
from kgen.mondrian.distributed import Run, TaskResult, fragment_conditions, run_fragment
from kgen.mondrian.storage import Source


def run_spark(spark, source: str, spec: Spec, numeric: Sequence[str], folder: str, fragments: int,
              partitioning: str = "multidim", sample: float = 0.001, seed: int = 0) -> Run:
    """Distributed Mondrian with `spark` (a SparkSession) as the engine; parts are written into `folder`."""
    frame = Source(source).sample(sample, minimum=fragments, seed=seed, columns=[q.name for q in spec.qis],
                                  numeric=numeric)
    conditions = fragment_conditions(frame, spec, fragments, partitioning)
    numeric = list(numeric)

    def tasks(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            for index in batch["fragment"]:
                result = run_fragment(int(index), source, numeric, conditions[int(index)], spec, folder)
                yield pd.DataFrame({"fragment": [int(index)], "result": [pickle.dumps(result)]})

    numbers = spark.createDataFrame([(i,) for i in range(len(conditions))], "fragment int")
    rows = numbers.repartition(len(conditions)).mapInPandas(tasks, "fragment int, result binary").collect()
    results: list[TaskResult] = sorted((pickle.loads(r["result"]) for r in rows), key=lambda t: t.index)
    return Run(conditions, results, len(frame))
