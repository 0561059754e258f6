"""The same distributed Mondrian on Apache Spark (optional extra: `pip install "kgen[spark]"`, needs a JRE).

As in the paper's implementation, one Spark task per fragment: a one-column DataFrame of fragment numbers,
one per partition, is spread over the cluster and `mapInPandas` runs `run_fragment` for each number, which
reads the fragment from storage by its condition, anonymizes it with the engine-agnostic per-fragment
function, writes its part and returns its metrics (pickled). The coordinator (the driver) only computes the
conditions from a sample, with the same function and seed as on Dask, so both engines write byte-identical
parts.

Three things a new user would otherwise trip over are handled here rather than documented as workarounds:

- Spark starts its Python workers with `PYSPARK_PYTHON`, else the `python3` on PATH, which from a virtual
  environment is the system interpreter without kgen: the workers fail with `No module named 'kgen'` inside
  a Java traceback. Unless the user chose an interpreter (`spark.pyspark.python`, which Spark documents as
  taking precedence, or `PYSPARK_PYTHON`), the workers run the driver's own interpreter (`sys.executable`).
- A missing pyspark or Java runtime is found before Spark is started and reported in one line (exit 2),
  instead of a gateway traceback.
- pyspark 4 warns on every `mapInPandas` that it "does not yet fully support pandas >= 3". kgen passes only
  fragment numbers and pickled metrics through pandas (no pandas-on-Spark, no data conversions), which the
  tests check under pandas 3, so that one warning is silenced around kgen's Spark calls.
"""

from __future__ import annotations

import os
import pickle
import re
import shutil
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from kgen.mondrian.core import Spec
from kgen.mondrian.distributed import ClusterError, Run, TaskResult, fragment_conditions, run_fragment
from kgen.mondrian.storage import Source
from lattice.errors import InputError

PANDAS_WARNING = "PySpark does not yet fully support pandas"


def java_runtime() -> str | None:
    """The `java` Spark's launcher will run: `$JAVA_HOME/bin/java` when JAVA_HOME is set (the launcher then
    looks nowhere else), else `java` on PATH; None when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        java = Path(home) / "bin" / "java"
        return str(java) if os.access(java, os.X_OK) else None
    return shutil.which("java")


def require_spark() -> None:
    """Fail in one line (exit 2) before anything is read when pyspark or a Java runtime is missing: without
    this, Spark's launcher prints a shell error and pyspark a Java-gateway traceback."""
    try:
        # optional dependency: pyspark and a Java runtime (extra `spark`)
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError('--engine spark needs pyspark: pip install "kgen[spark]"') from None
    if java_runtime() is None:
        home = os.environ.get("JAVA_HOME")
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH and JAVA_HOME is not set"
        raise InputError(f"--engine spark needs a Java runtime (17 or later): {where}; install one (Debian: "
                         "apt-get install default-jre-headless) or set JAVA_HOME")


