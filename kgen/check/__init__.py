"""The independent checkers: they re-read a written release and prove its privacy model from the file alone.

They import nothing of fitness/ (a test walks their imports): a bug in the evaluator cannot hide itself by
being shared with the code that checks its output.

- `kanonymity`: a table against k-anonymity, l-diversity, t-closeness and a suppression limit;
- `verify`: the written release of a run, read back (and un-escaped) before it is published;
- `partitioned`: a folder of release parts, part by part, merged;
- `mondrian`: a Mondrian release against the original table.
"""

from kgen.check.kanonymity import SUPPRESSED, CheckResult, SensitiveRule, check_k_anonymity

__all__ = ["SUPPRESSED", "CheckResult", "SensitiveRule", "check_k_anonymity"]
