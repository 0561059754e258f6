"""The public Python API: prepare a problem, search it, release the anonymized table with its report.

`anonymize` is the one run path: the command line (`kgen anonymize`, `kgen demo`) builds a `Config` and calls
it with a progress bar and a warning printer, so a run from Python and one from the shell validate, search,
release and report the same way. The reports are built in `kgen.report.build`; files are written by
`kgen.write_release` (Python) or the command line, both through `kgen.report.build.publish`."""

from __future__ import annotations

import importlib
import math
import re
import time
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from fitness.device_evaluator import make_evaluator
from fitness.encoding import EncodedTable, code_dtype, encode_codes
from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.models import KAnonymity, PrivacyModel, l_diversity, t_closeness
from fitness.objective import make_objective
from kgen.io import hierarchies as hierarchy_specs
from kgen.io.table import CodedColumn, Table, as_table, column_codes
from kgen.report import build as reporting
from kgen.report.build import lower_bound_record  # noqa: F401 (tests/test_certify.py imports it from here)
from kgen.run.algorithms import CUT_POINT, make_search
from kgen.run.config import Config
from kgen.runners import parallel
from lattice.box import Box
from lattice.errors import InputError, NoSolutionError
from lattice.hierarchy import TOP, Hierarchy
from lattice.node import Node
from lattice.pruning import minimum_levels
from lattice.search.base import Evaluator, Limits, Problem, SearchResult, Stopped

SUPPRESSED = "*"
INTEGER_TEXT = re.compile(r"-?[0-9]+", re.ASCII)


@dataclass(frozen=True, eq=False)
class Prepared:
    """A table ready to search: its hierarchies, encoding, evaluator and (pre-pruned) box."""

    table: Table
    config: Config
    hierarchies: dict[str, Hierarchy]
    hierarchy_sources: dict[str, str]
    qi_values: dict[str, CodedColumn]  # each QI column normalized (stripped, one missing token)
    encoded: EncodedTable
    evaluator: NodeEvaluator
    box: Box
    seconds: float

    @property
    def heights(self) -> Node:
        return self.encoded.heights

    def problem(self, evaluator: Evaluator | None = None) -> Problem:
        """The search problem; `evaluator` (e.g. another evaluator of the same table) replaces ours."""
        return Problem(self.evaluator if evaluator is None else evaluator, self.box, self.heights,
                       self.evaluator.monotone_feasibility, self.evaluator.monotone_loss,
                       loss_is_log=bool(self.evaluator.objective.node_only),
                       level_costs=self.level_costs)

    @property
    def level_costs(self) -> tuple[tuple[float, ...], ...] | None:
        """Per QI, the loss of each level with nothing suppressed, for the cell-cost objectives (NCP, Loss,
        entropy: a sum over QIs of a per-level cost, a suppressed cell costing the most); None otherwise.
        Measured through the objective itself: one QI raised at a time from the bottom."""
        objective = self.evaluator.objective
        if not objective.separable:
            return None
        table, heights = self.encoded, self.heights
        none = np.zeros(0, dtype=np.int64)

        def loss(node: Node) -> float:
            return float(objective(node, none, 0, table, suppressed_rows=none))

        bottom = tuple(0 for _ in heights)
        base = loss(bottom)
        costs = []
        for i, h in enumerate(heights):
            levels = [loss(bottom[:i] + (level,) + bottom[i + 1 :]) - base for level in range(h + 1)]
            costs.append(tuple(c + (base if i == 0 else 0.0) for c in levels))
        return tuple(costs)


@dataclass(frozen=True, eq=False)
class Result:
    """An anonymization (`anonymize`), in memory: nothing is written until `kgen.write_release`.

    Attributes
    ----------
    release : Table
        The anonymized table: same columns and row order as the input (suppressed rows dropped with
        `drop_suppressed`).
    evaluation : Evaluation
        The chosen node's evaluation (node, loss, LOG, LOS, suppressed rows, classes, ...).
    search : SearchResult
        What the search did: evaluations, seconds, why it stopped, its trace.
    report : dict
        The report (`kgen.report.build.anonymize_report`; docs/report.md); `verified` is added only when a
        release is written and checked.
    suppressed_rows : numpy.ndarray
        Per input row, whether it is suppressed.
    """

    release: Table
    evaluation: Evaluation
    search: SearchResult
    report: dict
    suppressed_rows: np.ndarray


