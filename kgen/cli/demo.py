"""`kgen demo`: anonymize the embedded Adult table, check it, write its HTML page."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from kgen.cli import anonymize
from kgen.cli.console import read_input, warn
from kgen.cli.options import (
    add_output_arguments,
    command_parser,
    config_from_args,
    number,
    seed_option,
)
from kgen.report import html as html_report
from kgen.report import summary as summarizing
from kgen.report.publish import write_release
from kgen.run.algorithms import REGISTRY
from kgen.run.config import Config
from lattice.errors import InputError

DATA = Path(__file__).parent.parent / "data"

DEMO_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
DEMO_KEEP = ["salary-class"]  # released as it is: every column has a role

def run_demo(args: argparse.Namespace) -> int:
    folder = Path(args.output_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"cannot create the output folder: {error.strerror or error}", file=str(folder)) from None
    source = DATA / "adult.csv"
    config = config_from_args(args, qi=DEMO_QIS, hierarchy_dir=str(DATA), keep=DEMO_KEEP)
    print(f"kgen demo: Adult ({source.name}, 30,162 rows, UCI, CC BY 4.0), QIs {', '.join(DEMO_QIS)}")
    result = anonymize.run_search(read_input(str(source), None, len(DEMO_QIS)), config, args.invocation)
    copy_data(folder)
    output, report = folder / "adult_anonymized.csv", folder / "adult_anonymized.json"
    write_release(result, output, report, [str(source)], escape_formulas=args.escape_formulas, warn=warn)
    print(summarizing.text(result.report, output, report))
    verified = result.report["verified"]
    print(f"  independent check of {output}: {'PASS' if verified['passed'] else 'FAIL'} "
          f"(smallest class {verified['smallest_class']}, {verified['suppressed_rows']} suppressed rows)")
    html = folder / "adult_anonymized.html"
    html_report.write(result.report, html, output, protected=[str(source), str(output), str(report)])
    print(summarizing.next_steps(output, report, DEMO_QIS, args.k, html, args.suppression))
    return 0 if verified["passed"] else 1


def copy_data(folder: Path) -> None:
    """The embedded Adult table and its hierarchies copied into the demo's folder (`adult.csv`,
    `hierarchies/`), so the README's next commands run on them as written; files already there are kept."""
    target = folder / "hierarchies"
    target.mkdir(exist_ok=True)
    copies = [(DATA / "adult.csv", folder / "adult.csv")]
    copies += [(path, target / path.name) for path in sorted(DATA.glob("adult_hierarchy_*.csv"))]
    for source, copy in copies:
        if not copy.exists():
            shutil.copyfile(source, copy)


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen demo` and its options."""
    demo = command_parser(commands, "demo", "anonymize the embedded Adult dataset and summarize")
    demo.add_argument("--k", type=number(int, "k"), default=5, help="k of k-anonymity")
    demo.add_argument("--suppression", type=number(float, "suppression"), default=0.01,
                      help="fraction of rows that may be suppressed")
    demo.add_argument("--algorithm", default=Config.algorithm, help=f"{', '.join(sorted(REGISTRY))}")
    seed_option(demo)
    demo.add_argument("--output-dir", default="kgen-demo", help="folder for the release and its report")
    add_output_arguments(demo)
    demo.set_defaults(run=run_demo)
