"""A report a person reads: one self-contained HTML page for a release, from its JSON report.

The JSON report is complete but written for programs; a data steward signing off a release wants to see, on
one page that can be mailed or archived, what was generalized and how much was lost, how the records spread
over classes, what risk remains and where everything came from. The page holds the console summary, the
per-QI levels and loss as a bar chart, the class-size distribution, the risk figures and the provenance. It
needs no network and no script: charts are PNGs drawn with matplotlib's Agg backend and inlined as base64,
the style is inline, and every text taken from the report or the data is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from fitness import privacy
from kgen.io.files import write_atomic
from kgen.io.table import read_csv
from kgen.report import provenance, risk
from kgen.report import summary as summarizing

LEVEL_COLORS = {"kept": "#2b8a3e", "between": "#e8a33d", "full": "#c92a2a"}
STYLE = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;color:#222;
padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:.85em;line-height:1.35}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;
vertical-align:top;overflow-wrap:anywhere}th{background:#f0f0f0;min-width:8em}td.num{text-align:right;font-variant-numeric:tabular-nums}
.ok{color:#2b8a3e;font-weight:bold}.bad{color:#c92a2a;font-weight:bold}.muted{color:#666}
img{max-width:100%;height:auto;border:1px solid #eee}code{font-size:.9em;word-break:break-all}
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def png(figure: object) -> str:
    """A matplotlib Figure as a base64 data URI (PNG)."""
    # optional dependency: matplotlib, deferred: 0.25 s of start-up that only an HTML page needs
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(figure)  # type: ignore[arg-type]
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)  # type: ignore[attr-defined]
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def level_chart(attributes: Mapping[str, Mapping]) -> str:
    """Per QI, the loss level/height as a horizontal bar, coloured by kept / in between / fully generalized."""
    # optional dependency: matplotlib, deferred: 0.25 s of start-up that only an HTML page needs
    from matplotlib.figure import Figure

    # optional dependency: matplotlib, deferred: 0.25 s of start-up that only an HTML page needs
    from matplotlib.patches import Patch

    names = list(attributes)
    q = len(names)
    height = min(60.0, max(2.5, 0.5 + 0.2 * q))
    figure = Figure(figsize=(9, height), layout="constrained")
    ax = figure.add_subplot()
    # a kept QI (loss 0) still gets a sliver of a bar, so that its colour shows
    losses = [max(float(attributes[n]["loss"]), 0.01) for n in names]
    colors = []
    for n in names:
        colors.append(LEVEL_COLORS[summarizing.level_kind(attributes[n])])
    positions = list(range(q))
    ax.barh(positions, losses, color=colors, height=0.75)
    ax.set_yticks(positions, labels=[f"{summarizing.cut(n, 28)}  {attributes[n]['level']}/"
                                     f"{attributes[n]['height']}" for n in names],
                  fontsize=8 if q <= 40 else 6)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_ylim(q - 0.5, -0.5)
    ax.set_xlabel("information loss of the QI: level / height (0 = kept as is, 1 = fully generalized)")
    ax.set_title(f"Generalization level of each quasi-identifier ({q} QIs)")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=LEVEL_COLORS[k], label=label) for k, label in
               (("kept", "kept (level 0)"), ("between", "in between"), ("full", "fully generalized"))]
    figure.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    return png(figure)


def class_chart(class_sizes: Sequence[Sequence[int]], k: int, threshold: float) -> str:
    """Records by the size of their class (log-spaced bins), with k and the risk threshold's size marked."""
    # optional dependency: matplotlib, deferred: 0.25 s of start-up that only an HTML page needs
    from matplotlib.figure import Figure

    sizes = np.array([s for s, _ in class_sizes], dtype=float)
    records = np.array([s * c for s, c in class_sizes], dtype=float)
    figure = Figure(figsize=(9, 3.6), layout="constrained")
    ax = figure.add_subplot()
    if sizes.size:
        top = max(2.0, float(sizes.max()) * 1.05)
        bins = np.unique(np.round(np.geomspace(1, top, 40)))
        bins = np.append(bins, bins[-1] + 1) if bins.size < 2 else bins
        ax.hist(sizes, bins=bins, weights=records, color="#4263eb", edgecolor="white", linewidth=0.4)
        ax.set_xscale("log")
        ax.set_xlim(1, top)
    ax.axvline(k, color="#c92a2a", linestyle="--", linewidth=1.2, label=f"k = {k}")
    if threshold > 0:
        ax.axvline(1 / threshold, color="#e8a33d", linestyle=":", linewidth=1.5,
                   label=f"size 1/threshold = {1 / threshold:g} (risk {threshold:g})")
    ax.set_xlabel("size of the record's equivalence class (log scale)")
    ax.set_ylabel("released records")
    ax.set_title("How the released records spread over class sizes")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=8)
    ax.grid(alpha=0.3)
    return png(figure)


