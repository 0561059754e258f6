"""Sign-off: check a release against everything its report claims, read from the report itself.

`kgen check --report R RELEASE` must not check less than the report says, or a steward signs off on a claim
nobody verified. From the report (an anonymize or apply report) come the QIs, the identifier columns (every
cell `*`), the sensitive columns, every privacy model with its parameters, the suppression limit, the node
(each released QI cell a label of its hierarchy at the node's level) and the checksums of the release, the
input and the hierarchy files. A command-line restatement may add to that (more QIs, a larger k, ...); one
that asks for less than the report is refused (`weaker_restatement`), since passing it would prove nothing
about the claim.

Like every checker here it imports nothing of fitness/: the hierarchies are read with `kgen.io` (the
report's saved rows, an ARX file, or a builder rebuilt on the original's values).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgen.check.kanonymity import SUPPRESSED, CheckResult, ClassRule, check_k_anonymity, suppressed_mask
from kgen.check.population import normalized_values
from kgen.check.rules import RULES, rules_from_models
from kgen.check.verify import unescaped
from kgen.io import hierarchies as loading
from kgen.io.table import CodedColumn, Table
from kgen.status import ChecksumError, ExitCode
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy


@dataclass
class Claims:
    """What a report claims about its release."""

    qis: list[str]
    identifiers: list[str]
    sensitive: list[str]
    k: int
    rules: list[ClassRule]
    suppression: float
    max_suppressed: int | None
    node: dict[str, int]
    rows: int | None
    dropped: bool
    escaped: bool
    missing: list[str]
    models: list[dict] = field(default_factory=list)


@dataclass
class Verdict:
    """The lines `kgen check` prints and whether every claim held."""

    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def checked(self) -> int:
        """How many claims were checked (held or failed), not counting those that could not be."""
        return sum(1 for line in self.lines if not line.startswith("  not checked"))

    def ok(self, line: str) -> None:
        self.lines.append(f"  ok: {line}")

    def fail(self, line: str) -> None:
        self.lines.append(f"  FAIL: {line}")
        self.failures.append(line)

    def note(self, line: str) -> None:
        self.lines.append(f"  not checked: {line}")


def claims_of(report: Mapping, source: str) -> Claims:
    """The claims of an anonymize or apply report; InputError (exit 2) for anything else."""
    if not isinstance(report.get("provenance"), Mapping):
        raise InputError("the report has no provenance section (written by an older kgen): nothing to verify "
                         "against", file=source)
    if "partitioned" in report:
        raise InputError("is the report of a partitioned run (a folder of parts, checked part by part when it was "
                         "written): kgen check --report checks one file", file=source)
    if "node" not in report:
        kind = "a Mondrian report: check it with kgen mondrian-check ORIGINAL RELEASE --report" \
            if report.get("algorithm") == "mondrian" else "not an anonymize or apply report (no node)"
        raise InputError(f"is {kind}", file=source)
    for key in ("quasi_identifiers", "models", "suppression_limit"):
        if key not in report:
            raise InputError(f"is not a kgen report: it lacks {key!r}", file=source)
    models = [dict(m) for m in report["models"]]
    unknown = [m.get("model") for m in models if m.get("model") not in RULES]
    if unknown:
        raise InputError(f"claims privacy models the independent checker cannot prove: {', '.join(map(str, unknown))}",
                         file=source)
    params = (report.get("provenance") or {}).get("parameters", {}).get("values", {})
    rows = report.get("rows")
    released = report.get("rows_written", report.get("rows_released"))  # lines written (older reports: released)
    dropped = bool(params.get("drop_suppressed", rows is not None and released is not None and released < rows))
    k, rules = rules_from_models(models, dropped)
    return Claims(qis=list(report["quasi_identifiers"]), identifiers=list(report.get("identifiers", [])),
                  sensitive=list(report.get("sensitive", [])), k=k, rules=rules,
                  suppression=float(report["suppression_limit"]), max_suppressed=report.get("max_suppressed_rows"),
                  node={str(q): int(v) for q, v in dict(report["node"]).items()}, rows=rows, dropped=dropped,
                  escaped=bool((report.get("formula_cells") or {}).get("escaped")),
                  missing=[str(t) for t in report.get("missing", [])], models=models)


# The ways a description key may move in a restatement (its family says which, `directions` below): "higher"
# or "lower" asks more of a release that way; "derived" is a figure computed from the others (k-map's k'),
# checked through them; "order:A,B" lists a choice's values from the least to the most asked (delta-presence's
# variant: "order:arx,definition"). Any other key must be restated as the report has it.
SIGNS = {"higher": 1, "lower": -1}


def asks_less(direction: str, mine: object, theirs: object) -> bool:
    """Whether a restated value `theirs` asks less than the report's `mine`, along `direction`."""
    if direction.startswith("order:"):  # a report without the key (older than it) is held to the most asked
        ranks = direction.removeprefix("order:").split(",")
        mine = ranks[-1] if mine is None else mine
        return mine not in ranks or theirs not in ranks or ranks.index(str(theirs)) < ranks.index(str(mine))
    sign = SIGNS.get(direction)
    return sign is None or mine is None or theirs is None or (float(theirs) - float(mine)) * sign < 0  # type: ignore[arg-type]