def validate(table: Table, config: Config) -> None:
    """Raise an InputError for a configuration that cannot work on this table (the one place where the CLI's
    options and the Python API's Config are checked). With `config.strict`, the warnings of `run_warnings`
    are errors too."""
    if not config.qi:
        raise InputError("no quasi-identifiers given (--qi)")
    config.check()
    if table.n == 0:
        raise InputError("has a header but no data rows: nothing to anonymize", file=table.source)
    for columns in (config.qi, config.identifiers, config.sensitive):
        for column in columns:
            table.column(column)
    for column in config.hierarchies:
        if column not in config.qi:
            raise InputError(f"a hierarchy is given for {column!r}, which is not a quasi-identifier",
                             column=column)
    if config.k > table.n and config.suppression < 1.0:  # with t = 1, as with k = n: every row may be suppressed
        raise InputError(f"k = {config.k} is larger than the number of rows ({table.n}): no release can "
                         "be k-anonymous", file=table.source)
    parallel.validate_options(config.jobs, config.backend, config.scheduler, config.batch_size,
                              config.connect_timeout)
    if config.l is not None and config.l_variant in ("distinct", "recursive"):
        for column in config.sensitive:  # no class can hold more distinct values than the whole column
            distinct = len({v.strip() for v in table.column(column)})
            if config.l > distinct:
                raise InputError(f"{config.l_variant} l-diversity with l = {config.l:g} is impossible: the column "
                                 f"has only {distinct} distinct values", file=table.source, column=column)
    if config.strict:
        warnings = run_warnings(table, config)
        if warnings:
            raise InputError(f"{warnings[0]} (--strict makes this an error)", file=table.source)


# Words that name direct identifiers (matched against the words of a column name: `patient_id`, `eMail`,
# `Full Name`), and compounds written as one word (`username`, `customerid`).
IDENTIFIER_WORDS = frozenset({
    "id", "ids", "uid", "uuid", "guid", "name", "names", "firstname", "lastname", "surname", "forename",
    "fullname", "username", "login", "email", "mail", "phone", "telephone", "tel", "mobile", "cellphone", "fax",
    "ssn", "sin", "nin", "nino", "passport", "iban", "bic", "account", "acct", "address", "street", "ip",
    "mrn", "license", "licence", "dob", "birthdate", "birthday", "social", "nhs", "tin", "vat",
})
IDENTIFIER_ENDINGS = ("name", "email", "phone", "number", "address")
ID_OWNERS = frozenset({"user", "customer", "patient", "client", "person", "member", "employee", "claim",
                       "account", "record", "student", "case", "subject", "session", "device", "order", "policy"})
NEARLY_UNIQUE = 0.9  # a column with at least this share of distinct values among all rows identifies rows


