"""`kgen risk`: the re-identification risk figures of any table (docs/risk.md)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence

import numpy as np

from fitness.models import KAnonymity
from kgen.cli.options import (
    columns,
    command_parser,
    encoding_option,
    number,
    population_option,
    uniqueness_model_option,
)
from kgen.io.table import read_table
from kgen.report import risk as risking
from kgen.report.risk import risk_report, validate_fraction, validate_threshold
from kgen.run import apply as applying
from kgen.run import pipeline as api
from kgen.runners.memory import check_fits
from lattice.errors import InputError


def generalize_like(population: object, report: Mapping, source: str) -> object:
    """The population table generalized to the node of a kgen report (its hierarchies rebuilt as `kgen apply`
    does), nothing suppressed: the population classes P_E of the release's classes E."""

    config = applying.config_from_report(report, source, suppression=1.0)
    prepared = api.prepare(population, config, [KAnonymity(1)], require_feasible=False)
    node = applying.saved_node(report, prepared, source)
    return api.release(prepared, node, np.zeros(prepared.table.n, dtype=bool), False)


def run_command(path: str, qis: Sequence[str] | None, threshold: float, population: str | None,
                report: str | None, sampling_fraction: float | None,
                uniqueness_model: str = risking.DEFAULT_UNIQUENESS_MODEL, encoding: str = "utf-8") -> dict:
    """`kgen risk`: read the table (and the population, generalized by `report`'s node when given) and
    measure it."""

    saved = applying.load_report(report) if report else None
    if not qis:
        if saved is None:
            raise InputError("give the quasi-identifiers (--qi) or the release's report (--report)")
        qis = list(saved["quasi_identifiers"])
    validate_threshold(threshold)
    if sampling_fraction is not None:
        validate_fraction(sampling_fraction)
    table = read_table(path, encoding=encoding)
    for column in qis:
        table.column(column)
    pop = None
    if population is not None:
        pop = read_table(population, encoding=encoding)
        for column in qis:
            pop.column(column)
        if saved is not None:
            pop = generalize_like(pop, saved, str(report))
    figures = risk_report(table, qis, threshold, pop, sampling_fraction, uniqueness_model=uniqueness_model)
    figures["input"] = str(path)
    if population is not None:
        figures["journalist"]["population"] = str(population)  # type: ignore[index]
    return figures


def run_risk(args: argparse.Namespace) -> int:
    """`kgen risk`: the risk figures of docs/risk.md for any table."""
    check_fits(args.input, len(args.qi or []))  # a run the memory limits cannot hold is refused first (exit 5)
    figures = run_command(args.input, args.qi, args.risk_threshold, args.population, args.report,
                          args.sampling_fraction, args.uniqueness_model, args.encoding)
    print(json.dumps(figures, indent=2) if args.json else risking.describe(figures))
    return 0


def add_parser(commands: argparse._SubParsersAction) -> None:
    """Register `kgen risk` and its options."""
    risk = command_parser(commands, "risk", "re-identification risk of any table (anonymized or not) on its QIs")
    risk.add_argument("input", help="the table to measure (a release or raw data)")
    risk.add_argument("--qi", type=columns, action="extend", default=None,
                      help="quasi-identifiers: comma-separated and/or repeated (default: --report's)")
    risk.add_argument("--risk-threshold", type=number(float, "risk-threshold"), default=risking.DEFAULT_THRESHOLD,
                      help="a record is at risk above this prosecutor risk 1/|class| (default 0.2)")
    population_option(risk, "generalized like INPUT, or raw with --report; journalist risk and exact population "
                            "uniqueness")
    risk.add_argument("--report", help="INPUT's kgen report: its QIs, and its node generalizes --population")
    risk.add_argument("--sampling-fraction", type=number(float, "sampling-fraction"),
                      help="n / N for the population-uniqueness estimate (default: from --population, else 1)")
    uniqueness_model_option(risk)
    risk.add_argument("--json", action="store_true", help="print the figures as JSON")
    encoding_option(risk)
    risk.set_defaults(run=run_risk)