def weaker_model(claimed: Mapping, asked: Sequence[Mapping], directions: Mapping[str, Mapping[str, str]]) -> str | None:
    """Why the restated models of `claimed`'s family (on its sensitive column) ask less than `claimed`.
    `directions` gives, per family and description key, the way that asks more (the registry's
    `fitness.privacy.stricter_direction`, handed in by the command: the checker imports nothing of fitness)."""
    same = [a for a in asked
            if a.get("model") == claimed.get("model") and a.get("sensitive") == claimed.get("sensitive")]
    order = directions.get(str(claimed.get("model")), {})
    for a in same:
        for key in sorted(set(claimed) | set(a)):
            mine, theirs = claimed.get(key), a.get(key)
            if mine == theirs or key in ("model", "sensitive") or order.get(key) == "derived":
                continue
            if asks_less(order.get(key, ""), mine, theirs):
                column = f" on {claimed['sensitive']!r}" if claimed.get("sensitive") else ""
                return (f"the restated {claimed['model']}{column} has {key} = {theirs}, the report "
                        f"{key} = {mine}")
    return None


def weaker_restatement(claims: Claims, qis: Sequence[str], suppression: float | None,
                       asked: Sequence[Mapping], directions: Mapping[str, Mapping[str, str]]) -> str | None:
    """Why a command-line restatement (its QIs, suppression limit and model descriptions `asked`) asks for
    less than the report claims, or None when it asks for as much or more (then it is checked too);
    `directions` as `weaker_model`."""
    missing = [q for q in claims.qis if qis and q not in qis]
    if missing:
        return f"--qi leaves out the report's quasi-identifiers {', '.join(missing)}"
    if suppression is not None and suppression > claims.suppression:
        return f"--suppression {suppression:g} allows more than the report's limit {claims.suppression:g}"
    for claimed in claims.models:
        why = weaker_model(claimed, asked, directions)
        if why:
            return why
    return None


def check_models(table: Table, claims: Claims, verdict: Verdict, report: Mapping | None = None) -> CheckResult:
    """k, every rule and the suppression limit, as the report states them (the rules that count a population
    read the `report`: its node and saved hierarchies)."""
    result = check_k_anonymity(table, claims.qis, claims.k, 0.0 if claims.dropped else claims.suppression,
                               claims.rules, {"report": report} if report is not None else None)
    shown = []
    for d in claims.models:
        rule = RULES[str(d["model"])]
        if rule.least_size is None and rule.read(d, claims.dropped) is None:
            verdict.note(f"{d['model']} on {d.get('sensitive')!r}: the file cannot show it (its suppressed rows were "
                         "left out); the run's evaluator held it")
        else:
            shown.append(d)
    models = ", ".join(f"{m['model']} ({', '.join(f'{a}={v}' for a, v in m.items() if a != 'model')})"
                       for m in shown)
    if result.violating_rows:
        verdict.fail(f"{len(result.violating_rows)} released rows in classes that break {models}")
        verdict.lines.extend(f"    {note}" for note in result.notes)
    else:
        verdict.ok(f"{models} on {len(claims.qis)} QIs: {result.classes} classes, smallest {result.smallest_class}")
    suppressed = (claims.rows - table.n) if claims.dropped and claims.rows is not None else result.suppressed_rows
    limit = claims.max_suppressed if claims.max_suppressed is not None else result.allowed
    if suppressed > limit or (not claims.dropped and result.suppressed_rows > result.allowed):
        verdict.fail(f"{suppressed} suppressed rows, more than the limit of {limit} "
                     f"(suppression_limit {claims.suppression:g})")
    else:
        verdict.ok(f"{suppressed} suppressed rows within the limit of {limit} (suppression_limit "
                   f"{claims.suppression:g})")
    return result