def name_words(column: str) -> list[str]:
    """The words of a column name, lower case: `patientID` -> patient, id; `e-mail` -> e, mail."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", column)]


def named_like_identifier(column: str) -> bool:
    words = name_words(column)
    return any(w in IDENTIFIER_WORDS or (w.endswith(IDENTIFIER_ENDINGS) and len(w) > 5)
               or (w.endswith("id") and w[:-2] in ID_OWNERS) for w in words)


_UNNAMED_LAST: list = [None, None, None]  # weak reference to the last table, its key and its answer


def unnamed_columns(table: Table, config: Config) -> list[dict]:
    """Columns that no option names (not QI, identifier or sensitive) and that look like an identifier:
    unique or nearly unique over the rows (at least 90 % distinct values), or named like one (id, name,
    email, phone, ssn, ...). Released as they are, they could identify people. (A run asks several times:
    the last answer is kept, without keeping the table alive.)"""
    key = (tuple(config.qi), tuple(config.identifiers), tuple(config.sensitive), tuple(config.missing))
    last, last_key, answer = _UNNAMED_LAST
    if last is not None and last() is table and last_key == key:
        return [dict(a) for a in answer]
    answer = find_unnamed(table, config)
    _UNNAMED_LAST[:] = [weakref.ref(table), key, answer]
    return [dict(a) for a in answer]


def find_unnamed(table: Table, config: Config) -> list[dict]:
    named = set(config.qi) | set(config.identifiers) | set(config.sensitive)
    missing = set(config.missing)
    found = []
    for column in table.columns:
        if column in named:
            continue
        reasons = []
        if named_like_identifier(column):
            reasons.append("named like an identifier")
        if table.n >= 2:
            codes, labels = table.codes(column)  # per distinct value: a coded column holds no string per row
            present = np.bincount(codes, minlength=len(labels)).tolist() if len(labels) else []
            distinct = len({label.strip() for label, count in zip(labels, present) if count} - missing)
            if distinct >= NEARLY_UNIQUE * table.n:
                share = distinct / table.n
                reasons.append("unique on every row" if distinct == table.n else f"{share:.0%} distinct values")
        if reasons:
            found.append({"column": column, "reason": " and ".join(reasons)})
    return found


def run_warnings(table: Table, config: Config) -> list[str]:
    """What the run should warn about before searching (stderr and the report's `warnings`): columns that look
    like identifiers but have no role, and more jobs than usable cores."""
    warnings = [f"column {u['column']!r} has no role ({u['reason']}) and is released as it is; name it with "
                "--identifier (replaced by *), --qi or --sensitive" for u in unnamed_columns(table, config)]
    if parallel.wants_parallel(config.jobs, config.backend) and not (config.backend == "dask" and config.scheduler):
        note = parallel.capped_jobs(config.jobs)[1]  # a remote cluster's cores are not ours to count
        if note is not None:
            warnings.append(note)
    return warnings


def _most_frequent_token(counts: Mapping[str, int], tokens: tuple[str, ...]) -> str | None:
    """The canonical missing token of a column: the configured token that occurs most often in it (ties: the
    first configured), so that one stray empty field does not turn every `?` of the release into ``."""
    present = [t for t in tokens if counts.get(t, 0) > 0]
    return max(present, key=lambda t: (counts[t], -tokens.index(t))) if present else None


def normalize(values: list[str], tokens: tuple[str, ...]) -> tuple[list[str], str | None]:
    """QI values stripped of surrounding blanks, every missing token replaced by the canonical one."""
    codes, labels, token = normalize_codes(*column_codes(values), tokens)
    return CodedColumn(codes, labels).tolist(), token


def normalize_codes(codes: np.ndarray, labels: Sequence[str], tokens: tuple[str, ...]
                    ) -> tuple[np.ndarray, tuple[str, ...], str | None]:
    """`normalize` on a coded column: the work is per distinct label (strip, missing tokens, re-sort);
    the codes are remapped only when labels merge or move (else the same array comes back, no copy).
    Returns the new codes, the sorted distinct normalized labels (each occurring) and the missing token."""
    stripped = [label.strip() for label in labels]
    missing = set(tokens)
    counts = np.bincount(codes, minlength=len(labels)) if len(labels) else np.zeros(0, dtype=np.int64)
    token_counts: Counter[str] = Counter()
    for label, count in zip(stripped, counts.tolist()):
        if label in missing:
            token_counts[label] += count
    token = _most_frequent_token(token_counts, tokens)
    normalized = [token if token is not None and label in missing else label for label in stripped]
    occurring = [label for label, count in zip(normalized, counts.tolist()) if count > 0]
    new_labels = tuple(sorted(set(occurring)))
    if list(new_labels) == normalized:
        return codes, new_labels, token
    index = {label: i for i, label in enumerate(new_labels)}
    mapping = np.array([index.get(label, 0) for label in normalized], dtype=code_dtype(len(new_labels)))
    return mapping[codes], new_labels, token


def integer_labels(values: Sequence[str], tokens: tuple[str, ...]) -> np.ndarray | None:
    """The labels of a coded column as integers, when the reader found them all canonical integers (so
    stripping changes nothing) and none of them is a missing-value token (a token such as `-1` may be one);
    else None (`normalize_codes` then works on the strings)."""
    numbers = getattr(values, "numbers", None)
    if numbers is None:
        return None
    for token in tokens:
        if (len(token) <= 19 and INTEGER_TEXT.fullmatch(token) and str(int(token)) == token
                and bool((numbers == int(token)).any())):  # longer: no int64, so never among the numbers
            return None
    return numbers


def stripped_codes(codes: np.ndarray, labels: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """A sensitive column's codes over its sorted distinct values, stripped of surrounding blanks."""
    codes, labels, _ = normalize_codes(codes, labels, ())
    return codes, labels


def models_for(config: Config) -> list[PrivacyModel]:
    """k-anonymity, plus l-diversity and t-closeness on every sensitive column when `l` / `t_closeness` is set."""
    models: list[PrivacyModel] = [KAnonymity(config.k)]
    if (config.l is not None or config.t_closeness is not None) and not config.sensitive:
        raise InputError("l-diversity and t-closeness need a sensitive attribute (--sensitive COLUMN)")
    for column in config.sensitive:
        if config.l is not None:
            models.append(l_diversity(column, config.l, config.l_variant, config.c))
        if config.t_closeness is not None:
            models.append(t_closeness(column, config.t_closeness, config.t_distance))
    return models


def prepare(data: object, config: Config, models: list[PrivacyModel] | None = None,
            objective: object | None = None, *, require_feasible: bool = True) -> Prepared:
    """Validate, build the hierarchies, encode the table, and pre-prune the lattice (SPEC section 2).

    Parameters
    ----------
    data
        The table: a `kgen.Table`, a CSV path, a mapping of column name to values, or a pandas DataFrame.
    config
        What to anonymize and how (`kgen.Config`); checked against the table (`validate`).
    models
        The privacy models; default: those of `config` (`models_for`).
    objective
        The objective to minimize; default: `config.metric` (`fitness.objective.make_objective`).
    require_feasible
        Refuse a problem in which no node can be feasible (see Raises); False for `kgen apply`, which
        evaluates one given node and reports whether it holds.

    Returns
    -------
    Prepared
        The table with its hierarchies, encoding, evaluator and search box (`problem()` gives the search
        problem), ready for `search` and `finish`.

    Raises
    ------
    InputError
        Bad configuration or input (an unknown column, a hierarchy that does not cover a value, k above the
        number of rows, ...), as one line naming file, row and column.
    NoSolutionError
        With `require_feasible`, when feasibility is monotone and even the top node is infeasible (then no
        node is), with the least suppression limit that would help. Without monotone feasibility a lower node
        may be feasible although the top is not: the search decides (`finish`).
    """
    start = time.perf_counter()
    table = as_table(data)
    validate(table, config)
    if config.algorithm in CUT_POINT:  # it chooses its own intervals: run it, then release its node
        from kgen.run.koptimize import with_cut_points  # noqa: PLC0415 (kgen.run.koptimize imports this module)

        config = with_cut_points(table, config)
    tokens = tuple(config.missing)
    hierarchies, sources, qi_values, encoded_qis = {}, {}, {}, []
    for column in config.qi:  # per distinct value, and per row only array operations (codes)
        numbers = integer_labels(table.column(column), tokens)
        if numbers is not None:  # canonical integers, no missing token among them: nothing to normalize
            values = table.column(column)
            codes, labels, token, distinct = values.codes, values.labels, None, values.labels  # type: ignore[attr-defined]
        else:
            codes, labels, token = normalize_codes(*table.codes(column), tokens)
            values = CodedColumn(codes, labels)
            distinct = [v for v in labels if v != token]
        hierarchy, source = hierarchy_specs.resolve(column, distinct, token, config.hierarchies.get(column),
                                                    config.hierarchy_dir, table.source,
                                                    column_values=values, row_number=table.row_number,
                                                    numbers=numbers)
        hierarchies[column], sources[column], qi_values[column] = hierarchy, source, values
        encoded_qis.append(encode_codes(column, codes, labels, hierarchy))
    sensitive = {c: stripped_codes(*table.codes(c)) for c in config.sensitive}
    encoded = EncodedTable(table.n, tuple(encoded_qis), sensitive)
    evaluator = make_evaluator(encoded, models if models is not None else models_for(config), config.suppression,
                               objective if objective is not None else make_objective(config.metric),  # type: ignore[arg-type]
                               config.kernel, config.device)
    heights = encoded.heights
    # Only with monotone feasibility does an infeasible top prove that no node is feasible; otherwise (t > 0
    # with entropy or recursive l-diversity or t-closeness) a lower node may be, and the search decides (finish).
    if require_feasible and evaluator.monotone_feasibility and not evaluator.feasible(heights):
        raise NoSolutionError(no_solution_advice(config, evaluator, least_suppressed(evaluator, heights)),
                              file=table.source)
    box = Box(minimum_levels(heights, evaluator.feasible), heights) if (
        config.prune and evaluator.monotone_feasibility) else Box.full(heights)
    return Prepared(table, config, hierarchies, sources, qi_values, encoded, evaluator, box,
                    time.perf_counter() - start)


# The largest lattice scanned to find the fewest rows any node must suppress when the privacy models are not
# monotone under suppression (their top node need not be the one suppressing least).
ADVICE_SCAN_NODES = 4096


@dataclass(frozen=True)
class LeastSuppressed:
    """The node found to suppress the fewest rows, and whether that is proved the least of the lattice."""

    evaluation: Evaluation
    proved: bool
    nodes: int  # how many nodes were looked at


def least_suppressed(evaluator: NodeEvaluator, heights: Node, scan: int = ADVICE_SCAN_NODES) -> LeastSuppressed:
    """The node of the lattice [0, heights] that suppresses the fewest rows.

    Under models that stay monotone with suppression (k-anonymity, distinct l-diversity) generalizing never
    adds a violating row, so the top node is the answer. Otherwise every node of a lattice of at most `scan`
    nodes is evaluated; a larger lattice gives the top node, not proved least."""
    top = evaluator.evaluate(heights)
    if all(m.monotone_with_suppression for m in evaluator.models):
        return LeastSuppressed(top, True, 1)
    lattice = Box.full(heights)
    if lattice.size > scan:
        return LeastSuppressed(top, False, 1)
    best = top
    for node in lattice.nodes():
        e = evaluator.evaluate(node)
        if (e.suppressed, e.loss, e.node) < (best.suppressed, best.loss, best.node):
            best = e
    return LeastSuppressed(best, True, lattice.size)


def model_text(description: dict) -> str:
    """A privacy model's description (`describe()`) in words: "entropy l-diversity of 's' (l = 2)"."""
    d = description
    if d.get("model") == "l-diversity":
        name = f"{d['variant']} l-diversity"
        settings = [f"l = {d['l']:g}"] + ([f"c = {d['c']:g}"] if d.get("c") is not None else [])
    else:
        name = str(d.get("model"))
        settings = [f"{key} = {value}" for key, value in d.items() if key not in ("model", "sensitive")]
    on = f" of {d['sensitive']!r}" if "sensitive" in d else ""
    return f"{name}{on} ({', '.join(settings)})"


def breaking_models(evaluator: NodeEvaluator, node: Node) -> str:
    """The privacy models that break at a node, each with the rows it alone would suppress there."""
    partition = evaluator.partition(node, with_rows=True)
    parts = []
    for model in evaluator.models:
        rows = int(partition.sizes[model.violating(partition, evaluator.table)].sum())
        if rows:
            parts.append(f"{model_text(model.describe())}: {rows} row{'s' if rows != 1 else ''}")
    return ", ".join(parts)


def no_solution_advice(config: Config, evaluator: NodeEvaluator, least: LeastSuppressed) -> str:
    """Why no node is feasible and what would make one feasible: the suppression limit that the node suppressing
    fewest rows needs (computed, not guessed), and which models break there."""
    n = evaluator.table.n
    e = least.evaluation
    need = e.suppressed / n if n else 0.0
    enough = math.ceil(need * 10_000 - 1e-9) / 10_000  # rounded up: floor(enough * n) must reach e.suppressed
    node = list(e.node)
    head = (f"no transformation satisfies the privacy model with suppression limit {config.suppression:.2%} "
            f"({evaluator.max_suppressed} of {n} rows)")
    if least.proved:
        where = "the most general node" if e.node == tuple(evaluator.table.heights) else f"node {node}"
        what = (f"; no node suppresses fewer rows than {where}, which suppresses {e.suppressed} of {n} rows "
                f"({need:.2%}). Raise --suppression to at least {enough:.4f}")
    else:
        what = (f"; the most general node suppresses {e.suppressed} of {n} rows ({need:.2%}): --suppression "
                f"{enough:.4f} makes it feasible (a lower node may need less: the lattice is too large to scan "
                "for the advice)")
    return (f"{head}{what}, or relax what breaks there ({breaking_models(evaluator, e.node)}), or use hierarchies "
            "that generalize further")


def search(prepared: Prepared, progress: Callable[[int, Evaluation | None], None] | None = None) -> SearchResult:
    """Run the configured search on a prepared problem, serially or on the configured workers.

    Parameters
    ----------
    prepared
        The problem (`prepare`); its `config` names the algorithm, its options, limits, seed and workers.
    progress
        Called as `progress(evaluations, best_so_far)` while the search runs (see `anonymize`); an object with
        a `begin(budget, time_limit, space)` method is told first the evaluation budget that ends the search
        (the limit given, else the algorithm's own, e.g. the GA's; None if neither), the time limit and the
        number of nodes in the box, and one with a `close()` method is closed when the search ends.

    Returns
    -------
    SearchResult
        The best node found (or None), the evaluations, and why the search stopped (`stopped`: "interrupted"
        after Ctrl-C, with the best found so far).
    """
    config = prepared.config
    algorithm = make_search(config.algorithm, config.options)
    limits = Limits(config.max_evaluations, config.time_limit, config.seed, progress)
    begin = getattr(progress, "begin", None)
    if begin is not None:
        begin(config.max_evaluations or getattr(algorithm, "max_evaluations", None), config.time_limit,
              prepared.box.size)
    try:
        # Serial unless config asks for workers; the pool / Dask client and cluster are closed when it ends.
        with parallel.evaluator_for(prepared.evaluator, config.jobs, config.backend, config.scheduler,
                                    config.batch_size, connect_timeout=config.connect_timeout) as evaluator:
            return algorithm.run(prepared.problem(evaluator), limits)
    finally:
        close = getattr(progress, "close", None)
        if close is not None:
            close()


def release(prepared: Prepared, node: Node, suppressed: np.ndarray, drop_suppressed: bool) -> Table:
    """The anonymized table: QIs generalized to `node`, identifiers replaced by `*`, suppressed rows with
    `*` in every QI (or dropped). Same columns and row order as the input. Built from codes: every column is
    a CodedColumn (no string per row), which `Table.iter_rows` writes out a chunk at a time."""
    table, config = prepared.table, prepared.config
    keep = None if not drop_suppressed else ~suppressed
    values: dict[str, Sequence[str]] = {}
    for qi, level in zip(prepared.encoded.qis, node):
        labels = qi.labels[level]
        star = labels.index(SUPPRESSED) if SUPPRESSED in labels else len(labels)
        codes = qi.codes[level].astype(code_dtype(len(labels) + 1))  # a copy, with room for `*`
        codes[suppressed] = star
        values[qi.name] = CodedColumn(codes if keep is None else codes[keep],
                                      labels if star < len(labels) else labels + (SUPPRESSED,))
    rows = table.n if keep is None else int(keep.sum())
    out: dict[str, Sequence[str]] = {}
    for column in table.columns:
        if column in values:
            out[column] = values[column]
        elif column in config.identifiers:
            out[column] = CodedColumn(np.zeros(rows, dtype=np.uint8), (SUPPRESSED,))
        else:
            data = table.values[column]
            if keep is None:
                out[column] = data
            elif isinstance(data, CodedColumn):
                out[column] = CodedColumn(data.codes[keep], data.labels)
            else:
                out[column] = [v for v, k in zip(data, keep) if k]
    return Table(table.columns, out, None, table.separator)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM on the command line) stopped the search: nothing was released.

    A KeyboardInterrupt, as Python code expects of Ctrl-C, that carries what the search had found:
    `prepared` and `result` (a SearchResult with `stopped` "interrupted"); `best()` releases that best node
    so far in memory (a Result), or returns None when no feasible node had been found yet.
    """

    def __init__(self, prepared: Prepared, result: SearchResult) -> None:
        super().__init__("interrupted")
        self.prepared, self.result = prepared, result

    def best(self) -> Result | None:
        return None if self.result.best is None else finish(self.prepared, self.result)


def anonymize(data: object, config: Config, progress: Callable[[int, Evaluation | None], None] | None = None,
              models: list[PrivacyModel] | None = None, objective: object | None = None, *,
              warn: Callable[[str], None] | None = None) -> Result:
    """Anonymize a table under `config`: prepare, search, release the best node with its report.

    This is the one run path: `kgen anonymize` and `kgen demo` call it with their progress bar and warnings.

    Parameters
    ----------
    data
        The table: a `kgen.Table`, a CSV path, a mapping of column name to values, or a pandas DataFrame
        (with `config.partitioned`: what `kgen.runners.partitioned` reads, e.g. a Parquet/CSV glob).
    config
        What to anonymize and how (`kgen.Config`).
    progress
        Called as `progress(evaluations, best_so_far)` during the search (`best_so_far` an Evaluation, or None
        before a feasible node is found); see `search` for its optional `begin` and `close` methods
        (`kgen.cli.progress.ProgressBar` has both).
    models
        The privacy models; default: those of `config` (`models_for`).
    objective
        The objective to minimize; default: `config.metric`.
    warn
        Called with each warning of the run (`run_warnings`: a column that looks like an identifier but has
        no role, more jobs than cores) before the search; they are in the report's `warnings` either way.

    Returns
    -------
    Result
        The released table, the chosen node's evaluation, the search result, the report (`kgen.report.build`) and
        the suppressed rows. Nothing is written: `kgen.write_release` writes and checks the files.

    Raises
    ------
    InputError
        Bad input or configuration (one line naming file, row and column); with `config.strict`, a warning.
    NoSolutionError
        No node satisfies the privacy models within the suppression limit (with what would help).
    Interrupted
        Ctrl-C during the search (a KeyboardInterrupt carrying the best found so far).
    """
    if config.partitioned:
        return anonymize_partitioned(data, config, progress)
    prepared = prepare(data, config, models, objective)
    if warn is not None:
        for message in run_warnings(prepared.table, config):
            warn(message)
    result = search(prepared, progress)
    if result.stopped == Stopped.INTERRUPTED:
        raise Interrupted(prepared, result)
    return finish(prepared, result)


def anonymize_partitioned(data: object, config: Config, progress: Callable[[int, Evaluation | None], None] | None,
                          output: str | None = None) -> dict:
    """`config.partitioned`: row-partitioned evaluation on Dask (`kgen.runners.partitioned`, docs/partitioned.md). The
    release (when `output`, a new folder, is given) is written and checked there, part by part; returns the
    report dict."""
    try:  # imported only here: it needs Dask, and only tables beyond one worker need it
        partitioned = importlib.import_module("kgen.run.partitioned")
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if error.name == "kgen.run.partitioned":
            raise InputError("--partitioned (Config.partitioned) needs the kgen.run.partitioned module, which "
                             "this installation of kgen does not have") from None
        if missing in ("dask", "distributed", "pandas", "pyarrow"):
            raise InputError(f"--partitioned needs {missing}: pip install \"kgen[distributed,pandas,parquet]\""
                             ) from None
        raise
    return partitioned.anonymize(data, config, output, progress=progress)


def finish(prepared: Prepared, result: SearchResult) -> Result:
    """Release the best node of a search with its report.

    Parameters
    ----------
    prepared, result
        The prepared problem and the result of a search on it (`search`).

    Returns
    -------
    Result
        The release of `result.best`, with its report (`kgen.report.build.anonymize_report`).

    Raises
    ------
    NoSolutionError
        The search found no feasible node. "No solution" is stated only when the search proves it (it
        completed: with feasibility not monotone, `prepare` leaves the decision to the search), with the
        suppression limit that the closest node needs; otherwise the message says the search did not complete.
    """
    config = prepared.config
    if result.best is None:
        if result.stopped == Stopped.COMPLETE and result.closest is not None:
            least = LeastSuppressed(result.closest, True, result.evaluations)
            raise NoSolutionError(no_solution_advice(config, prepared.evaluator, least), file=prepared.table.source)
        raise NoSolutionError(f"the search ({result.algorithm}, stopped: {result.stopped}) found no feasible "
                              f"node in {result.evaluations} evaluations; raise --max-evaluations or "
                              "--time-limit, or use another algorithm (bestfirst is exact and evaluates the fewest "
                              "nodes): a search that did not complete does not prove that no node is feasible")
    evaluation = result.best
    suppressed = prepared.evaluator.suppressed_rows(evaluation.node)
    released = release(prepared, evaluation.node, suppressed, config.drop_suppressed)
    table = prepared.table
    report = reporting.anonymize_report(prepared, result, evaluation, suppressed, released,
                                        unnamed_columns(table, config), run_warnings(table, config))
    return Result(released, evaluation, result, report, suppressed)


__all__ = ["Config", "Interrupted", "Prepared", "Result", "TOP", "anonymize", "finish", "prepare", "release",
           "search"]