def rows_table(rows: Sequence[tuple[str, object]]) -> str:
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def pct(x: float) -> str:
    return f"{x:.3%}"


def uniqueness_share(u: Mapping) -> str:
    """The estimated share of population uniques, or why there is none (the chosen model found no estimate)."""
    return "no estimate" if u.get("share") is None else pct(u["share"])


def risk_section(risk: Mapping | None) -> str:
    if not risk:
        return "<p class='muted'>This report has no risk section (written by an older kgen): run " \
               "<code>kgen risk RELEASE --qi ...</code>.</p>"
    p = risk["prosecutor"]
    u = risk["population_uniqueness"]
    rows: list[tuple[str, object]] = [
        ("released rows / classes", f"{risk['rows_released']} / {risk['classes']} (smallest class "
                                    f"{risk['smallest_class']}, {risk['suppressed']} rows suppressed)"),
        ("prosecutor risk: highest (1 / smallest class)", pct(p["max"])),
        ("prosecutor risk: mean over records (classes / released rows)", pct(p["mean"])),
        (f"records above the threshold {risk['threshold']:g}", f"{p['rows_above_threshold']} "
                                                              f"({pct(p['records_above_threshold'])})"),
        ("marketer risk (classes / released rows)", pct(risk["marketer"])),
        ("sample uniques", f"{risk['sample_uniques']} ({pct(risk['sample_uniques_share'])})"),
        ("records in classes smaller than 10", sum(s * c for s, c in risk.get("class_sizes", []) if s < 10)),
        ("population uniqueness", f"{uniqueness_share(u)} of {u.get('population_rows', 0)} population rows "
                                  f"(model: {u['model']}, sampling fraction {u['sampling_fraction']:g})"),
    ]
    j = risk.get("journalist")
    if j:
        rows += [("journalist risk: highest / mean", f"{pct(j['max'])} / {pct(j['mean'])}"),
                 ("journalist: records above the threshold", j["rows_above_threshold"])]
    note = ("<p class='muted'>Definitions and models: docs/risk.md (prosecutor, marketer and journalist risk; "
            "population uniqueness after Pitman / Zayatz as in Dankar et al. 2012).</p>")
    return rows_table(rows) + note


def provenance_section(prov: Mapping | None, release_check: str | None) -> str:
    if not prov:
        return "<p class='muted'>This report has no provenance section (written by an older kgen).</p>"
    inv = prov.get("invocation", {})
    command = " ".join(inv.get("argv", [])) if inv.get("kind") == "command line" else inv.get("call", "")
    data = prov.get("input", {})
    release = prov.get("release", {})
    rows: list[tuple[str, object]] = [
        ("kgen version", prov.get("kgen_version")),
        ("created (UTC)", prov.get("created_utc")),
        ("invocation", f"{inv.get('kind', '?')}: {command}"),
        ("seed", prov.get("seed")),
        ("input", f"{data.get('path')} ({data.get('bytes', '?')} bytes, {data.get('rows', '?')} rows)"),
        ("input SHA-256", data.get("sha256", "-")),
        ("release", f"{release.get('path', '-')} ({release.get('bytes', '?')} bytes)"),
        ("release SHA-256", release.get("sha256", "-")),
        ("platform", ", ".join(f"{k} {v}" for k, v in prov.get("platform", {}).items())),
    ]
    out = rows_table(rows)
    if release_check:
        out += release_check
    hierarchies = prov.get("hierarchies", {})
    if hierarchies:
        body = []
        for name, h in hierarchies.items():
            source = h.get("builder") or (h.get("file") or {}).get("path") or h.get("object", "?")
            file_sha = (h.get("file") or {}).get("sha256", "")
            body.append(f"<tr><td>{esc(name)}</td><td><code>{esc(source)}</code></td>"
                        f"<td class='num'>{esc(h.get('height', ''))}</td><td><code>{esc(file_sha[:16])}</code></td>"
                        f"<td><code>{esc(str(h.get('sha256', ''))[:16])}</code></td></tr>")
        out += ("<h3>Hierarchies</h3><table><tr><th>QI</th><th>source</th><th>height</th>"
                "<th>file SHA-256 (16)</th><th>hierarchy used, SHA-256 (16)</th></tr>" + "".join(body) + "</table>")
    params = prov.get("parameters", {}).get("values", {})
    if params:
        defaults = set(prov["parameters"].get("defaults_used", []))
        body = "".join(f"<tr><td>{esc(k)}</td><td><code>{esc(summarizing.cut(str(v), 200))}</code></td>"
                       f"<td class='muted'>{'default' if k in defaults else 'given'}</td></tr>"
                       for k, v in params.items())
        out += f"<h3>Parameters</h3><table><tr><th>name</th><th>value</th><th></th></tr>{body}</table>"
    return out