def check_columns(table: Table, claims: Claims, verdict: Verdict) -> None:
    """Every QI, identifier and sensitive column present; every identifier cell `*`."""
    absent = [c for c in claims.qis + claims.identifiers + claims.sensitive if c not in table.columns]
    if absent:
        raise InputError(f"lacks the report's columns {', '.join(absent)}", file=str(table.source))
    for column in claims.identifiers:
        values = table.column(column)
        if isinstance(values, CodedColumn):
            clear = [label for label in values.labels if label != SUPPRESSED]
            rows = np.flatnonzero(np.isin(values.codes, [values.labels.index(x) for x in clear])) if clear else []
        else:
            rows = [i for i, v in enumerate(values) if v != SUPPRESSED]
        if len(rows):
            verdict.fail(f"identifier {column!r} is not * in {len(rows)} rows (first: row {int(rows[0]) + 1})")
        else:
            verdict.ok(f"identifier {column!r}: every cell is *")
    if claims.sensitive:
        verdict.ok(f"sensitive columns present: {', '.join(claims.sensitive)}")


def paths_digest(hierarchy: Hierarchy) -> str:
    """SHA-256 of a hierarchy's generalization paths as canonical JSON: the digest every report records for
    the hierarchy it used (`provenance.hierarchies.<QI>.sha256`). Written again on purpose (the checker shares
    nothing with the report builder); tests check the two agree."""
    rows = sorted([str(k), [str(x) for x in v]] for k, v in hierarchy.paths.items())
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode("utf-8")).hexdigest()


