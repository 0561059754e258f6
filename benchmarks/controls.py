"""The steward's per-QI controls on Adult (issue 26): what level limits, weights and a top-coded age hierarchy
change in the released node and its figures.

Each row is one `kgen.anonymize` run on Adult (the 8 usual QIs with the ARX hierarchies, salary-class
sensitive, k = 5, t = 1 %), by the certified search (60 s limit; OLA for `loss`, which the certified search
refuses with suppression), so every row is the proved optimum of its objective within its limits (`optimal`)
or says it is not. The first row is the run without controls.

    python -m benchmarks.controls
"""

from __future__ import annotations

import time

from benchmarks import common
from kgen.io.table import read_csv
from kgen.run.config import Config
from kgen.run.pipeline import anonymize

RUNS = (
    ("no controls", {}),
    ("--max-level age=1 (age kept at 5-year bands)", {"max_levels": {"age": 1}}),
    ("--max-level age=1 --min-level sex=1", {"max_levels": {"age": 1}, "min_levels": {"sex": 1}}),
    ("--weight age=5,education=3", {"weights": {"age": 5.0, "education": 3.0}}),
    ("--metric loss (OLA)", {"metric": "loss", "algorithm": "ola"}),
    ("--metric loss --weight age=5,education=3 (OLA)",
     {"metric": "loss", "weights": {"age": 5.0, "education": 3.0}, "algorithm": "ola"}),
    ("--hierarchy age=intervals:5,10,20;bottom=20;top=80",
     {"hierarchies": {"age": "intervals:5,10,20;bottom=20;top=80"}}),
)


def main() -> None:
    table = read_csv(common.DATA / "adult" / "adult.csv")
    rows = []
    for label, changes in RUNS:
        config = Config(**{"qi": common.ADULT_QIS, "sensitive": ["salary-class"], "k": 5, "suppression": 0.01,
                           "hierarchy_dir": str(common.DATA / "adult"), "algorithm": "certify", "time_limit": 60.0,
                           **changes})  # type: ignore[arg-type]
        before = time.process_time()
        r = anonymize(table, config).report
        node = " ".join(str(r["node"][q]) for q in common.ADULT_QIS)
        full = sum(r["node"][q] == r["heights"][q] for q in common.ADULT_QIS)
        rows.append([label, node, full, r["metric"], round(r["loss"], 4), round(r["log"], 4),
                     round(r["metrics"]["ncp"], 4), r["suppressed"], r["optimal"],
                     round(time.process_time() - before, 1), r["evaluations"]])
        print(rows[-1], flush=True)
    headers = ["controls", f"node ({', '.join(common.ADULT_QIS)})", "QIs at top", "objective", "objective value",
               "LOG", "NCP", "suppressed", "optimal", "CPU s", "evaluations"]
    notes = ("Adult, k = 5, t = 1 %, salary-class sensitive, certified search (60 s; OLA for loss). The objective "
             "value is the weighted one where weights are given; LOG and NCP are always unweighted. Command: "
             "`python -m benchmarks.controls` (the machine is shared with other jobs: CPU s, not wall time).")
    common.write("controls", "The steward's per-QI controls on Adult (issue 26)", headers, rows, notes)


if __name__ == "__main__":
    main()