def attribute_table(attributes: Mapping[str, Mapping]) -> str:
    body = "".join(
        f"<tr><td>{esc(n)}</td><td class='num'>{a['level']}/{a['height']}</td><td class='num'>{a['loss']:.2f}</td>"
        f"<td class='num'>{a['distinct_before']} &rarr; {a['distinct_after']}</td>"
        f"<td><code>{esc(summarizing.short_source(str(a.get('hierarchy', ''))))}</code></td></tr>"
        for n, a in attributes.items())
    return ("<table><tr><th>QI</th><th>level</th><th>loss</th><th>distinct values</th><th>hierarchy</th></tr>"
            f"{body}</table>")


def release_check(report: Mapping, release: str | os.PathLike | None) -> tuple[str | None, dict | None]:
    """When the release file is given: its SHA-256 against the report's, and its risk measured from it."""
    if release is None:
        return None, None

    found = provenance.sha256_file(release)
    recorded = (report.get("provenance") or {}).get("release", {}).get("sha256")
    if recorded is None:
        verdict = "<p class='muted'>The report records no release checksum.</p>"
    elif found == recorded:
        verdict = f"<p class='ok'>{esc(release)}: SHA-256 matches the report.</p>"
    else:
        verdict = (f"<p class='bad'>{esc(release)}: SHA-256 {esc(found[:16])}... does NOT match the report "
                   f"({esc(str(recorded)[:16])}...): this is not the release the report describes.</p>")
    measured = risk.risk_report(read_csv(release), list(report["quasi_identifiers"]),
                                float((report.get("risk") or {}).get("threshold", risk.DEFAULT_THRESHOLD)))
    return verdict, measured


