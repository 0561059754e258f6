"""Provenance of a release: what produced it, from what, and checksums that tie the report to its files.

A report that cannot be tied to its input and release proves nothing to an auditor. The `provenance` section
records the kgen version, the UTC time, the command line (or the API call) with every parameter including
defaults, the input file's path, size and SHA-256, each QI's hierarchy source (file and SHA-256, or builder
spec) with a digest of the hierarchy actually used, the seed and the platform. The release's SHA-256 is
computed on the bytes written and checked again on the written file; `kgen check --report` and
`kgen apply --report` re-compute the checksums and refuse a file that does not match its report.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path

from fitness import privacy
from kgen.io.files import open_input, read_json
from kgen.status import ChecksumError, ExitCode
from kgen.version import version
from lattice.errors import InputError

CHUNK = 1 << 20
BUILDERS = ("decimal", "intervals", "mask", "date", "decade-date", "flat")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB chunks; a regular file only (a FIFO given to
    `apply --verify-release` waited for ever, a device was read for ever)."""
    digest = hashlib.sha256()
    with open_input(path) as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def config_record(path: str | os.PathLike, data: bytes) -> dict:
    """{"path", "absolute_path", "bytes", "sha256"} of a `--config` file, from the very bytes that were parsed."""
    return {"path": str(path), "absolute_path": str(Path(path).resolve()), "bytes": len(data),
            "sha256": sha256_bytes(data)}


def file_record(path: str | os.PathLike) -> dict:
    """{"path", "bytes", "sha256"} of an existing file (the path as given, and resolved)."""
    p = Path(path)
    return {"path": str(path), "absolute_path": str(p.resolve()), "bytes": p.stat().st_size,
            "sha256": sha256_file(p)}


def jsonable(value: object) -> object:
    """A JSON-ready copy of a configuration value (mappings, sequences, numbers, strings; objects by type)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "paths") and hasattr(value, "height"):  # a lattice.hierarchy.Hierarchy object
        return f"Hierarchy object ({getattr(value, 'name', '?')})"
    return f"{type(value).__name__} object"


def parameters(config: object) -> dict:
    """Every field of the Config dataclass with its value, defaults included, and which ones were defaults."""
    out, defaults = {}, []
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        out[f.name] = jsonable(value)
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        if default is not dataclasses.MISSING and jsonable(default) == out[f.name]:
            defaults.append(f.name)
    return {"values": out, "defaults_used": defaults}


def hierarchy_digest(hierarchy: object) -> str:
    """SHA-256 of the hierarchy actually used: its generalization paths as canonical JSON."""
    paths = getattr(hierarchy, "paths", {})
    rows = sorted([str(k), [str(x) for x in v]] for k, v in paths.items())
    return sha256_bytes(json.dumps(rows, separators=(",", ":")).encode("utf-8"))


def hierarchy_source(source: str, hierarchy: object) -> dict:
    """Where a QI's hierarchy came from: a file (with its size and SHA-256) or a builder spec; always the
    digest of the hierarchy built, so two runs can be compared even when built from the data."""
    out: dict[str, object]
    if Path(source).is_file():
        out = {"file": file_record(source)}
    elif source.partition(":")[0] in BUILDERS:
        out = {"builder": source}
    else:
        out = {"object": source}
    out["height"] = int(getattr(hierarchy, "height", 0))
    out["sha256"] = hierarchy_digest(hierarchy)
    return out


def model_files(config: object) -> dict:
    """Each file a privacy model read (`fitness.privacy.Parameter.resource`: the hierarchy of
    `--t-hierarchy`), by parameter: its path, size and SHA-256."""
    paths = {p.name: getattr(config, p.name, None) for p in privacy.resource_parameters()}
    return {name: file_record(path) for name, path in paths.items() if isinstance(path, str) and Path(path).is_file()}


def command_invocation(argv: list[str], config_file: dict | None = None) -> dict:
    """The invocation of a run from the command line: its argv and, with `--config FILE`, the file's path,
    size and SHA-256 (the options read from it). The CLI passes it down the run; nothing keeps it globally."""
    out: dict = {"kind": "command line", "argv": list(argv)}
    if config_file is not None:
        out["config_file"] = dict(config_file)
    return out


def api_invocation() -> dict:
    """The invocation of a run from Python."""
    return {"kind": "python api", "call": "kgen.anonymize(data, Config(...))", "argv_of_host": list(sys.argv)}


def build(config: object, table: object, hierarchy_sources: Mapping[str, str],
          hierarchies: Mapping[str, object], invocation: Mapping | None = None, input_rows: int | None = None
          ) -> dict:
    """The `provenance` section of a report (the release checksum is added by `attach_release`). `input_rows`:
    the input file's rows where the anonymized table is a part of it (δ-presence's research subset); the
    part's rows are then `anonymized_rows`."""
    source = getattr(table, "source", None)
    if source and Path(source).is_file():
        data = file_record(source)
    else:
        data = {"path": None, "note": "in-memory table (no file)"}
    data |= {"rows": int(getattr(table, "n", 0)), "columns": list(getattr(table, "columns", ()))}
    if input_rows is not None:
        data |= {"rows": int(input_rows), "anonymized_rows": int(getattr(table, "n", 0))}
    return {
        "kgen_version": version(),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "invocation": dict(invocation) if invocation is not None else api_invocation(),
        "parameters": parameters(config),
        "seed": getattr(config, "seed", None),
        "input": data,
        "hierarchies": {name: hierarchy_source(hierarchy_sources[name], hierarchies[name])
                        for name in hierarchy_sources},
        "model_files": model_files(config),
        "platform": {"python": platform.python_version(), "implementation": platform.python_implementation(),
                     "system": platform.platform(), "machine": platform.machine()},
    }


