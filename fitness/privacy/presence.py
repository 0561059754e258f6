"""delta-presence (Nergiz, Atzori and Clifton 2007; ARX's `DPresence` with a `DataSubset`, SPEC section 13).

The input is the population P; what is released is a research subset S of it. An adversary who knows that a
person is in P, and sees the release, must not learn with confidence whether the person is in S: for every
class E of the generalized population, DMIN <= |E n S| / |E| <= DMAX. The evaluator counts both per class
(`EncodedTable.population`, `fitness.kernel.partition_with_population`); class sizes for k, the suppression
budget and the metrics count the released (subset) rows only.

Suppression, as ARX does it: a class that breaks the bounds is suppressed, its subset rows are removed from
the release (they are `*` rows); its population rows stay. A class of the population with no subset row has
ratio 0: with DMIN > 0 it breaks the model and cannot be suppressed (there is nothing of it in the release),
so the whole node fails (every released class is marked). That is the definition (`variant="definition"`,
the default): a person of such a class is known not to be in the subset.

ARX's order of checks (`variant="arx"`, `--delta-presence-variant arx`): ARX's `HashGroupify` tests a class's
size before its other criteria when a model beside delta-presence sets a minimal class size (k-anonymity's k,
l-diversity's l, an estimated k-map's derived k), so an empty population class fails as "too small" (suppressed
at no cost) and never as delta-presence. The model then lets such classes pass when the largest minimal class
size of the models beside it (`beside_class_size`, set by `beside`) is above 1; without one it is the
definition, as ARX then fails the node too. Weaker than the definition; it exists to reproduce ARX's results
(docs/privacy-models.md).

Monotonicity: without suppression a node's generalizations are feasible when it is (a merged class's ratio is
a weighted mean of ratios inside the bounds); with suppression it is not (a suppressed class merged into a
released one can move its ratio out of the bounds), as ARX declares. The searches then treat it as entropy
l-diversity: no pruning by feasibility, and certify refuses a bound it cannot prove. Under ARX's order with a
class size beside it, it is not monotone even without suppression: an empty class let pass at one node merges
at a more general node with a released class and lowers its share below DMIN (ARX declares it monotone all the
same; tests/test_presence_variant.py shows such a node).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from fitness.encoding import EncodedTable
from fitness.models import TOLERANCE, CountRule, MeasureRule
from fitness.parameters import Constraint, is_real
from fitness.partition import Partition
from fitness.privacy import ModelFamily, Parameter
from fitness.privacy.common import TableRef
from lattice.errors import InputError

VARIANTS = ("definition", "arx")
VARIANT = Constraint("delta-presence variant", "choice", choices=VARIANTS)


def parse_bounds(value: object) -> tuple[float, float]:
    """(DMIN, DMAX) from "DMIN,DMAX" (the command line, run.toml and Config) or a pair (the model's own check)."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        try:
            pair = tuple(float(p) for p in parts)
        except ValueError:
            pair = ()
    elif isinstance(value, (tuple, list)) and all(is_real(v) for v in value):
        pair = tuple(float(v) for v in value)
    else:
        pair = ()
    if len(pair) != 2 or not 0.0 <= pair[0] <= pair[1] <= 1.0:
        raise InputError(f"--delta-presence must be DMIN,DMAX with 0 <= DMIN <= DMAX <= 1, got {value!r}")
    return pair[0], pair[1]


def subset_name(subset: TableRef | str) -> str:
    return subset.path if isinstance(subset, TableRef) else str(subset)


@dataclass(frozen=True)
class DeltaPresence:
    """Every class E of the generalized population has DMIN <= |E n S| / |E| <= DMAX.

    Parameters
    ----------
    dmin, dmax : float
        The bounds on the share of a population class that is in the released subset.
    subset : TableRef or str
        The research subset: a file (as kgen read it) or a 0/1 column of the input.
    variant : {"definition", "arx"}
        "definition" (every population class judged) or "arx" (ARX's order of checks: population classes
        without a subset row let pass beside a model with a minimal class size above 1).
    beside_class_size : int
        The largest minimal class size of the models beside this one (1: none), set by `beside`; read by the
        "arx" variant only.
    """

    dmin: float
    dmax: float
    subset: TableRef | str
    variant: str = "definition"
    beside_class_size: int = 1
    name: ClassVar[str] = "delta-presence"
    needs_rows: ClassVar[bool] = True
    needs_population: ClassVar[bool] = True
    input_is_population: ClassVar[bool] = True  # the input file is P; the released table is the subset S
    monotone_with_suppression: ClassVar[bool] = False
    min_class_size: ClassVar[int] = 1
    count_rule: ClassVar[CountRule | None] = None
    measure_rule: ClassVar[MeasureRule | None] = None

    def __post_init__(self) -> None:
        parse_bounds((self.dmin, self.dmax))
        if not subset_name(self.subset).strip():
            raise InputError("--delta-presence needs --research-subset FILE|COLUMN")
        VARIANT.check(self.variant)
        if not isinstance(self.beside_class_size, int) or self.beside_class_size < 1:
            raise InputError(f"delta-presence: minimal_class_size must be a whole number >= 1, got "
                             f"{self.beside_class_size!r}")

    @property
    def lets_empty_classes_pass(self) -> bool:
        """ARX's order of checks with a minimal class size beside: population classes without a subset row
        fail as too small (suppressed at no cost), never as delta-presence."""
        return self.variant == "arx" and self.beside_class_size > 1

    @property
    def monotone(self) -> bool:
        """Monotone without suppression, except when empty population classes are let pass (module docs)."""
        return not self.lets_empty_classes_pass

    def beside(self, others: Sequence[object]) -> DeltaPresence:
        """This model next to `others`: their largest minimal class size recorded (ARX's minimal group size)."""
        floor = max((int(getattr(m, "min_class_size", 1)) for m in others), default=1)
        return self if floor == self.beside_class_size else dataclasses.replace(self, beside_class_size=floor)

    @property
    def params(self) -> dict:
        digest = self.subset.sha256 if isinstance(self.subset, TableRef) else None
        variant = {"variant": self.variant} | ({"minimal_class_size": self.beside_class_size}
                                               if self.variant == "arx" else {})
        return {"dmin": self.dmin, "dmax": self.dmax, "research_subset": subset_name(self.subset),
                "subset_digest": digest, **variant}

    def violating(self, partition: Partition, table: EncodedTable) -> np.ndarray:
        """Classes whose share of subset rows is outside [DMIN, DMAX]; all of them when a population class has
        no subset row and DMIN > 0 (it cannot be suppressed: the node fails), unless ARX's order of checks
        lets such classes pass (`lets_empty_classes_pass`)."""
        if partition.population is None:
            raise ValueError("delta-presence needs the population's counts (EncodedTable.population)")
        share = partition.sizes / np.maximum(partition.population, 1)
        bad = (share < self.dmin - TOLERANCE) | (share > self.dmax + TOLERANCE)
        if self.empty_classes_fail(partition):
            bad[:] = True
        return bad

    def empty_classes_fail(self, partition: Partition) -> bool:
        """Whether population classes without a subset row fail the whole node (none can be suppressed)."""
        return self.dmin > 0 and bool(partition.population_only) and not self.lets_empty_classes_pass

    def empty_classes_words(self, partition: Partition) -> str:
        """Why the node fails whatever is suppressed, for the no-solution advice ("" when that is not why)."""
        if not self.empty_classes_fail(partition):
            return ""
        return (f"{partition.population_only} population classes have no research-subset row (share 0 < DMIN "
                f"{self.dmin:g}), which no suppression can mend; --delta-presence-variant arx lets them pass "
                "beside k or l as ARX does, weaker than the definition")

    def describe(self) -> dict:
        return {"model": self.name, **self.params}


def build(values: Mapping[str, object], sensitive: Sequence[str]) -> list[DeltaPresence]:
    subset = values.get("research_subset")
    if subset is None:
        raise InputError("--delta-presence needs --research-subset FILE|COLUMN (the rows released; the input is "
                         "the population)")
    if values.get("population") is not None:
        raise InputError("--delta-presence takes the input as the population: --population is k-map's")
    dmin, dmax = parse_bounds(values["delta_presence"])
    variant = str(values.get("delta_presence_variant") or "definition")
    return [DeltaPresence(dmin, dmax, subset, variant)]  # type: ignore[arg-type]


def read(d: Mapping[str, object]) -> DeltaPresence:
    subset = d.get("research_subset")
    if not isinstance(subset, (TableRef, str)):
        raise InputError(f"a delta-presence model must name its research subset, got {subset!r}")
    saved = d.get("subset_digest")
    if saved is not None and isinstance(subset, TableRef) and saved != subset.sha256:
        raise InputError(f"research_subset {subset.path} is not the subset the run used: its SHA-256 is "
                         f"{subset.sha256[:16]}..., the report records {str(saved)[:16]}...")
    variant = d.get("variant", "definition")  # reports before the variant existed judged the definition
    return DeltaPresence(d.get("dmin"), d.get("dmax"), subset, variant,  # type: ignore[arg-type]
                         d.get("minimal_class_size", 1))  # type: ignore[arg-type]


def summary(d: Mapping[str, object]) -> str:
    size = d.get("minimal_class_size", 1)
    arx = ("" if d.get("variant") != "arx" else
           ", ARX's order of checks (weaker than the definition: population classes without a subset row pass "
           f"beside minimal class size {size})," if isinstance(size, int) and size > 1 else
           ", ARX's order of checks (no minimal class size beside it: as the definition),")
    return (f"({d.get('dmin')}, {d.get('dmax')})-presence{arx} of the research subset {d.get('research_subset')}: "
            f"each population class's share in the release within the bounds")


def refuse(values: Mapping[str, object]) -> str | None:
    """A variant asked for without delta-presence (its value itself is checked by the constraint)."""
    if values.get("delta_presence_variant", "definition") not in (None, "definition") \
            and values.get("delta_presence") is None:
        return "--delta-presence-variant is for delta-presence: give --delta-presence DMIN,DMAX with it"
    return None


FAMILY = ModelFamily(
    name="delta-presence",
    parameters=(
        Parameter("delta_presence", Constraint("delta-presence", "text", optional=True), metavar="DMIN,DMAX",
                  help="delta-presence: the input is the population, --research-subset is released; each "
                       "population class's share in it lies in [DMIN, DMAX]"),
        Parameter("research_subset", Constraint("research subset", "text", optional=True), metavar="FILE|COLUMN",
                  resource="table",
                  help="the rows released under --delta-presence: a file of rows of the input (same header) or a "
                       "0/1 column of the input"),
        Parameter("delta_presence_variant", VARIANT, default="definition",
                  help="definition (every population class judged) or arx (ARX's order of checks: population "
                       "classes without a subset row pass beside k or l; weaker, to reproduce ARX)"),
    ),
    build=build, read=read, summary=summary, order=57, refuse=refuse,
    stricter_keys=(("dmin", "higher"), ("dmax", "lower"), ("variant", "order:arx,definition"),
                   ("minimal_class_size", "derived")),
)
