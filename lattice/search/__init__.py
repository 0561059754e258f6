"""Search algorithms over a lattice box, all behind one interface (`Search.run(problem, limits)`)."""

from lattice.search.base import Evaluated, Evaluator, Limits, Problem, Search, SearchResult
from lattice.search.exhaustive import Exhaustive

__all__ = ["Evaluated", "Evaluator", "Exhaustive", "Limits", "Problem", "Search", "SearchResult"]