def worker_python(conf: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The interpreter for Spark's Python workers: the user's choice when there is one (`spark.pyspark.python`
    in the Spark configuration, which takes precedence over `PYSPARK_PYTHON`, as in Spark), else the driver's
    interpreter, which has kgen and its dependencies (Spark's own default, `python3` on PATH, may not)."""
    conf = conf or {}
    environ = os.environ if environ is None else environ
    return conf.get("spark.pyspark.python") or environ.get("PYSPARK_PYTHON") or sys.executable


@contextmanager
def _quiet_pandas_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=PANDAS_WARNING, category=FutureWarning)
        yield


@contextmanager
def _workers_run(context) -> Iterator[str]:
    """Python functions built inside this block carry `worker_python(...)` as their interpreter (pyspark
    copies `SparkContext.pythonExec` into each function when the plan is built); restored afterwards, so a
    session the caller owns is left as it was."""
    chosen = worker_python({"spark.pyspark.python": context.getConf().get("spark.pyspark.python") or ""})
    previous = context.pythonExec
    context.pythonExec = chosen
    try:
        yield chosen
    finally:
        context.pythonExec = previous


def active_session():
    """The SparkSession already running in this process, or None: pyspark's builder would return it whatever
    master is asked for, so a caller's session must be used as is and never stopped by kgen."""
    try:
        # optional dependency: pyspark and a Java runtime (extra `spark`)
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def open_session(master: str | None, workers: int):
    """A SparkSession on `master` (default `local[workers]`: one task slot per worker, as Dask's LocalCluster
    has one single-threaded process per worker). Local masters bind the driver to 127.0.0.1 only; the web UI
    and the console progress bar are off."""
    require_spark()
    master = master or f"local[{workers}]"
    with _quiet_pandas_warning():
        # optional dependency: pyspark and a Java runtime (extra `spark`)
        from pyspark.sql import SparkSession

        builder = (SparkSession.builder.master(master).appName("kgen mondrian")
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.log.level", "ERROR"))
        local = master.startswith("local")
        if local:
            builder = (builder.config("spark.driver.host", "127.0.0.1")
                       .config("spark.driver.bindAddress", "127.0.0.1"))
        # the launcher reads SPARK_LOCAL_IP (else it warns that the host name resolves to a loopback address)
        previous = os.environ.get("SPARK_LOCAL_IP")
        if local and previous is None:
            os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        try:
            session = builder.getOrCreate()
        except Exception as error:  # pyspark's gateway and py4j errors share no base class worth naming
            text = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
            raise ClusterError(f"Spark could not start on master {master}: {text[:200]}") from None
        finally:
            if local and previous is None:
                os.environ.pop("SPARK_LOCAL_IP", None)
    return session


def _cause(text: str) -> str:
    """The line of a Spark error that names the cause (the last `SomethingError: ...` of the Python or Java
    trace it carries), else its first line; at most 300 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if re.match(r"^[\w.$]+(Error|Exception)\b", line)]
    return (causes[-1] if causes else lines[0] if lines else "unknown error")[:300]


def task_results(rows: Sequence[object]) -> list[TaskResult]:
    """The tasks' results in fragment order; a task's input error is raised here, with its own message and
    exit code (it travelled back as a value)."""
    outcomes = sorted(((int(r["fragment"]), pickle.loads(r["result"])) for r in rows), key=lambda p: p[0])
    for _, outcome in outcomes:
        if isinstance(outcome, InputError):
            raise outcome
    return [outcome for _, outcome in outcomes]


def run_spark(spark, source: str | Source, spec: Spec, numeric: Sequence[str], folder: str, fragments: int,
              partitioning: str = "multidim", sample: float = 0.001, seed: int = 0, master: str | None = None,
              separator: str | None = None) -> Run:
    """Distributed Mondrian with Spark as the engine; parts are written into `folder` (which must exist).

    `spark`: a SparkSession to use and leave open, or None to open one on `master` (see `open_session`) and
    stop it at the end, as `run_distributed` does with a Dask client (when a session is already active in
    this process, it is used and left open instead: pyspark allows one per process). Same sample, conditions,
    tasks, parts and metrics as `run_distributed` with the same arguments. A task's input error (e.g. a
    fragment too small for k) is raised here with its own message and exit code, as Dask's gather does; a
    task that Spark could not run (its Python worker failed to start or died) is a one-line `ClusterError`
    (exit 6) naming the worker interpreter and the Python error, not a Java traceback."""
    started = time.perf_counter()
    frame = Source.of(source).sample(sample, minimum=fragments, seed=seed, columns=[q.name for q in spec.qis],
                                  numeric=numeric)
    conditions = fragment_conditions(frame, spec, fragments, partitioning)
    numeric = list(numeric)
    planned = time.perf_counter()
    if spark is None:
        spark = active_session()
    own = spark is None
    if own:
        spark = open_session(master, fragments)
    opened = time.perf_counter()

    def tasks(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for batch in batches:
            for index in batch["fragment"]:
                try:
                    result = run_fragment(int(index), source, numeric, conditions[int(index)], spec, folder,
                                          separator)
                except InputError as error:  # travels back as a value: Spark would bury it in a Java trace
                    result = error
                yield pd.DataFrame({"fragment": [int(index)], "result": [pickle.dumps(result)]})

    # optional dependency: pyspark and a Java runtime (extra `spark`)
    from py4j.protocol import Py4JError

    # optional dependency: pyspark and a Java runtime (extra `spark`)
    from pyspark.errors import PySparkException

    try:
        with _quiet_pandas_warning(), _workers_run(spark.sparkContext) as python:
            # one fragment number per partition, made in the JVM: no shuffle, and every task slot gets work
            numbers = spark.range(len(conditions), numPartitions=len(conditions)).withColumnRenamed("id", "fragment")
            try:
                rows = numbers.mapInPandas(tasks, "fragment long, result binary").collect()
            except (PySparkException, Py4JError) as error:
                raise ClusterError(f"a Spark task failed (Python workers: {python}): {_cause(str(error))}") from None
    finally:
        if own:
            spark.stop()
    done = time.perf_counter()
    return Run(conditions, task_results(rows), len(frame), {
        "plan": planned - started, "cluster_start": opened - planned, "tasks": done - opened,
        "total": done - started, "total_without_cluster_start": done - started - (opened - planned)})
