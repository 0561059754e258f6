"""The public report: what may be published beside a release, built from the steward's full report.

The full report (`kgen.report.build`) is the steward's: it names files by absolute path, holds whole
hierarchies (every label, also those of values nobody in the release has), the input rows that were
suppressed, the command line and the machine. The public report keeps only what a reader of the release
needs to trust it and what the release itself already shows: the privacy models and their parameters, the
node and the figures of the released classes (counts and fractions), the independent check's verdict, and
the checksums of the release, the input and the hierarchies with files named by their name only. It is
built by a list of the keys that may go out (never by removing the ones that may not), so a key added to
the full report later stays private until it is added here. docs/report.md says which field is which.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePath

PUBLIC_NOTE = ("public report: what can be published beside the release (docs/report.md); the full report, with "
               "paths, hierarchies and suppressed rows, stays with the data steward")

# Top-level keys copied as they are: settings, the node and figures of the released classes (numbers, the
# names of columns, the models), never a data value.
PLAIN_KEYS = (
    "algorithm", "exact", "parameters", "seed", "max_evaluations", "time_limit", "stopped", "models", "k", "l",
    "l_variant", "l_estimator", "c", "t_closeness", "t_distance", "suppression_limit", "max_suppressed_rows", "rows",
    "rows_released", "rows_written", "quasi_identifiers", "identifiers", "sensitive", "keep", "keep_unnamed",
    "node", "heights", "objective", "loss", "log", "los", "suppressed", "classes", "smallest_class", "dm", "aecs",
    "height", "evaluations", "metric", "metrics", "missing", "recoding", "generalization", "workers",
    "partitioning", "engine", "lower_bound", "gap", "optimal", "holds", "applied_search",
)
FILE_KEYS = ("population", "research_subset", "t_hierarchy")  # model description keys that may name a file
ATTRIBUTE_KEYS = ("level", "height", "loss", "distinct_after", "minimum_level")
PRIVACY_NUMBERS = ("sensitive", "min_distinct_l", "min_entropy_l", "max_t_equal", "max_t_ordered", "recursive_l",
                   "max_recursive_ratio", "min_grassberger_l")
RISK_KEYS = ("threshold", "rows", "rows_released", "classes", "smallest_class", "suppressed", "prosecutor",
             "marketer", "sample_uniques", "sample_uniques_share", "class_sizes", "population_uniqueness",
             "quasi_identifiers")
VERIFIED_KEYS = ("checker", "passed", "rows", "classes", "smallest_class", "suppressed_rows", "escaped")


def file_name(path: object) -> str | None:
    """A path as its file name only (no folder, absolute or not)."""
    return PurePath(str(path)).name if isinstance(path, str) and path else None


def file_entry(record: object) -> dict | None:
    """A provenance file record ({path, absolute_path, bytes, sha256}) as {name, bytes, sha256}."""
    if not isinstance(record, Mapping):
        return None
    out = {"name": file_name(record.get("path"))}
    out |= {key: record[key] for key in ("bytes", "sha256", "rows") if key in record}
    if "parts" in record:  # a folder of parts
        out["parts"] = [file_entry(p) for p in record["parts"]]
    if "files" in record:
        out["files"] = [file_entry(f) for f in record["files"]]
    return out


def hierarchy_entry(record: Mapping) -> dict:
    """A QI's hierarchy in the provenance: the builder spec or the file's name, and the SHA-256s (of the file
    and of the hierarchy built), never its rows."""
    out: dict = {}
    if "builder" in record:
        out["builder"] = record["builder"]
    if "file" in record:
        out["file"] = file_entry(record["file"])
    out |= {key: record[key] for key in ("height", "sha256") if key in record}
    return out


def public_provenance(provenance: Mapping) -> dict:
    """Checksums and versions: the input, release, applied report, config file and hierarchies by name."""
    out: dict = {key: provenance[key] for key in ("kgen_version", "created_utc", "seed") if key in provenance}
    for key in ("input", "release", "applied_report"):
        if key in provenance:
            out[key] = file_entry(provenance[key])
    config = (provenance.get("invocation") or {}).get("config_file")
    if config:
        out["config_file"] = file_entry(config)
    hierarchies = provenance.get("hierarchies") or {}
    out["hierarchies"] = {name: hierarchy_entry(h) for name, h in hierarchies.items() if isinstance(h, Mapping)}
    return out


def hierarchy_name(source: object) -> object:
    """A QI's hierarchy as the summary names it: the builder spec as it is, a file by its name only."""
    if not isinstance(source, str):
        return None
    builder = source.partition(":")[0] in ("decimal", "intervals", "mask", "date", "decade-date", "flat")
    return source if builder else file_name(source)


def public_report(report: Mapping) -> dict:
    """The public report of a full report (anonymize, apply, partitioned or Mondrian): the `PLAIN_KEYS`,
    per QI its level and counts, the privacy and risk figures of the released classes, the check's verdict,
    and the provenance's checksums with files by name (`public_provenance`). No absolute path, no hierarchy
    row, no suppressed row number, no value of the input that the release does not show."""
    out: dict = {"public": True, "note": PUBLIC_NOTE}
    out |= {key: report[key] for key in PLAIN_KEYS if key in report}
    if "models" in out:  # a model's file (a population, a research subset, a hierarchy) by name only
        out["models"] = [{key: file_name(v) if key in FILE_KEYS and isinstance(v, str) else v for key, v in m.items()}
                         for m in out["models"]]
    if report.get("population_counts"):
        out["population_counts"] = report["population_counts"]  # counts only
    if "applied_report" in report:
        out["applied_report"] = file_name(report["applied_report"])
    if "input" in report:
        out["input"] = file_name(report["input"])
    attributes = report.get("attributes") or {}
    out["attributes"] = {name: {key: a[key] for key in ATTRIBUTE_KEYS if key in a}
                         | {"hierarchy": hierarchy_name(a.get("hierarchy"))} for name, a in attributes.items()}
    if "privacy" in report:
        out["privacy"] = [{key: f[key] for key in PRIVACY_NUMBERS if key in f} for f in report["privacy"] or []]
    if isinstance(report.get("risk"), Mapping):
        out["risk"] = {key: report["risk"][key] for key in RISK_KEYS if key in report["risk"]}
    if isinstance(report.get("verified"), Mapping):
        out["verified"] = {key: report["verified"][key] for key in VERIFIED_KEYS if key in report["verified"]}
    if "formula_cells" in report:
        out["formula_cells"] = {key: report["formula_cells"].get(key) for key in ("cells", "escaped")}
    if "fragments" in report:  # Mondrian's parts: names, rows and checksums (conditions hold split values)
        out["fragments"] = [{key: f.get(key) for key in ("part", "rows", "sha256")} for f in report["fragments"]]
    if isinstance(report.get("provenance"), Mapping):
        out["provenance"] = public_provenance(report["provenance"])
    return without_dp_seed(out)


def without_dp_seed(out: dict) -> dict:
    """A differential-privacy release's public report without its seed: the guarantee assumes the sample and
    the draws are secret, and the seed reproduces both (docs/privacy-models.md)."""
    models = out.get("models") or []
    if not any(isinstance(m, Mapping) and m.get("model") == "differential-privacy" for m in models):
        return out
    out.pop("seed", None)
    for key in ("parameters", "provenance"):
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k != "seed"}
    return out


def public_json(report: Mapping) -> str:
    """The public report as the JSON text that is written (indented, UTF-8, a newline at the end)."""
    return json.dumps(public_report(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


__all__ = ["PUBLIC_NOTE", "public_json", "public_report"]
