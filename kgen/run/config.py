"""Configuration of an anonymization run, and the checks of it that need no table.

The command line and the Python API build the same `Config` and go through the same checks
(`Config.check`, called by `kgen.run.pipeline.validate`), so a bad option is the same one-line InputError (exit 2)
whichever way it came in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgen.io.table import DEFAULT_MISSING
from kgen.runners.settings import CONNECT_TIMEOUT
from lattice.errors import InputError

LIST_FIELDS = ("qi", "identifiers", "sensitive", "missing")
ROLES = (("qi", "quasi-identifier", "--qi"), ("identifiers", "identifier", "--identifier"),
         ("sensitive", "sensitive", "--sensitive"))


def is_whole(value: object) -> bool:
    """An int that is not a bool (True is an int to Python, not a count to a user)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Config:
    """What to anonymize and how: the one configuration of a run, from the command line or Python.

    `kgen anonymize` builds it field by field from its options (each option's name is the field's, with
    `-` for `_`, except where noted), so a TOML file given with `--config` uses the same names. A list field
    given as one string is read as comma-separated names (`qi="age,zip"`), as on the command line. `check`
    refuses settings that cannot be right on any table; `kgen.run.pipeline.validate` checks the rest against the table.

    Attributes
    ----------
    qi : sequence of str
        The quasi-identifiers, in lattice order (`--qi`).
    k : int
        k of k-anonymity: every released class has at least k rows (default 2).
    suppression : float
        The fraction t of rows that may be suppressed, in [0, 1]: at most floor(t * n) rows (default 0).
    identifiers : sequence of str
        Direct identifiers, replaced by `*` in the release (`--identifier`).
    sensitive : sequence of str
        Sensitive columns, released as they are; `l` and `t_closeness` apply to each.
    l : float or None
        l of l-diversity on every sensitive column; None: no l-diversity.
    l_variant : {"distinct", "entropy", "recursive"}
        The l-diversity variant; recursive (c, l)-diversity needs `c`.
    c : float or None
        c of recursive (c, l)-diversity.
    t_closeness : float or None
        t of t-closeness on every sensitive column (EMD to the whole table's distribution); None: none.
    t_distance : {"equal", "ordered"}
        The ground distance of t-closeness: equal (categories) or ordered (numbers, else label order).
    metric : str
        The information loss to minimize (`fitness.objective.OBJECTIVES`; docs/metrics.md). Default "log".
    hierarchies : mapping of str to object
        Per QI, its hierarchy: an ARX CSV file, a builder spec (decimal, intervals:W1,W2, mask, date[:FMT],
        flat) or a `lattice.hierarchy.Hierarchy` (`kgen.io.hierarchies`); from `--hierarchy COL=SPEC`.
    hierarchy_dir : str or None
        A folder searched for `*hierarchy_<QI>.csv` files for QIs without one in `hierarchies`.
    missing : sequence of str
        The tokens that mean "missing" (default: empty, `?`, `NA`).
    algorithm : str
        The search (`kgen.run.algorithms.REGISTRY`, or k-optimize; docs/search.md). Default "kgen", the GA.
    options : mapping of str to object
        The algorithm's own parameters (its dataclass fields, e.g. `population`, `preset`, `selection`);
        from `--population`, `--preset`, `--selection`.
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
    """

    qi: Sequence[str]
    k: int = 2
    suppression: float = 0.0
    identifiers: Sequence[str] = ()
    sensitive: Sequence[str] = ()
    l: float | None = None  # noqa: E741 (the model's name for it)
    l_variant: str = "distinct"
    c: float | None = None
    t_closeness: float | None = None
    t_distance: str = "equal"
    metric: str = "log"
    hierarchies: Mapping[str, object] = field(default_factory=dict)
    hierarchy_dir: str | None = None
    missing: Sequence[str] = DEFAULT_MISSING
    algorithm: str = "kgen"
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

    def __post_init__(self) -> None:
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
        if not is_whole(self.k) or self.k < 1:
            raise InputError(f"k must be a whole number >= 1, got {self.k!r}")
        if not is_number(self.suppression) or not 0.0 <= self.suppression <= 1.0:
            raise InputError(f"suppression must be a fraction in [0, 1], got {self.suppression!r}")
        if self.time_limit is not None and (not is_number(self.time_limit) or not math.isfinite(self.time_limit)
                                            or self.time_limit <= 0):
            raise InputError(f"the time limit must be a finite number of seconds > 0, got {self.time_limit!r}")
        if self.max_evaluations is not None and (not is_whole(self.max_evaluations) or self.max_evaluations < 1):
            raise InputError(f"max evaluations must be a whole number >= 1, got {self.max_evaluations!r}")
        if not is_whole(self.seed):
            raise InputError(f"the seed must be a whole number, got {self.seed!r}")
        for label, value in (("l", self.l), ("c", self.c), ("t-closeness", self.t_closeness)):
            if value is not None and (not is_number(value) or not math.isfinite(value)):
                raise InputError(f"{label} must be a finite number, got {value!r}")
        if self.device not in ("cpu", "gpu", "array"):
            raise InputError(f"unknown device {self.device!r}; choose cpu, gpu or array")
        if self.kernel not in ("fast", "bitset"):
            raise InputError(f"unknown kernel {self.kernel!r}; choose fast or bitset")
        if not is_number(self.connect_timeout) or not math.isfinite(self.connect_timeout) or self.connect_timeout <= 0:
            raise InputError(f"the connect timeout must be a finite number of seconds > 0, got "
                             f"{self.connect_timeout!r}")
