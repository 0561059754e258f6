"""Mondrian's Python API: build a run's Spec from a stored table, and centralized Mondrian on a file."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from kgen.io.csvio import UTF8
from kgen.io.hierarchies import find_in_dir, load_arx
from kgen.io.roles import identifier_warning, kept_columns, named_like_identifier, require_roles
from kgen.mondrian.core import QI, STRATEGIES, FragmentResult, Spec, Tree, anonymize_fragment, validate
from kgen.mondrian.storage import Source, write_csv
from kgen.runners.settings import CONNECT_TIMEOUT
from kgen.status import IdentifierWarning
from lattice.errors import InputError, names_shown

PEEK_ROWS = 10_000


def load_tree(path: str | os.PathLike, column: str) -> Tree:
    """A hierarchy in ARX's CSV format (read and validated by kgen.io.hierarchies), as Mondrian's ordered tree."""

    hierarchy = load_arx(path, column)
    return Tree.from_paths(list(hierarchy.paths.values()))


def _peek(source: Source, columns: Sequence[str]) -> pd.DataFrame:
    """The first rows of the table as text (to tell numeric QIs from categorical ones)."""
    if source.format == "parquet":
        # optional dependency: pyarrow (extra `parquet`)
        import pyarrow.parquet as pq

        batch = next(pq.ParquetFile(source.files[0]).iter_batches(batch_size=PEEK_ROWS, columns=list(columns)),
                     None)
        frame = batch.to_pandas() if batch is not None else pd.DataFrame(columns=list(columns))
        return frame.astype(str)
    if source.sheet is not None:
        return pd.DataFrame({c: source.sheet[c][:PEEK_ROWS] for c in columns}, dtype=object)
    try:
        return pd.read_csv(source.files[0], sep=source.separator, dtype=str, keep_default_na=False, nrows=PEEK_ROWS,
                           usecols=list(columns),
                           encoding="utf-8-sig" if source.encoding == UTF8 else source.encoding)
    except (ValueError, UnicodeError):  # pandas' ParserError is a ValueError; its message quotes the data
        raise source.read_error() from None


def _is_numeric(values: pd.Series) -> bool:
    if values.empty:
        return False
    return bool(pd.to_numeric(values, errors="coerce").notna().all())


def build_spec(source: Source, qis: Sequence[str], k: int, l: int = 1, sensitive: str | None = None,  # noqa: E741
               strategies: str | Mapping[str, str] | None = None,
               hierarchies: Mapping[str, str | os.PathLike] | None = None, hierarchy_dir: str | None = None,
               identifiers: Sequence[str] = (), keep: Sequence[str] = (), keep_unnamed: bool = False,
               warn: Callable[[str], None] | None = None) -> Spec:
    """The Spec of a run: per QI its generalization (given, else hierarchy when a hierarchy is given,
    interval for numbers, set otherwise) and its order (the hierarchy's leaves, numbers, or text).

    Every column needs a role, as in `kgen.anonymize`: a column that is not a QI, an identifier, the
    sensitive column or in `keep` is refused (InputError) unless `keep_unnamed`. A kept column named like an
    identifier is warned about: to `warn`, else as a `kgen.IdentifierWarning`."""
    hierarchies = dict(hierarchies or {})
    named = list(qis) + ([sensitive] if sensitive else []) + list(identifiers)
    for column in named:
        if column not in source.columns:
            raise InputError(f"unknown column {column!r}; the table has: {names_shown(source.columns)}",
                             file=source.source, column=column)
    require_roles(list(source.columns), named, keep, keep_unnamed, source.source)
    for column in kept_columns(list(source.columns), named, keep, keep_unnamed):
        if named_like_identifier(column):
            message = identifier_warning(column, "named like an identifier")
            if warn is not None:
                warn(message)
            else:
                warnings.warn(message, IdentifierWarning, stacklevel=2)
    for column in hierarchies:
        if column not in qis:
            raise InputError(f"a hierarchy is given for {column!r}, which is not a quasi-identifier (--qi)",
                             column=column)
    if isinstance(strategies, str):
        strategies = {q: strategies for q in qis}
    strategies = dict(strategies or {})
    for column in strategies:
        if column not in qis:
            raise InputError(f"a generalization is given for {column!r}, which is not a quasi-identifier (--qi)",
                             column=column)
    peek = _peek(source, qis)
    out = []
    for column in qis:
        path = hierarchies.get(column)
        if path is None and hierarchy_dir is not None:

            found = find_in_dir(hierarchy_dir, column)
            path = str(found) if found else None
        tree = load_tree(path, column) if path is not None else None
        numeric = _is_numeric(peek[column])
        strategy = strategies.get(column) or ("hierarchy" if tree else "interval" if numeric else "set")
        if strategy not in STRATEGIES:
            raise InputError(f"unknown generalization {strategy!r}; choose {', '.join(STRATEGIES)}", column=column)
        if strategy == "interval" and not numeric:
            bad = next((v for v in peek[column] if pd.isna(pd.to_numeric(v, errors="coerce"))), "")
            raise InputError(f"value {str(bad)[:40]!r} is not a number; the interval generalization needs numbers "
                             "(use --generalization set or prefix)", file=source.source, column=column,
                             value=str(bad))
        order = "hierarchy" if tree is not None and strategy != "interval" else "number" if numeric else "string"
        out.append(QI(column, strategy, order, tree))
    spec = Spec(tuple(out), int(k), int(l), sensitive, tuple(identifiers))
    validate(spec)
    return spec


def numeric_columns(spec: Spec) -> list[str]:
    return [q.name for q in spec.qis if q.numeric]


def anonymize_file(source: Source | str | os.PathLike, spec: Spec, output: str | os.PathLike | None = None
                   ) -> tuple[FragmentResult, dict[str, float]]:
    """Centralized Mondrian on a stored table: read it, anonymize it as one fragment, write the release (when
    `output` is given). `source`: a path (read as UTF-8) or a `Source` with its encoding. Returns the result
    and the read / anonymize / write seconds."""
    table = Source.of(source)
    started = time.perf_counter()
    frame = table.read(numeric_columns(spec))
    read = time.perf_counter() - started
    result = anonymize_fragment(frame, spec, where=str(source))
    anonymized = time.perf_counter() - started - read
    if output is not None:
        write_csv(result.release, Path(output), table.separator)
    written = time.perf_counter() - started - read - anonymized
    return result, {"read": read, "anonymize": anonymized, "write": written, "total": read + anonymized + written}


ENGINES = ("dask", "spark")


def anonymize_distributed(source: Source | str | os.PathLike, spec: Spec, folder: str | os.PathLike, workers: int,
                          partitioning: str = "multidim", sample: float = 0.001, seed: int = 0,
                          engine: str = "dask", scheduler: str | None = None, master: str | None = None,
                          separator: str | None = None, connect_timeout: float = CONNECT_TIMEOUT):
    """Distributed Mondrian on the chosen engine (`kgen mondrian --workers N --engine dask|spark`): the same
    sample, fragment conditions, per-fragment tasks and parts on either, so the engine changes where the tasks
    run, never the release. Dask (the default) uses `scheduler` or a LocalCluster of `workers` processes on
    127.0.0.1; Spark uses `master` or `local[workers]`. Parts are written into `folder` (which must exist);
    returns the `Run` (conditions, task metrics, seconds). `source`: a path (read as UTF-8), or a `Source` that
    carries its encoding to every task."""
    numeric = numeric_columns(spec)
    if engine == "dask":
        if master is not None:
            raise InputError("--master is for --engine spark; a Dask cluster is given with --scheduler")
        # optional dependency: pandas and pyarrow (the Mondrian engine)
        from kgen.mondrian.distributed import run_distributed

        return run_distributed(Source.of(source), spec, numeric, str(folder), workers, partitioning, sample, seed,
                               scheduler, separator=separator, connect_timeout=connect_timeout)
    if engine == "spark":
        if scheduler is not None:
            raise InputError("--scheduler is for --engine dask; a Spark cluster is given with --master")
        # optional dependency: pandas and pyarrow (the Mondrian engine)
        from kgen.mondrian.spark import run_spark

        return run_spark(None, Source.of(source), spec, numeric, str(folder), workers, partitioning, sample, seed,
                         master=master, separator=separator)
    raise InputError(f"unknown engine {engine!r}; choose {', '.join(ENGINES)}")
