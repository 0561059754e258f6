"""The registry of search algorithms: a name and options in, a `Search` out."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lattice.errors import InputError
from lattice.search.auto import Auto
from lattice.search.base import Search
from lattice.search.bestfirst import BestFirst
from lattice.search.certify import Certify
from lattice.search.datafly import Datafly
from lattice.search.exhaustive import Exhaustive
from lattice.search.fixed import FixedNode
from lattice.search.flash import Flash, PracticalFlash
from lattice.search.incognito import Incognito
from lattice.search.kgen_ga import KGen
from lattice.search.koptimize import ChosenNode
from lattice.search.ola import OLA
from lattice.search.random_search import RandomSearch
from lattice.search.samarati import Samarati

REGISTRY: dict[str, Callable[..., Search]] = {
    "auto": Auto,
    "exhaustive": Exhaustive,
    "bestfirst": BestFirst,
    "certify": Certify,
    "kgen": KGen,
    "ola": OLA,
    "random": RandomSearch,
    "samarati": Samarati,
    "incognito": Incognito,
    "datafly": Datafly,
    "flash": Flash,
}
# ARX's "practical monotonicity" (`--practical-monotonicity`): the searches that can assume every model monotone,
# and the heuristic each becomes (lattice/search/flash.py)
PRACTICAL: dict[str, Callable[..., Search]] = {"flash": PracticalFlash}

# Algorithms that choose their own generalization from the data (k-Optimize: interval cut points) instead of
# searching a hierarchy lattice. kgen.run.pipeline.prepare runs them and turns their choice into one-level hierarchies;
# the search named here then releases that node. Not in REGISTRY, whose searches work on any lattice problem.
CUT_POINT: dict[str, Callable[..., Search]] = {"k-optimize": ChosenNode}


def search_for(config: object) -> Search:
    """The search a run's Config asks for: the fixed-node search of its chosen `node` (`--node`), else its
    `algorithm` with its `options`."""
    node = config.node_levels()  # type: ignore[attr-defined]
    if node is not None:
        return FixedNode(node, tuple(config.qi))  # type: ignore[attr-defined]
    return make_search(config.algorithm, config.options,  # type: ignore[attr-defined]
                       getattr(config, "practical_monotonicity", False))


def make_search(name: str, options: Mapping[str, object] | None = None, practical_monotonicity: bool = False) -> Search:
    """An algorithm by name, configured with `options` (its dataclass fields); with `practical_monotonicity`,
    its heuristic form that assumes every model monotone (`PRACTICAL`: Flash), refused for the others."""
    if practical_monotonicity and name not in PRACTICAL:
        raise InputError(f"--practical-monotonicity is ARX's heuristic for {', '.join(sorted(PRACTICAL))}: give "
                         f"--algorithm flash with it (algorithm {name!r} cannot assume a model monotone)")
    factory = PRACTICAL[name] if practical_monotonicity else REGISTRY.get(name) or CUT_POINT.get(name)
    if factory is None:
        raise InputError(f"unknown algorithm {name!r}; choose one of: {', '.join(sorted(REGISTRY | CUT_POINT))}")
    given = dict(options or {})
    if name == "auto" and given.keys() & {"ga_population", "population", "selection"}:
        raise InputError("--ga-population and --selection tune the GA alone: add --algorithm kgen (auto takes "
                         "--preset for its GA)")
    if "ga_population" in given:  # the option's name (`--ga-population`) for the GA's `population` field
        given["population"] = given.pop("ga_population")
    try:
        return factory(**given)
    except TypeError as error:
        raise InputError(f"bad options for algorithm {name!r}: {error}") from None
