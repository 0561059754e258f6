"""kgen: k-anonymity by full-domain generalization and suppression, searched with the KGen genetic algorithm
and exact baselines. The public API is `anonymize` (the same run as `kgen anonymize`), `frontier` (`kgen
frontier`: the risk-utility frontier), `prepare`, `Config` and `check_k_anonymity`; `write_release` writes a
result's release and report as the command line does (checked on the written file), `to_pandas` gives a
table as a DataFrame, and `kgen.run.apply.apply` applies a saved report's node to new data. Every column needs
a role (`Config.keep` for columns released as they are); a kept column that looks like an identifier raises
`IdentifierWarning` (a `KgenWarning`). Ctrl-C during a
search raises `Interrupted` (a KeyboardInterrupt) with the best node found so far."""

from kgen.check.kanonymity import check_k_anonymity
from kgen.io.table import Table, from_dataframe, from_mapping, read_csv, to_pandas
from kgen.report.publish import write_release
from kgen.run.config import Config
from kgen.run.frontier import frontier
from kgen.run.pipeline import Interrupted, Prepared, Result, anonymize, prepare
from kgen.runners.parallel import ClusterError
from kgen.status import IdentifierWarning, KgenWarning
from lattice.errors import InputError, NoSolutionError

__all__ = [
    "ClusterError", "Config", "IdentifierWarning", "InputError", "Interrupted", "KgenWarning",
    "NoSolutionError", "Prepared", "Result", "Table",
    "anonymize", "check_k_anonymity", "from_dataframe", "from_mapping", "frontier", "prepare", "read_csv",
    "to_pandas", "write_release",
]
__version__ = "0.1.0"  # the fallback of `kgen --version` when the package is not installed
