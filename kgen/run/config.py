"""Configuration of an anonymization run, and the checks of it that need no table.

The command line and the Python API build the same `Config` and go through the same checks
(`Config.check`, called by `kgen.run.pipeline.validate`), so a bad option is the same one-line InputError (exit 2)
whichever way it came in.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path

from fitness import privacy
from fitness.device_evaluator import DEVICES
from fitness.evaluator import KERNELS
from fitness.objective import WEIGHTED, parse_metric
from fitness.parameters import Constraint, is_whole
from fitness.parameters import is_real as is_number
from fitness.privacy.common import TableRef
from kgen.io import hierarchies as hierarchy_files
from kgen.io.table import DEFAULT_MISSING
from kgen.report.provenance import sha256_file
from kgen.run import dp
from kgen.run.algorithms import make_search
from kgen.runners.settings import BACKENDS, CONNECT_TIMEOUT
from lattice.errors import InputError

TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet", ".pq", ".xlsx")  # a value that ends so is a file
MICROAGGREGATION = ("mean", "median")  # the functions of --microaggregate (kgen.run.microaggregation)
LIST_FIELDS = ("qi", "identifiers", "sensitive", "keep", "missing")
PER_QI = (("min_levels", "--min-level", "level"), ("max_levels", "--max-level", "level"),
          ("weights", "--weight", "weight"))
ROLES = (("qi", "quasi-identifier", "--qi"), ("identifiers", "identifier", "--identifier"),
         ("sensitive", "sensitive", "--sensitive"), ("keep", "kept column", "--keep"))


# Every Config field with a range or a set of choices, checked by `Config.check`. The privacy models' fields
# are declared by their families (`fitness.privacy`), each with its Constraint, and added below; the models check
# their own parameters again when they are built.
PARAMETER_CONSTRAINTS: dict[str, Constraint] = {
    "suppression": Constraint("suppression", "real", low=0, high=1),
    "seed": Constraint("the seed", "whole", finite=False),
    "max_evaluations": Constraint("max evaluations", "whole", low=1, optional=True),
    "time_limit": Constraint("the time limit", "real", low=0, above=True, optional=True),
    "kernel": Constraint("kernel", "choice", choices=KERNELS),
    "device": Constraint("device", "choice", choices=DEVICES),
    "backend": Constraint("backend", "choice", choices=BACKENDS),
    "connect_timeout": Constraint("the connect timeout", "real", low=0, above=True),
}


@dataclass(frozen=True)
class Settings:
    """What to anonymize and how: the one configuration of a run, from the command line or Python.

    `kgen anonymize` builds it field by field from its options (each option's name is the field's, with
    `-` for `_`, except where noted), so a TOML file given with `--config` uses the same names. A list field
    given as one string is read as comma-separated names (`qi="age,zip"`), as on the command line. `check`
    refuses settings that cannot be right on any table; `kgen.run.pipeline.validate` checks the rest against the table.

    Attributes
    ----------
    qi : sequence of str
        The quasi-identifiers, in lattice order (`--qi`).
    suppression : float
        The fraction t of rows that may be suppressed, in [0, 1]: at most floor(t * n) rows (default 0).
    identifiers : sequence of str
        Direct identifiers, replaced by `*` in the release (`--identifier`).
    sensitive : sequence of str
        Sensitive columns, released as they are; `l` and `t_closeness` apply to each.
    keep : sequence of str
        Columns released as they are (ARX's insensitive attributes, `--keep`). Every column of the table must
        have a role (QI, identifier, sensitive or kept), else the run is refused: a column nobody named is
        how a direct identifier leaves in clear.
    keep_unnamed : bool
        Release every column no role names as it is (`--keep-unnamed`), instead of refusing the run.
        A kept column that looks like an identifier is warned about (`kgen.IdentifierWarning`).
    allow_k1 : bool
        Allow k = 1 (`--allow-k1`): k-anonymity with k = 1 protects no one, so it must be asked for.
    metric : str
        The information loss to minimize (`fitness.objective.OBJECTIVES`, or "arx-loss:G": ARX's Loss with the
        gs-factor G in [0, 1]; docs/metrics.md). Default "log".
    hierarchies : mapping of str to object
        Per QI, its hierarchy: an ARX CSV file, a builder spec (decimal, intervals:W1,W2, mask, date[:FMT],
        flat) or a `lattice.hierarchy.Hierarchy` (`kgen.io.hierarchies`); from `--hierarchy COL=SPEC`.
    hierarchy_dir : str or None
        A folder searched for `*hierarchy_<QI>.csv` files for QIs without one in `hierarchies`.
    missing : sequence of str
        The tokens that mean "missing" (default: empty, `?`, `NA`).
    encoding : str
        The text encoding of a CSV path given as data (`--encoding`): utf-8 (default, with or without a
        byte-order mark), latin-1, cp1252 or utf-16 (with its byte-order mark).
    algorithm : str
        The search (`kgen.run.algorithms.REGISTRY`, or k-optimize; docs/search.md). Default "auto": the
        certified search with the GA (preset "memetic") as its primal side, the proved optimum or the best node
        found with its proved interval (docs/certify.md#auto); "kgen" is the paper's GA.
    options : mapping of str to object
        The algorithm's own parameters (its dataclass fields, e.g. `preset`, `selection`; the GA's
        population size as `ga_population`); from `--ga-population`, `--preset`, `--selection`.
    seed : int
        The random seed of the search: the same seed gives the same result.
    max_evaluations : int or None
        Stop after this many distinct evaluations; None: no limit (the algorithm's own, if any).
    time_limit : float or None
        Stop after this many seconds; None: no limit.
    kernel : {"fast", "bitset"}
        The class-counting kernel; results do not depend on it.
    prune : bool
        Pre-prune the lattice to the minimal levels that can be feasible (`--no-prune`: False).
    drop_suppressed : bool
        Leave suppressed rows out of the release instead of writing them with `*` in every QI.
    jobs : int
        Parallel workers evaluating nodes (1: serial; -1: every usable core); results do not depend on it.
    backend : {"loky", "threading", "dask"}
        Where the workers run (joblib's loky processes, threads, or a Dask cluster; `kgen.runners.parallel`).
    scheduler : str or None
        A running Dask scheduler's address (with backend "dask"); None: a local cluster of `jobs` workers.
    batch_size : int or None
        Nodes per parallel task; None: about two tasks per worker per population.
    connect_timeout : float
        Seconds to reach `scheduler` before giving up (exit 6).
    strict : bool
        Warnings (a column that looks like an identifier but has no role, formula cells, more jobs than cores)
        become errors.
    device : {"cpu", "gpu", "array"}
        Where nodes are evaluated: cpu, gpu (CuPy, `pip install "kgen[gpu]"`) or array (the GPU code path on
        numpy, for tests); `fitness.device_evaluator`. Results do not depend on it.
    bound : bool
        Add the certified lower bound (and gap) that the search's infeasible evaluations prove to the report
        (one small integer program; docs/certify.md); `--no-bound`: False.
    partitioned : bool
        Row-partitioned evaluation on Dask for tables larger than one worker (`kgen.runners.partitioned`;
        docs/partitioned.md).
    node : mapping of str to int, or None
        Publish this node (one level per QI, e.g. from `kgen frontier`) instead of searching: the fixed-node
        search (`lattice.search.fixed`), refused in one line when infeasible; `--node QI=L,...` (a string
        "age=1,sex=0" is read the same way). None: search with `algorithm`.
    local_recoding : bool
        After the node is chosen, generalize the rows it would suppress again, at nodes of their own (ARX's
        iterative local recoding; `kgen.run.recoding`, docs/local-recoding.md).
    microaggregate : mapping of str to str
        Per numeric QI, "mean" or "median": its released value in each class is the class's mean / median of
        the original values (`kgen.run.microaggregation`); from `--microaggregate QI=FUNCTION`.
    min_levels : mapping of str to int
        Per QI, the least level the release may use (`--min-level QI=L`): the search box shrinks to the
        limits before pre-pruning, so every search and the certified bound work inside them (docs/search.md).
        QIs not named are free (0 to the top).
    max_levels : mapping of str to int
        Per QI, the greatest level the release may use (`--max-level QI=L`).
    weights : mapping of str to float
        Per QI, its weight in the objective (`--weight QI=W`, W > 0; QIs not named weigh 1): for log, loss,
        ncp and entropy only (docs/metrics.md). All 1 is the unweighted objective.
    practical_monotonicity : bool
        ARX's "practical monotonicity" (`--practical-monotonicity`, with `algorithm` flash only): Flash treats
        every model and the loss as monotone, a heuristic where they are not (docs/search.md#flash); the
        report and summary say so. False: the search is exact.

    The privacy models' parameters are fields of `Config` too, one per parameter of each family in
    `fitness.privacy` (docs/privacy-models.md).
    """

    qi: Sequence[str]
    suppression: float = 0.0
    identifiers: Sequence[str] = ()
    sensitive: Sequence[str] = ()
    keep: Sequence[str] = ()
    keep_unnamed: bool = False
    allow_k1: bool = False
    metric: str = "log"
    hierarchies: Mapping[str, object] = field(default_factory=dict)
    hierarchy_dir: str | None = None
    missing: Sequence[str] = DEFAULT_MISSING
    encoding: str = "utf-8"
    algorithm: str = "auto"
    options: Mapping[str, object] = field(default_factory=dict)
    seed: int = 0
    max_evaluations: int | None = None
    time_limit: float | None = None
    kernel: str = "fast"
    prune: bool = True
    drop_suppressed: bool = False
    jobs: int = 1
    backend: str = "loky"
    scheduler: str | None = None
    batch_size: int | None = None
    connect_timeout: float = CONNECT_TIMEOUT
    strict: bool = False
    device: str = "cpu"
    bound: bool = True
    partitioned: bool = False
    node: Mapping[str, int] | None = None
    local_recoding: bool = False
    microaggregate: Mapping[str, str] = field(default_factory=dict)
    min_levels: Mapping[str, int] = field(default_factory=dict)
    max_levels: Mapping[str, int] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)
    practical_monotonicity: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.node, str):
            object.__setattr__(self, "node", parse_node(self.node))
        for name in LIST_FIELDS:  # "a,b" -> ["a", "b"]: a string must not be read as its characters
            value = getattr(self, name)
            if isinstance(value, str):
                parts = value.split(",")
                object.__setattr__(self, name, parts if name == "missing" else [p.strip() for p in parts if p.strip()])

    def check(self) -> None:
        """Raise an InputError (exit 2) for settings that cannot be right on any table."""
        for name, role, option in ROLES:
            names = getattr(self, name)
            if isinstance(names, (bytes, Mapping)) or not isinstance(names, Sequence):
                raise InputError(f"{option} must be a list of column names, got {type(names).__name__}")
            seen = set()
            for column in names:
                if not isinstance(column, str) or not column.strip():
                    raise InputError(f"{option}: column names must be non-empty text, got {column!r}")
                if column in seen:
                    raise InputError(f"is named twice as a {role} ({option})", column=column)
                seen.add(column)
        roles: dict[str, str] = {}
        for name, role, _ in ROLES:
            for column in getattr(self, name):
                if column in roles:
                    raise InputError(f"is given two roles: {roles[column]} and {role}; give each column one role",
                                     column=column)
                roles[column] = role
        for name, constraint in PARAMETER_CONSTRAINTS.items():
            constraint.check(getattr(self, name))
        for p in privacy.parameters():
            p.constraint.check(getattr(self, p.name))
        if getattr(self, "k", 2) == 1 and not self.allow_k1:
            raise InputError("k = 1 protects no one (every row may be unique): give --allow-k1 (allow_k1=True) to "
                             "release it anyway")
        self.check_node()
        self.check_refinements()
        self.check_per_qi()
        dp.check_settings(self)  # what differential privacy refuses (kgen/run/dp.py)
        parse_metric(self.metric)
        if not isinstance(self.practical_monotonicity, bool):
            raise InputError(f"practical-monotonicity must be true or false, got {self.practical_monotonicity!r}")
        if self.node is None:  # an unknown algorithm, or options it refuses, before any data is read
            make_search(self.algorithm, self.options, self.practical_monotonicity)

    def check_node(self) -> None:
        """A chosen node names every QI once with a whole level >= 0 (the heights are checked on the lattice)."""
        if self.node is None:
            return
        if self.partitioned:
            raise InputError("--node is not available with --partitioned: publish the chosen node in memory")
        if not isinstance(self.node, Mapping):
            raise InputError(f"--node must map each quasi-identifier to a level (QI=L,...), got {self.node!r}")
        unknown = [q for q in self.node if q not in self.qi]
        if unknown:
            raise InputError(f"--node names {unknown[0]!r}, which is not a quasi-identifier (--qi)")
        missing = [q for q in self.qi if q not in self.node]
        if missing:
            raise InputError(f"--node gives no level for the quasi-identifier {missing[0]!r}; give one per QI")
        for q, level in self.node.items():
            if isinstance(level, bool) or not isinstance(level, int) or level < 0:
                raise InputError(f"--node: the level of {q!r} must be a whole number >= 0, got {level!r}")

    def node_levels(self) -> tuple[int, ...] | None:
        """The chosen node in QI order (None: none chosen)."""
        return None if self.node is None else tuple(int(self.node[q]) for q in self.qi)

    def check_refinements(self) -> None:
        """Microaggregation names QIs with mean or median; neither it nor local recoding on row partitions."""
        if not isinstance(self.microaggregate, Mapping):
            raise InputError("--microaggregate must map quasi-identifiers to mean or median, got "
                             f"{type(self.microaggregate).__name__}")
        for column, function in self.microaggregate.items():
            if column not in self.qi:
                raise InputError("--microaggregate: not a quasi-identifier (--qi)", column=str(column))
            if function not in MICROAGGREGATION:
                raise InputError(f"--microaggregate {column}={function}: choose mean or median", column=column)
        if self.partitioned and (self.local_recoding or self.microaggregate):
            raise InputError("--local-recoding and --microaggregate work on a table in memory, not with "
                             "--partitioned")

    def check_per_qi(self) -> None:
        """The per-QI limits and weights: keys that are QIs, whole levels >= 0 with min <= max, weights finite
        and > 0, and a metric that has weights. Levels above a hierarchy's top are refused when the hierarchies
        are built (`kgen.run.prepare.limited_box`).

        Why not a weight of 0: the loss would not grow when that QI is generalized, so it would go to its top
        for nothing, and the searches that stop above a feasible node (OLA) rely on the loss growing with
        every step to break ties by suppression; fix a QI's level with --min-level/--max-level instead."""
        for name, option, kind in PER_QI:
            value = getattr(self, name)
            if not isinstance(value, Mapping):
                raise InputError(f"{option} must map quasi-identifiers to values, got {type(value).__name__}")
            for column, x in value.items():
                if column not in self.qi:
                    raise InputError(f"{option} names {column!r}, which is not a quasi-identifier (--qi)")
                ok = is_whole(x) and x >= 0 if kind == "level" else is_number(x) and math.isfinite(x) and x > 0
                if not ok:
                    wanted = "a whole number >= 0" if kind == "level" else "a finite number > 0"
                    raise InputError(f"{option} {column}: the {kind} must be {wanted}, got {x!r}")
        for column, low in self.min_levels.items():
            high = self.max_levels.get(column)
            if high is not None and low > high:
                raise InputError(f"--min-level {column}={low} is above --max-level {column}={high}")
        if self.weights and any(w != 1 for w in self.weights.values()) and self.metric not in WEIGHTED:
            raise InputError(f"the metric {self.metric!r} takes no weights (--weight); weighted metrics: "
                             f"{', '.join(WEIGHTED)}")

    def weight_vector(self) -> tuple[float, ...]:
        """One weight per QI, in lattice order (1 where none is given)."""
        return tuple(float(self.weights.get(column, 1.0)) for column in self.qi)

    def model_values(self) -> dict[str, object]:
        """The privacy models' parameters, by name, as given (a file's path for a resource parameter): what the
        report saves."""
        return {p.name: getattr(self, p.name) for p in privacy.parameters()}

    def resolved_values(self) -> dict[str, object]:
        """The privacy models' parameters with each named file read (`resolve_resources`): what
        `fitness.privacy.build_models` reads."""
        return resolve_resources(self.model_values())


def resolve_resources(values: Mapping[str, object]) -> dict[str, object]:
    """`values` (a run's model parameters, or a saved model description) with the path of every resource
    parameter (`fitness.privacy.Parameter.resource`) replaced by what it names: a hierarchy file read as an
    ARX hierarchy. The one place kgen reads a model's files (fitness reads none); a missing or malformed file
    is an InputError naming it."""
    out = dict(values)
    for p in privacy.resource_parameters():
        path = out.get(p.name)
        if isinstance(path, str):
            out[p.name] = hierarchy_files.load_arx(path, p.name) if p.resource == "hierarchy" else \
                table_ref(path, p.option, column_allowed="COLUMN" in (p.metavar or ""))
    return out


def table_ref(path: str, option: str, column_allowed: bool) -> TableRef | str:
    """A "table" resource (a population, a research subset) as its path and SHA-256 (`TableRef`); the rows
    themselves are read by `kgen.run.population`. With `column_allowed`, a value that names no file and does
    not look like a path is a column of the input (`--research-subset COLUMN`) and stays text."""
    file = Path(path)
    if file.is_file():
        return TableRef(path, sha256_file(file))
    if column_allowed and not (os.sep in path or "/" in path or file.suffix.lower() in TABLE_SUFFIXES):
        return path
    raise InputError(f"{option}: no such file", file=path)


def parse_node(text: str) -> dict[str, int]:
    """`QI=L,QI=L,...` as {QI: L}: the form `--node`, run.toml and the frontier's commands use."""
    node: dict[str, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        column, sep, level = item.rpartition("=")
        if not sep or not column.strip():
            raise InputError(f"--node expects QI=LEVEL pairs separated by commas, got {item!r}")
        try:
            value = int(level)
        except ValueError:
            raise InputError(f"--node: the level of {column.strip()!r} must be a whole number, got {level!r}") from None
        if column.strip() in node:
            raise InputError(f"--node names {column.strip()!r} twice")
        node[column.strip()] = value
    return node


# The one Config: the run's settings above plus every privacy model family's parameters as fields of the same
# names (`fitness.privacy`): `Config(qi=..., k=5, l=2)`, run.toml's `l = 2` and `--l 2` reach the same field, and
# a new model's parameters become fields without an edit here.
def _config_doc() -> str:
    """Settings' docstring, its last paragraph replaced by the model fields, each with its help."""
    fields = "".join(f"    {p.name} : {p.constraint.kind}, default {p.default!r}\n        {p.help} ({p.option})\n"
                     for p in privacy.parameters())
    head = (Settings.__doc__ or "").split("\n\n    The privacy models'")[0]
    return f"{head}\n{fields}\n    The fields from k on are the privacy models' parameters (`fitness.privacy`).\n    "


Config = make_dataclass(
    "Config", [(p.name, object, field(default=p.default)) for p in privacy.parameters()], bases=(Settings,),
    frozen=True, namespace={"__module__": __name__, "__doc__": _config_doc()},
)
