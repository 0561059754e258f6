"""The population of the models that compare a release with one (delta-presence's input with its research
subset; k-map's `--population FILE`): which rows are released and which are counted, read and checked here
once, for prepare (the one run path), apply and the report.

- delta-presence: the input is the population P; `--research-subset` names the released rows S, as a file of
  rows of the input (the same header; each subset row matched to a distinct input row with the same values,
  as ARX's `DataSubset.create`) or as a 0/1 column of the input (dropped from the release).
- k-map with a population: the input is the released sample; the population file gives the rows counted (it
  must hold every QI column).

Bad files are one line naming the file, row and column: missing, a column lacking, a subset row not in the
population, an empty subset. Values outside the hierarchies are refused by the joint encoding (`prepare`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from fitness.models import PrivacyModel
from fitness.privacy.common import TableRef
from fitness.privacy.kmap_population import KMapPopulation
from fitness.privacy.presence import DeltaPresence
from kgen.io.table import FLAG_FALSE, FLAG_TRUE, CodedColumn, Table, column_codes, read_table
from kgen.run.config import Config
from lattice.errors import InputError, clip


def take(table: Table, rows: np.ndarray, drop: str | None = None) -> Table:
    """The rows `rows` (indices) of `table`, without column `drop`; each row keeps its number in messages."""
    columns = tuple(c for c in table.columns if c != drop)
    values = {}
    for c in columns:
        codes, labels = column_codes(table.column(c))
        values[c] = CodedColumn(np.asarray(codes)[rows], labels)
    numbers = [table.row_number(int(i)) for i in rows]
    return Table(columns, values, table.source, table.separator, numbers)


def stacked(first: Table, second: Table, columns: Sequence[str]) -> Table:
    """`columns` of `first`'s rows then `second`'s: what prepare encodes once, so both share codes."""
    values = {c: list(first.column(c)) + list(second.column(c)) for c in columns}
    numbers = [first.row_number(i) for i in range(first.n)] + [second.row_number(i) for i in range(second.n)]
    return Table(tuple(columns), values, first.source, first.separator, numbers)


def population_error(error: InputError, released: Table, population: Table) -> InputError:
    """A hierarchy's refusal of a value met in the joint encoding, located in the population file when the
    value is the population's alone (the joint table's rows name the input otherwise)."""
    column, value = error.column, error.value
    if column is None or value is None or value in set(released.column(column)):
        return error
    hits = [i for i, v in enumerate(population.column(column)) if v.strip() == value.strip()]
    if not hits:
        return error
    return InputError(f"value {clip(value)} of column {clip(column)} is not in its hierarchy", file=population.source,
                      row=population.row_number(hits[0]), column=column, value=value)


def subset_rows(table: Table, subset: str, encoding: str) -> tuple[np.ndarray, str | None]:
    """The indices of the research subset's rows in `table`, and the membership column to drop (None for a
    subset file)."""
    if subset in table.columns:
        flags = [str(v).strip().lower() for v in table.column(subset)]
        bad = next((i for i, v in enumerate(flags) if v not in FLAG_TRUE + FLAG_FALSE), None)
        if bad is not None:
            raise InputError(f"--research-subset column: {clip(flags[bad])} is not 1/0 or true/false",
                             file=table.source, row=table.row_number(bad), column=subset)
        rows = np.array([i for i, v in enumerate(flags) if v in FLAG_TRUE], dtype=np.int64)
        drop: str | None = subset
    else:
        rows, drop = matched_rows(table, read_table(subset, encoding=encoding)), None
    if rows.size == 0:
        raise InputError("--research-subset is empty: nothing would be released", file=subset)
    return rows, drop


def matched_rows(table: Table, subset: Table) -> np.ndarray:
    """Each subset row matched to a distinct input row with the same values (in input order)."""
    missing = [c for c in table.columns if c not in subset.columns] or \
        [c for c in subset.columns if c not in table.columns]
    if missing:
        raise InputError(f"--research-subset must have the input's columns; {clip(missing[0])} is in one only",
                         file=subset.source, column=missing[0])
    order = list(table.columns)
    where: dict[tuple, list[int]] = defaultdict(list)
    for i, row in enumerate(zip(*(table.column(c) for c in order))):
        where[row].append(i)
    for lst in where.values():
        lst.reverse()
    found = []
    for j, row in enumerate(zip(*(subset.column(c) for c in order))):
        free = where.get(row)
        if not free:
            raise InputError("this research-subset row is not a row of the population (the input), or is listed "
                             "more often than the input holds it", file=subset.source, row=subset.row_number(j))
        found.append(free.pop())
    return np.sort(np.array(found, dtype=np.int64))


def population_file(path: str, qis: Sequence[str], encoding: str) -> Table:
    """The population table of k-map, with every QI column."""
    population = read_table(path, encoding=encoding)
    lacking = next((q for q in qis if q not in population.columns), None)
    if lacking is not None:
        raise InputError(f"the population table lacks the quasi-identifier {clip(lacking)}", file=path,
                         column=lacking)
    if population.n == 0:
        raise InputError("the population table has no rows", file=path)
    return population


def split(table: Table, config: Config, models: Sequence[PrivacyModel]) -> tuple[Table, Table | None]:
    """(the rows released, the population's rows) of `table` for `models` (a run's, or those a report saved for
    `kgen apply`); (table, None) when no model compares with a population (the common path: nothing is read)."""
    for model in models:
        if isinstance(model, DeltaPresence):
            subset = model.subset.path if isinstance(model.subset, TableRef) else model.subset
            rows, drop = subset_rows(table, subset, config.encoding)
            released = take(table, rows, drop)
            return released, (take(table, np.arange(table.n), drop) if drop else table)
        if isinstance(model, KMapPopulation):
            return table, population_file(model.population.path, config.qi, config.encoding)
    return table, None