def file_digest(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def level_labels(hierarchy: Hierarchy, level: int, missing: Sequence[str]) -> set[str]:
    """The labels of `hierarchy` at `level`, and the missing-value tokens below the top (a missing cell keeps
    its token until the top level, `Hierarchy.with_missing`)."""
    if hierarchy.levels is not None:
        labels = set(hierarchy.levels.leaves if level == 0 else hierarchy.levels.labels[level - 1])
    else:
        labels = {path[level] for path in hierarchy.paths.values() if len(path) > level}
    return labels | (set(missing) if level < hierarchy.height else set())


def check_file(label: str, path: str | os.PathLike, record: object, verdict: Verdict) -> bool:
    """A file's SHA-256 against the report's record of it; False when it differs. A release or input that
    differs is a ChecksumError (exit 1): the report then says nothing about the file at hand."""
    if not isinstance(record, Mapping) or not record.get("sha256"):
        verdict.note(f"the report records no checksum of the {label}")
        return True
    found = file_digest(path)
    if found != record["sha256"] and label in ("release", "input"):  # nothing else can be said of another file
        raise ChecksumError(f"does not match its report: SHA-256 {found[:16]}..., the report records "
                            f"{str(record['sha256'])[:16]}... for the {label} ({record.get('path')})",
                            file=str(path), exit_code=ExitCode.CHECK_FAILED)
    if found != record["sha256"]:
        verdict.fail(f"the {label} {path} has SHA-256 {found[:16]}..., the report records "
                     f"{str(record['sha256'])[:16]}...")
        return False
    verdict.ok(f"the {label} {path}: SHA-256 matches the report ({found[:16]}...)")
    return True


def saved_hierarchy(report: Mapping, qi: str, source: str, original: Table | None,
                    files: Mapping[str, str]) -> Hierarchy | None:
    """The hierarchy the run used for `qi`: the report's saved rows, else its file (given, or named by the
    report and present), else its builder rebuilt on the original's values; None when none is at hand."""
    spec = (report.get("hierarchy_specs") or {}).get(qi) or {}
    if "rows" in spec:
        return Hierarchy.from_rows(qi, spec["rows"], f"{source} (hierarchy of {qi!r})")
    if qi in files:
        return loading.load_arx(files[qi], qi)
    if "builder" in spec and original is not None:
        distinct, token = normalized_values(original.column(qi), [str(t) for t in report.get("missing", [])])
        hierarchy = loading.build(qi, spec["builder"], distinct)
        return hierarchy.with_missing(token) if token is not None else hierarchy
    return None


def hierarchy_files(report: Mapping, given: Mapping[str, str], verdict: Verdict) -> dict[str, str]:
    """Each QI's hierarchy file (given, else the one the report names when it exists), checked against the
    report's SHA-256 of it; only matching files are returned."""
    records = (report.get("provenance") or {}).get("hierarchies") or {}
    out = {}
    for qi in report["quasi_identifiers"]:
        record = (records.get(qi) or {}).get("file") or {}
        path = given.get(qi) or record.get("path")
        if not path or not Path(path).is_file():
            if record:
                verdict.note(f"hierarchy file of {qi!r} ({record.get('path')}): not found")
            continue
        if check_file(f"hierarchy file of {qi!r}", path, record, verdict):
            out[qi] = str(path)
    return out


def check_node(table: Table, report: Mapping, claims: Claims, source: str, original: Table | None,
               files: Mapping[str, str], verdict: Verdict) -> None:
    """Each released (not suppressed) QI cell is a label of the QI's hierarchy at the node's level, and the
    hierarchy is the one the report records (its digest)."""
    starred = suppressed_mask(table, claims.qis)
    records = (report.get("provenance") or {}).get("hierarchies") or {}
    for qi in claims.qis:
        hierarchy = saved_hierarchy(report, qi, source, original, files)
        if hierarchy is None:
            spec = (report.get("hierarchy_specs") or {}).get(qi) or {}
            verdict.note(f"node level of {qi!r}: " + ("its hierarchy is a builder; give --original to rebuild it"
                                                       if "builder" in spec else "the report saves no hierarchy; "
                                                       f"give --hierarchy {qi}=FILE"))
            continue
        recorded = (records.get(qi) or {}).get("sha256")
        if recorded and paths_digest(hierarchy) != recorded:
            verdict.fail(f"the hierarchy of {qi!r} is not the one the report records (digest "
                         f"{paths_digest(hierarchy)[:16]}..., recorded {recorded[:16]}...)")
            continue
        level = claims.node[qi]
        if level > hierarchy.height:
            verdict.fail(f"node level {level} of {qi!r} is above its hierarchy's top ({hierarchy.height})")
            continue
        labels = level_labels(hierarchy, level, claims.missing) if original is None else \
            input_labels(hierarchy, level, original.column(qi), claims.missing)
        what = "labels of its hierarchy" if original is None else "generalizations of an input value"
        bad = outside(table.column(qi), labels, starred)
        if bad.size:
            value = table.column(qi)[int(bad[0])]
            verdict.fail(f"{bad.size} released cells of {qi!r} are not {what} at level {level} "
                         f"(first: row {int(bad[0]) + 1}, {str(value)[:40]!r})")
        else:
            verdict.ok(f"{qi!r}: every released cell is one of the {what} at level {level}")


def input_labels(hierarchy: Hierarchy, level: int, values: Sequence[str], tokens: Sequence[str]) -> set[str]:
    """The labels at `level` of the input's own values (`--original`): a released cell must generalize a value
    that is in the input, not merely be a label of the hierarchy."""
    distinct, token = normalized_values(values, tokens)
    if token is not None:
        hierarchy = hierarchy.with_missing(token)
        distinct.append(token)
    return {hierarchy.generalize(v, level) for v in distinct if v in hierarchy.paths}


def outside(values: Sequence[str], labels: set[str], starred: np.ndarray) -> np.ndarray:
    """Rows (0-based, not suppressed) whose value is not in `labels`."""
    if isinstance(values, CodedColumn):
        foreign = np.array([label not in labels for label in values.labels] + [False], dtype=bool)
        mask = foreign[values.codes]
    else:
        mask = np.fromiter((v not in labels for v in values), dtype=bool, count=len(values))
    return np.flatnonzero(mask & ~starred)


def check_counts(result: CheckResult, report: Mapping, verdict: Verdict) -> None:
    """The release's rows, classes, smallest class and suppressed rows as the report's `verified` states."""
    stated = report.get("verified") or {}
    found = {"rows": result.rows, "classes": result.classes, "smallest_class": result.smallest_class,
             "suppressed_rows": result.suppressed_rows}
    differ = {key: (stated[key], value) for key, value in found.items() if key in stated and stated[key] != value}
    if differ:
        verdict.fail("the release's figures differ from the report's: " + ", ".join(
            f"{key} {value} (report {claim})" for key, (claim, value) in differ.items()))
    elif stated:
        verdict.ok(f"{result.rows} rows, {result.classes} classes, smallest {result.smallest_class}, as the report "
                   "states")


def verify_report(report: Mapping, source: str, release: Table, release_path: str | os.PathLike,
                  original: tuple[Table, str] | None = None, given: Mapping[str, str] | None = None) -> Verdict:
    """Check `release` (read from `release_path`) against every claim of `report`; `original` (the input
    table and its path) adds the input's checksum and rebuilds builder hierarchies; `given` names hierarchy
    files by QI (default: those the report names)."""
    claims = claims_of(report, source)
    verdict = Verdict()
    prov = report.get("provenance") or {}
    check_file("release", release_path, prov.get("release"), verdict)
    if original is not None:
        check_file("input", original[1], prov.get("input"), verdict)
    table = unescaped(release) if claims.escaped else release
    check_columns(table, claims, verdict)
    result = check_models(table, claims, verdict, report)
    check_counts(result, report, verdict)
    files = hierarchy_files(report, given or {}, verdict)
    check_node(table, report, claims, source, original[0] if original else None, files, verdict)
    return verdict
