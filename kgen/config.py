"""Configuration of an anonymization run, and the checks of it that need no table.

The command line and the Python API build the same `Config` and go through the same checks
(`Config.check`, called by `kgen.api.validate`), so a bad option is the same one-line InputError (exit 2)
whichever way it came in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgen.table import DEFAULT_MISSING
from lattice.errors import InputError

CONNECT_TIMEOUT = 10.0  # seconds (kgen.parallel.CONNECT_TIMEOUT; repeated here to keep this module light)
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
    """What to anonymize and how.

    `qi`: quasi-identifiers in lattice order. `suppression`: the fraction t of rows that may be suppressed.
    `hierarchies`: per QI, a spec (see `kgen.hierarchies`); `hierarchy_dir`: where to look for
    `*hierarchy_<QI>.csv` files. `options`: the algorithm's own parameters (e.g. population).
    `max_evaluations` / `time_limit` / `seed`: limits shared by all algorithms.
    `l` / `l_variant` (distinct, entropy, recursive) / `c`, `t_closeness` / `t_distance` (equal, ordered): models
    on every `sensitive` column (see `kgen.api.models_for`); `metric`: the objective (`fitness.objective`).
    `jobs` / `backend` / `scheduler` / `batch_size`: parallel evaluation (see `kgen.parallel`): `jobs` workers
    of joblib's "loky" (processes), "threading" or "dask" backend (`scheduler`: a running Dask scheduler's
    address; without it a local cluster; `connect_timeout`: seconds to reach it); jobs 1 on a local backend is
    serial. Results do not depend on them. `strict`: warnings (a column that looks like an identifier but has
    no role, more jobs than cores) become errors.

    A list field given as one string is read as comma-separated names (`qi="age,zip"`), as on the command line.
    `device`: where nodes are evaluated: "cpu" (default), "gpu" (CuPy, `pip install "kgen[gpu]"`), or "array"
    (the GPU code path on numpy, for tests); see `fitness.device_evaluator`. Results do not depend on it.
    `bound`: add the certified lower bound (and gap) that the search's infeasible evaluations prove to the
    report (one small integer program; docs/certify.md); False skips it.
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
