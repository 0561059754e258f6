"""Configuration of an anonymization run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kgen.table import DEFAULT_MISSING


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
    address; without it a local cluster); jobs 1 on a local backend is serial. Results do not depend on them.
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
    bound: bool = True
