"""Config and data in, a Prepared problem out: validation, hierarchies, encoding, models, the evaluator and
the pre-pruned box (the first step of the one run path)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from fitness import privacy
from fitness.device_evaluator import make_evaluator
from fitness.encoding import EncodedQI, EncodedTable, encode_codes, select_rows
from fitness.evaluator import NodeEvaluator
from fitness.models import PrivacyModel
from fitness.objective import make_objective
from kgen.io import hierarchies as hierarchy_specs
from kgen.io.table import SUPPRESSED, CodedColumn, Table, as_table
from kgen.run import dp
from kgen.run.advice import least_suppressed, no_solution_advice
from kgen.run.algorithms import CUT_POINT
from kgen.run.config import Config
from kgen.run.koptimize import with_cut_points
from kgen.run.microaggregation import leaf_numbers
from kgen.run.population import population_error, stacked
from kgen.run.population import split as population_split
from kgen.run.roles import check_roles, run_warnings
from kgen.run.values import integer_labels, normalize_codes, stripped_codes
from kgen.runners import parallel
from lattice.box import Box
from lattice.errors import InputError, NoSolutionError, clip
from lattice.hierarchy import Hierarchy
from lattice.node import Node
from lattice.pruning import minimum_levels
from lattice.search.base import Evaluator, Problem


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
                       level_costs=self.level_costs,
                       level_sizes=tuple(tuple(q.cards) for q in self.encoded.qis))

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


def validate(table: Table, config: Config) -> None:
    """Raise an InputError for a configuration that cannot work on this table (the one place where the CLI's
    options and the Python API's Config are checked): every column has a role (`check_roles`). With
    `config.strict`, the warnings of `run_warnings` are errors too."""
    if not config.qi:
        raise InputError("no quasi-identifiers given (--qi)")
    config.check()
    if table.n == 0:
        raise InputError("has a header but no data rows: nothing to anonymize", file=table.source)
    for columns in (config.qi, config.identifiers, config.sensitive):
        for column in columns:
            table.column(column)
    check_roles(table, config)
    for column in config.hierarchies:
        if column not in config.qi:
            raise InputError(f"a hierarchy is given for {column!r}, which is not a quasi-identifier",
                             column=column)
    if config.k > table.n and config.suppression < 1.0:  # with t = 1, as with k = n: every row may be suppressed
        raise InputError(f"k = {config.k} is larger than the number of rows ({table.n}): no release can "
                         "be k-anonymous", file=table.source)
    parallel.validate_options(config.jobs, config.backend, config.scheduler, config.batch_size,
                              config.connect_timeout)
    require_possible(table, config)
    if config.strict:
        warnings = run_warnings(table, config)
        if warnings:
            raise InputError(f"{warnings[0]} (--strict makes this an error)", file=table.source)


def require_possible(table: Table, config: Config) -> None:
    """Refuse a model no release of this table can meet, as its family judges from the sensitive column's
    number of distinct values (`ModelFamily.impossible`): an l above it, for example."""
    values = config.model_values()
    judges = [f for f in privacy.FAMILIES.values() if f.impossible is not None and f.asked(values)]
    for column in config.sensitive if judges else ():
        distinct = len({v.strip() for v in table.column(column)})
        for family in judges:
            why = family.impossible(values, distinct)  # type: ignore[misc]
            if why:
                raise InputError(why, file=table.source, column=column)


def models_for(config: Config) -> list[PrivacyModel]:
    """The models `config` asks for, family by family from the registry (`fitness.privacy`): k-anonymity, then
    each other family whose parameters are set (l-diversity and t-closeness on every sensitive column, ...)."""
    return privacy.build_models(config.resolved_values(), config.sensitive)


def prepare(data: object, config: Config, models: list[PrivacyModel] | None = None,
            objective: object | None = None, *, require_feasible: bool = True,
            progress: Callable[[int, object], None] | None = None) -> Prepared:
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
    progress
        The run's progress callback (`kgen.run.pipeline.search`): a search that runs while preparing
        (k-Optimize chooses its intervals here) reports to it as the lattice search does later.

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
    models = models if models is not None else models_for(config)
    table, population = population_split(as_table(data, config.encoding), config, models)
    validate(table, config)
    if population is not None and config.algorithm in CUT_POINT:
        raise InputError(f"{config.algorithm} cannot evaluate a model with a population (--research-subset, "
                         "--population): choose a lattice search")
    if config.algorithm in CUT_POINT:  # it chooses its own intervals: run it, then release its node
        if config.min_levels or config.max_levels:
            raise InputError(f"{config.algorithm} chooses its own one-level intervals instead of the hierarchies' "
                             "levels: --min-level and --max-level do not apply to it")
        config = with_cut_points(table, config, progress)
    table, models, config = dp.for_run(table, config, models)
    columns, encoded = encode_table(table, population, config)
    for qi in (q for q in encoded.qis if q.name in config.microaggregate):
        leaf_numbers(qi)  # a microaggregated QI holds numbers only: refused before the search, not after
    evaluator = make_evaluator(encoded, models, config.suppression,
                               objective if objective is not None else config_objective(config),  # type: ignore[arg-type]
                               config.kernel, config.device)
    box = search_box(config, evaluator, encoded.names, require_feasible, table.source)
    return Prepared(table, config, {c.name: c.hierarchy for c in columns}, {c.name: c.source for c in columns},
                    {c.name: c.values for c in columns}, encoded, evaluator, box, time.perf_counter() - start)


def encode_table(table: Table, population: Table | None, config: Config) -> tuple[list[PreparedQI], EncodedTable]:
    """The QIs and the encoded table; with a population (`kgen.run.population`), one encoding of the released
    rows then the population's, split so that both share codes (`EncodedTable.population`)."""
    joint = table if population is None else stacked(table, population, config.qi)
    try:
        columns = [encode_qi(joint, config, column) for column in config.qi]
    except InputError as error:
        raise error if population is None else population_error(error, table, population) from None
    sensitive = {c: stripped_codes(*table.codes(c)) for c in config.sensitive}
    if population is None:
        return columns, EncodedTable(table.n, tuple(c.encoded for c in columns), sensitive)
    encoded = EncodedTable(joint.n, tuple(c.encoded for c in columns))  # the sensitive columns: released rows only
    columns = [replace(c, values=c.values[: table.n]) for c in columns]
    return columns, replace(select_rows(encoded, np.arange(table.n)), sensitive=sensitive,
                            population=select_rows(encoded, np.arange(table.n, joint.n)))


@dataclass(frozen=True)
class PreparedQI:
    """One QI ready to encode: its values (normalized), hierarchy, where the hierarchy came from, encoding."""

    name: str
    values: CodedColumn
    hierarchy: Hierarchy
    source: str
    encoded: EncodedQI


def encode_qi(table: Table, config: Config, column: str) -> PreparedQI:
    """Normalize a QI column, resolve its hierarchy and encode it: per distinct value, and per row only array
    operations on codes."""
    tokens = tuple(config.missing)
    numbers = integer_labels(table.column(column), tokens)
    if numbers is not None:  # canonical integers, no missing token among them: nothing to normalize
        values = table.column(column)
        codes, labels, token, distinct = values.codes, values.labels, None, values.labels  # type: ignore[attr-defined]
    else:
        codes, labels, token = normalize_codes(*table.codes(column), tokens)
        values = CodedColumn(codes, labels)
        distinct = [v for v in labels if v != token]
    hierarchy, source = hierarchy_specs.resolve(column, distinct, token, config.hierarchies.get(column),
                                                config.hierarchy_dir, table.source, column_values=values,
                                                row_number=table.row_number, numbers=numbers)
    require_no_marker_below_top(column, hierarchy, source)
    return PreparedQI(column, values, hierarchy, source, encode_codes(column, codes, labels, hierarchy))  # type: ignore[arg-type]


def require_no_marker_below_top(column: str, hierarchy: Hierarchy, source: str) -> None:
    """Refuse a hierarchy with the suppression marker `*` below its top level: the release writes suppressed
    rows as `*` in every QI, so a class generalized to `*` there would merge with them in the file (and the
    independent check would rightly fail the release). The builders never make one (mask writes `**`)."""
    for leaf, path in hierarchy.paths.items():
        level = next((i for i in range(1, len(path) - 1) if path[i] == SUPPRESSED), None)
        if level is not None:
            raise InputError(f"the hierarchy ({clip(source)}) generalizes {clip(leaf)} to {SUPPRESSED!r} at level "
                             f"{level}, below its top: {SUPPRESSED!r} marks suppressed rows in a release; use "
                             "another label there (e.g. '**')", column=column)


def config_objective(config: Config) -> object:
    """The objective of `config.metric`, weighted by `config.weights` when any weight is given."""
    return make_objective(config.metric, config.weight_vector() if config.weights else None)


def limits_box(config: Config, names: Sequence[str], heights: Node) -> Box:
    """The box the per-QI limits leave (`--min-level`, `--max-level`; unnamed QIs 0 to the top): an InputError
    (exit 2) for a level above the top of its QI's hierarchy, which is known only now."""
    lower, upper = [], []
    for name, h in zip(names, heights):
        for option, levels in (("--min-level", config.min_levels), ("--max-level", config.max_levels)):
            if levels.get(name, 0) > h:
                raise InputError(f"{option} {name}={levels[name]} is above the top of its hierarchy: its levels run "
                                 f"from 0 to {h}", column=name)
        lower.append(int(config.min_levels.get(name, 0)))
        upper.append(int(config.max_levels.get(name, h)))
    return Box(tuple(lower), tuple(upper))


def search_box(config: Config, evaluator: NodeEvaluator, names: Sequence[str], require_feasible: bool,
               source: str | None) -> Box:
    """The box the search explores: the per-QI limits (`limits_box`), then pre-pruned to the minimal levels
    that can be feasible inside them.

    Only with monotone feasibility does an infeasible top of the box prove that no node in it is feasible
    (NoSolutionError, with the suppression that would help); otherwise (t > 0 with entropy or recursive
    l-diversity or t-closeness) a lower node may be feasible, and the search decides (`finish`)."""
    limits = limits_box(config, names, evaluator.table.heights)
    if require_feasible and evaluator.monotone_feasibility and not evaluator.feasible(limits.upper):
        least = least_suppressed(evaluator, limits.upper, box=limits)
        raise NoSolutionError(no_solution_advice(config, evaluator, least), file=source)
    if config.prune and evaluator.monotone_feasibility:
        return Box(minimum_levels(limits.upper, evaluator.feasible, limits.lower), limits.upper)
    return limits


@dataclass(frozen=True)
class LevelPreview:
    """One level of a QI's hierarchy as the run would release it: its labels with the rows they hold."""

    level: int
    counts: dict[str, int]  # label -> rows, in the hierarchy's label order


def preview_levels(table: Table, column: str, spec: object | None, missing: Sequence[str] = (),
                   hierarchy_dir: str | None = None) -> tuple[PreparedQI, list[LevelPreview]]:
    """Per level of `column`'s hierarchy, every label and its row count, built by the run's own path
    (`encode_qi`: the same normalization, missing token and hierarchy resolution), so that `kgen hierarchy`
    shows exactly the levels an anonymization would use."""
    table.column(column)
    config = Config(qi=[column], hierarchies={column: spec} if spec is not None else {},
                    hierarchy_dir=hierarchy_dir, missing=tuple(missing) if missing else Config.missing)
    prepared = encode_qi(table, config, column)
    encoded = prepared.encoded
    levels = []
    for level in range(encoded.height + 1):
        counts = np.bincount(encoded.codes[level], minlength=len(encoded.labels[level]))
        levels.append(LevelPreview(level, {label: int(c) for label, c in zip(encoded.labels[level], counts)}))
    return prepared, levels