def for_files(inputs: list[str], hierarchies: Mapping[str, str | None], invocation: Mapping | None = None) -> dict:
    """The provenance of a run over stored files (`kgen mondrian`): each input file and hierarchy file with its
    size and SHA-256, as `build` records them."""
    return {
        "kgen_version": version(),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "invocation": dict(invocation) if invocation is not None else api_invocation(),
        "input": file_record(inputs[0]) if len(inputs) == 1 else {"files": [file_record(f) for f in inputs]},
        "hierarchies": {name: {"file": file_record(path)} for name, path in hierarchies.items() if path},
        "platform": {"python": platform.python_version(), "implementation": platform.python_implementation(),
                     "system": platform.platform(), "machine": platform.machine()},
    }


def for_apply(input_path: str | None, report_path: str, report: Mapping, invocation: Mapping | None = None,
              hierarchy_sources: Mapping[str, str] | None = None, hierarchies: Mapping[str, object] | None = None,
              ) -> dict:
    """The provenance of a `kgen apply` run: as `build` (each QI's hierarchy as used, with its digest), with
    the applied report's checksum and the provenance of the run that wrote it."""
    sources, used = hierarchy_sources or {}, hierarchies or {}
    return {
        "kgen_version": version(),
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "invocation": dict(invocation) if invocation is not None else api_invocation(),
        "input": file_record(input_path) if input_path and Path(input_path).is_file() else {"path": input_path},
        "applied_report": file_record(report_path) if Path(report_path).is_file() else {"path": report_path},
        "applied_report_provenance": report.get("provenance"),
        "hierarchies": {name: hierarchy_source(sources[name], used[name]) for name in sources},
        "platform": {"python": platform.python_version(), "implementation": platform.python_implementation(),
                     "system": platform.platform(), "machine": platform.machine()},
    }


def attach_release(report: dict, path: str | os.PathLike, text: str) -> str:
    """Record the release's path, size and SHA-256 (of the UTF-8 bytes that will be written) in the report's
    provenance; returns the digest, to be checked on the written file with `check_written`."""
    data = text.encode("utf-8")
    digest = sha256_bytes(data)
    report.setdefault("provenance", {})["release"] = {"path": str(path), "absolute_path": str(Path(path).resolve()),
                                                      "bytes": len(data), "sha256": digest}
    return digest


def attach_release_file(report: dict, path: str | os.PathLike, written: str | os.PathLike) -> str:
    """Record in the report's provenance the size and SHA-256 of the release as written (`written`, e.g. the
    temporary file before its rename to `path`); returns the digest."""
    digest = sha256_file(written)
    report.setdefault("provenance", {})["release"] = {"path": str(path), "absolute_path": str(Path(path).resolve()),
                                                      "bytes": os.path.getsize(written), "sha256": digest}
    return digest


def check_written(path: str | os.PathLike, digest: str) -> None:
    """The file written (e.g. the temporary file before its rename) has the recorded SHA-256."""
    found = sha256_file(path)
    if found != digest:
        raise ChecksumError(f"the written release has SHA-256 {found[:12]}..., not the {digest[:12]}... its report "
                            "records: nothing was published", file=str(path), exit_code=ExitCode.RELEASE_CHECK_FAILED)


def verify_against_report(report: Mapping, release: str | os.PathLike | None = None,
                          input_path: str | os.PathLike | None = None, exit_code: int = 1) -> list[str]:
    """Re-compute the checksums a report records for `release` (and `input_path`) and raise ChecksumError
    (with `exit_code`: 1 for `kgen check`, a violation; 2 for `kgen apply`, a wrong input) on a mismatch;
    returns what was verified, as lines for the console."""
    prov = report.get("provenance")
    if not isinstance(prov, Mapping):
        raise InputError("the report has no provenance section (written by an older kgen): nothing to verify "
                         "against")
    done = []
    for label, path, key in (("release", release, "release"), ("input", input_path, "input")):
        if path is None:
            continue
        record = prov.get(key)
        if not isinstance(record, Mapping) or not record.get("sha256"):
            raise InputError(f"the report records no {label} checksum", file=str(path))
        found = sha256_file(path)
        if found != record["sha256"]:
            raise ChecksumError(f"does not match its report: SHA-256 {found[:16]}..., the report records "
                                f"{str(record['sha256'])[:16]}... for the {label} ({record.get('path')})",
                                file=str(path), exit_code=exit_code)
        done.append(f"  {label} {path}: SHA-256 matches the report ({found[:16]}...)")
    return done


def read_report(path: str | os.PathLike) -> dict:
    """A JSON report, or a one-line InputError."""
    report = read_json(path)
    if not isinstance(report, dict):
        raise InputError("is not a kgen report (expected a JSON object)", file=str(path))
    return report


def command_line(argv: Sequence[str] | None) -> list[str]:
    return ["kgen", *(sys.argv[1:] if argv is None else argv)]


__all__ = ["ChecksumError", "attach_release", "attach_release_file", "build", "check_written", "file_record",
           "sha256_file", "verify_against_report"]
