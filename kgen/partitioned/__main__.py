"""`python -m kgen.partitioned INPUT --qi A,B --k 2 --out FOLDER`: a partitioned run without the main CLI
(which routes `--partitioned` here), printing the report's main figures as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from kgen.config import Config
from kgen.partitioned.run import anonymize_source
from lattice.errors import InputError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kgen.partitioned", description=__doc__.splitlines()[0])
    parser.add_argument("input")
    parser.add_argument("--qi", required=True)
    parser.add_argument("--identifier", default="")
    parser.add_argument("--k", type=int, default=2)
    parser.add_argument("--suppression", type=float, default=0.0)
    parser.add_argument("--algorithm", default="kgen")
    parser.add_argument("--metric", default="log")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-evaluations", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--scheduler", default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument("--report", default=None)
    args = parser.parse_args(argv)
    config = Config(qi=args.qi, identifiers=args.identifier, k=args.k, suppression=args.suppression,
                    algorithm=args.algorithm, metric=args.metric, seed=args.seed,
                    max_evaluations=args.max_evaluations, jobs=args.jobs, scheduler=args.scheduler)
    try:
        report = anonymize_source(args.input, config, args.out)
    except InputError as error:
        print(f"kgen: error: {error}", file=sys.stderr)
        return error.exit_code
    if args.report:
        with open(args.report, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=1, default=str)
    keep = ("node", "loss", "suppressed", "classes", "smallest_class", "evaluations", "check", "partitioned")
    print(json.dumps({key: report[key] for key in keep}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