def render(report: Mapping, release: str | os.PathLike | None = None, title: str | None = None) -> str:
    """The HTML page of a report (and, when given, its release file, checked and measured): an anonymize
    report's full page, or for `kgen apply` and `kgen mondrian` the figures they have."""
    if "attributes" not in report:
        return render_release_figures(report, release, title)
    verdict, measured = release_check(report, release)
    r = report
    risk = r.get("risk") or measured
    attributes = r["attributes"]
    prov = r.get("provenance") or {}
    source = (prov.get("input") or {}).get("path") or "an in-memory table"
    heading = title or f"kgen release report: {Path(str(source)).name}"
    sections = [
        f"<h1>{esc(heading)}</h1>",
        f"<p class='muted'>{esc(r['algorithm'])} on {esc(source)}; k = {esc(r['k'])}, suppression limit "
        f"{r['suppression_limit']:.2%}; {len(attributes)} quasi-identifiers; created "
        f"{esc(prov.get('created_utc', '?'))}</p>",
        "<h2>Summary</h2>",
        f"<pre>{esc(summarizing.text(r))}</pre>",
        "<h2>Generalization and loss per quasi-identifier</h2>",
        f"<img alt='bar chart of the generalization level of each QI' src='{level_chart(attributes)}'>",
        "<details><summary>Table of levels</summary>" + attribute_table(attributes) + "</details>",
        "<h2>Class sizes</h2>",
    ]
    if risk:
        sections.append(f"<img alt='histogram of released records by class size' "
                        f"src='{class_chart(risk['class_sizes'], int(r['k']), float(risk['threshold']))}'>")
    sections += refinement_section(r)
    sections += ["<h2>Re-identification risk</h2>", risk_section(risk)]
    if measured is not None and r.get("risk"):
        same = measured["prosecutor"] == r["risk"]["prosecutor"] and measured["classes"] == r["risk"]["classes"]
        sections.append(f"<p class='{'ok' if same else 'bad'}'>Measured again on {esc(release)}: "
                        f"{'the same figures' if same else 'DIFFERENT figures'} (highest prosecutor risk "
                        f"{pct(measured['prosecutor']['max'])}, {measured['classes']} classes).</p>")
    sections += ["<h2>Provenance</h2>", provenance_section(prov, verdict)]
    body = "\n".join(sections)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{esc(heading)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def refinement_section(r: Mapping) -> list[str]:
    """Local recoding (each row group's node and rows) and microaggregation (each QI's function and loss),
    when the run asked for them (docs/local-recoding.md)."""
    sections = []
    local = r.get("local_recoding")
    if local:
        rows = [(f"group {i}: node " + ", ".join(f"{name} {level}" for name, level in g["node"].items()),
                 f"{g['rows']} rows") for i, g in enumerate(local["groups"])]
        rows += [("suppressed rows: global node alone / after local recoding",
                  f"{local['suppressed_before']} / {local['suppressed_after']}"),
                 ("NCP: global node alone / after local recoding",
                  f"{local['ncp_before']:.4f} / {local['ncp_after']:.4f}")]
        sections += ["<h2>Local recoding</h2>", rows_table(rows)]
    micro = r.get("microaggregation")
    if micro:
        rows = [(f"{name}: class {m['function']}", f"SSE {m['sse']:.6g}; {pct(m['relative_sse'])} of the total "
                 f"sum of squares; mean squared error {m['mean_squared_error']:.4g}") for name, m in micro.items()]
        sections += ["<h2>Microaggregation</h2>", rows_table(rows)]
    return sections


def model_words(models: Sequence[Mapping]) -> str:
    """The privacy models in their families' words (`fitness.privacy`), as the console summary says them."""
    return "; ".join(privacy.summary_words(models)) or "none"


def render_release_figures(report: Mapping, release: str | os.PathLike | None, title: str | None) -> str:
    """The page of an apply or Mondrian report: what was released under which models, its class sizes and
    risk, and its provenance (the sections an anonymize page has that these reports have too)."""
    verdict, measured = release_check(report, release)
    r = report
    risk = r.get("risk") or measured
    prov = r.get("provenance") or {}
    source = (prov.get("input") or {}).get("path") or r.get("input") or "an in-memory table"
    heading = title or f"kgen release report: {Path(str(source)).name}"
    metrics = r.get("metrics") or {}
    found = r.get("applied_search") or {}  # how the applied node was found: a heuristic is said (flash.py)
    applied = f"apply of {r.get('applied_report')}" + (
        f" (its node: {found.get('algorithm')}, heuristic: {found['heuristic']})" if found.get("heuristic") else "")
    rows = [("algorithm", r.get("algorithm") or applied),
            ("privacy models", model_words(r.get("models") or [])),
            ("quasi-identifiers", ", ".join(r["quasi_identifiers"])),
            ("identifiers (replaced by *)", ", ".join(r.get("identifiers") or []) or "none"),
            ("sensitive", ", ".join(r.get("sensitive") or []) or "none"),
            ("kept (released as they are)", "every unnamed column" if r.get("keep_unnamed")
             else ", ".join(r.get("keep") or []) or "none"),
            ("rows, released", summarizing.released_text(r) if "rows" in r else "n/a"),
            ("suppressed rows", r.get("suppressed", 0)),
            ("classes (smallest)", f"{r.get('classes')} ({r.get('smallest_class')})")]
    rows += [(f"metric {name}", value) for name, value in metrics.items() if not isinstance(value, (dict, list))]
    rows += [("controls", line.strip()) for line in summarizing.control_lines(r)]
    sections = [f"<h1>{esc(heading)}</h1>", "<h2>Release</h2>", rows_table(rows), "<h2>Class sizes</h2>"]
    k = int(r.get("k") or max([m.get("k", 1) for m in r.get("models") or []] or [1]))
    if risk:
        sections.append(f"<img alt='histogram of released records by class size' "
                        f"src='{class_chart(risk['class_sizes'], k, float(risk['threshold']))}'>")
    sections += refinement_section(r)
    sections += ["<h2>Re-identification risk</h2>", risk_section(risk), "<h2>Provenance</h2>",
                 provenance_section(prov, verdict)]
    body = "\n".join(sections)
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{esc(heading)}</title><style>{STYLE}</style></head>\n<body>\n{body}\n</body></html>\n")


def write(report: Mapping, path: str | os.PathLike, release: str | os.PathLike | None = None,
          protected: Sequence[str | os.PathLike] = ()) -> None:
    """Render and write the page atomically (never over a `protected` input)."""

    write_atomic(path, render(report, release), protected)




__all__ = ["render", "write"]
