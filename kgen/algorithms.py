"""The registry of search algorithms: a name and options in, a `Search` out."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lattice.errors import InputError
from lattice.search.base import Search
from lattice.search.bestfirst import BestFirst
from lattice.search.datafly import Datafly
from lattice.search.exhaustive import Exhaustive
from lattice.search.incognito import Incognito
from lattice.search.kgen_ga import KGen
from lattice.search.ola import OLA
from lattice.search.random_search import RandomSearch
from lattice.search.samarati import Samarati

REGISTRY: dict[str, Callable[..., Search]] = {
    "exhaustive": Exhaustive,
    "bestfirst": BestFirst,
    "kgen": KGen,
    "ola": OLA,
    "random": RandomSearch,
    "samarati": Samarati,
    "incognito": Incognito,
    "datafly": Datafly,
}


def make_search(name: str, options: Mapping[str, object] | None = None) -> Search:
    """An algorithm by name, configured with `options` (its dataclass fields)."""
    if name not in REGISTRY:
        raise InputError(f"unknown algorithm {name!r}; choose one of: {', '.join(sorted(REGISTRY))}")
    try:
        return REGISTRY[name](**dict(options or {}))
    except TypeError as error:
        raise InputError(f"bad options for algorithm {name!r}: {error}") from None
