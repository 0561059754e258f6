"""Search algorithms over a lattice box, all behind one interface (`Search.run(problem, limits)`)."""

from lattice.search.base import Evaluation, Evaluator, Limits, Problem, Search, SearchResult
from lattice.search.exhaustive import Exhaustive

__all__ = ["Evaluation", "Evaluator", "Exhaustive", "Limits", "Problem", "Search", "SearchResult"]
