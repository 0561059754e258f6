"""The console summary of an anonymization, readable at any number of QIs.

At 97 QIs a line per attribute, or the node printed as a dict, is a wall of text that hides the one fact a
reader needs: which QIs were kept and which became `*`. The summary groups the chosen node (fully
generalized / kept at level 0 / in between), gives LOG, suppression, classes and risk on one line each, and
names the hierarchy each QI used, grouped by source. Every line fits in `WIDTH` columns (but for the file
paths on the "wrote" lines): long lists of names end in "(+N more)". It is built from the report alone, so
it can be printed again from a saved JSON report.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from fitness import privacy

WIDTH = 100
PER_QI_LINES = 12  # up to this many QIs, one line per attribute; above it, grouped lines only


def fit(head: str, names: Sequence[str], width: int = WIDTH) -> str:
    """`head` followed by as many `names` as fit in `width` columns, then "(+N more)"."""
    line = head
    for i, name in enumerate(names):
        candidate = line + (", " if i else "") + name
        left = len(names) - i - 1
        if len(candidate) + (len(f" (+{left} more)") if left else 0) > width:
            return line + f" (+{len(names) - i} more)"
        line = candidate
    return line


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def level_kind(attribute: Mapping) -> str:
    """"kept" (level 0), "full" (generalized to one value: the top level, or a lower level that already
    merges every value, as a decimal hierarchy's tens do for ages 20-29) or "between"."""
    a = attribute
    if a["level"] == 0:
        return "kept"
    if a["level"] >= a["height"] or a.get("distinct_after") == 1:
        return "full"
    return "between"


def node_groups(attributes: Mapping[str, Mapping]) -> tuple[list[str], list[str], list[str]]:
    """QIs fully generalized (one value left), kept as they are (level 0) and in between (`level_kind`)."""
    groups: dict[str, list[str]] = {"full": [], "kept": [], "between": []}
    for name, a in attributes.items():
        groups[level_kind(a)].append(name)
    return groups["full"], groups["kept"], groups["between"]


def node_lines(attributes: Mapping[str, Mapping], width: int = WIDTH) -> list[str]:
    q = len(attributes)
    full, kept, between = node_groups(attributes)
    lines = [f"  node: {len(full)} of {q} QIs fully generalized, {len(kept)} kept at level 0, "
             f"{len(between)} in between"]
    if full and len(full) < q:
        lines.append(fit(f"    fully generalized ({len(full)}): ", full, width))
    if kept:
        lines.append(fit(f"    kept at level 0 ({len(kept)}): ", kept, width))
    if between:
        lines.append(fit(f"    in between ({len(between)}): ",
                         [f"{n} {attributes[n]['level']}/{attributes[n]['height']}" for n in between], width))
    return lines


def hierarchy_kind(source: str) -> str:
    """A short name for a hierarchy source: the builder, or "file in FOLDER"."""
    kind = source.partition(":")[0]
    if kind in ("decimal", "intervals", "mask", "date", "decade-date", "flat"):
        return source
    if os.sep in source or source.endswith(".csv"):
        return f"file in {Path(source).parent}"
    return source


def short_source(source: str) -> str:
    """A hierarchy source for one line: the builder spec, or the file's name."""
    return source if hierarchy_kind(source) == source else Path(source).name


def hierarchy_lines(attributes: Mapping[str, Mapping], width: int = WIDTH) -> list[str]:
    groups: dict[str, list[str]] = {}
    for name, a in attributes.items():
        groups.setdefault(hierarchy_kind(str(a.get("hierarchy", "?"))), []).append(name)
    lines = []
    for kind, names in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines.append(fit(f"    {cut(kind, 50)} ({len(names)}): ", names, width))
    return ["  hierarchies:"] + lines


def attribute_lines(attributes: Mapping[str, Mapping], width: int = WIDTH) -> list[str]:
    lines = []
    for name, a in attributes.items():
        text = (f"  {cut(name, 16):>16}: level {a['level']}/{a['height']}  loss {a['loss']:.2f}  "
                f"distinct {a['distinct_before']} -> {a['distinct_after']}  ")
        lines.append(cut(text + short_source(str(a.get("hierarchy", ""))), width))
    return lines


def control_lines(r: Mapping, width: int = WIDTH) -> list[str]:
    """The steward's per-QI controls the release was held to: level limits and objective weights (none: no
    line, so a run without them reads as before)."""
    lines = []
    lows, highs = r.get("min_levels") or {}, r.get("max_levels") or {}
    limits = [f"{name} {lows.get(name, 0)}..{highs[name] if name in highs else 'top'}"
              for name in dict.fromkeys([*r.get("quasi_identifiers", []), *lows, *highs])
              if name in lows or name in highs]
    if limits:
        lines.append(fit("  level limits: ", limits, width))
    weights = r.get("weights") or {}
    if weights:
        order = dict.fromkeys([*r.get("quasi_identifiers", []), *weights])
        lines.append(fit(f"  weights ({r.get('metric', 'log')}; others 1): ",
                         [f"{name} {weights[name]:g}" for name in order if name in weights], width))
    return lines


def risk_line(risk: Mapping | None) -> list[str]:
    if not risk:
        return []
    p = risk["prosecutor"]
    small = sum(s * c for s, c in risk.get("class_sizes", []) if s < 10)
    return [f"  risk: prosecutor highest {p['max']:.2%}, mean {p['mean']:.3%}; {p['rows_above_threshold']} rows "
            f"above {risk['threshold']:g}",
            f"    {risk['sample_uniques']} sample uniques; {small} rows in classes smaller than 10"]


def text(report: Mapping, output: str | os.PathLike | None = None, report_path: str | os.PathLike | None = None,
         width: int = WIDTH, html: str | os.PathLike | None = None,
         public: str | os.PathLike | None = None) -> str:
    """The summary of an anonymize report, every line at most `width` columns."""
    r = report
    attributes = r["attributes"]
    q = len(attributes)
    limit = f"  k = {r['k']}, suppression limit {r['suppression_limit']:.2%} ({r['max_suppressed_rows']} rows)"
    counts = released_text(r)
    lines = [f"{r['algorithm']} ({r['stopped']}, {r['evaluations']} evaluations, {r['seconds']:.2f} s): {q} QIs"]
    lines += [f"{limit}; {counts}"] if len(limit) + len(counts) + 2 <= width else [limit, f"  {counts}"]
    if len(r.get("models") or []) > 1:  # beyond k-anonymity, which the line above states
        lines.append(cut("  models: " + "; ".join(privacy.summary_words(r["models"])), width))
    lines += node_lines(attributes, width)
    lines += control_lines(r, width)
    lines.append(f"  LOG {r['log']:.4f}  LOS {r['los']:.4f} ({r['suppressed']} rows suppressed)  classes "
                 f"{r['classes']}  smallest {r['smallest_class']}  AECS {r['aecs']:.1f}")
    m = r.get("metrics")
    if m:
        lines.append(f"  objective {r.get('metric', 'log')} = {r['loss']:.4f}; NCP {m['ncp']:.4f}  Loss "
                     f"{m['loss']:.4f}  entropy {m['entropy']:.4f}  DM {m['dm']:.0f}")
        lines += arx_score_lines(r.get("metric", "log"), m)
    for f in r.get("privacy", []):
        if f.get("min_distinct_l") is not None:
            lines.append(cut(f"  {f['sensitive']}: distinct l {f['min_distinct_l']}  entropy l "
                             f"{f['min_entropy_l']:.3f}{grassberger_words(f)}  t equal {f['max_t_equal']:.4f}  t "
                             f"ordered {f['max_t_ordered']:.4f}{likeness_words(f)}", width))
    lines += population_line(r.get("population_counts"), r.get("models") or [])
    lines += bound_line(r)
    lines += refinement_lines(r, width)
    lines += risk_line(r.get("risk"))
    lines += attribute_lines(attributes, width) if q <= PER_QI_LINES else hierarchy_lines(attributes, width)
    heuristic = (r.get("parameters") or {}).get("heuristic")
    if heuristic:  # ARX's practical monotonicity (lattice/search/flash.py): the node is not proved optimal
        lines.append(f"  heuristic: {heuristic}")
    if r.get("exact") and r["stopped"] != "complete" and not r.get("optimal"):
        lines.append(f"  note: the search stopped early ({r['stopped']}): the node may not be optimal")
    if output is not None:
        lines += [f"  wrote {output}", f"    and {report_path}"] + ([f"    and {html}"] if html else [])
        lines += [f"    and {public} (public report)"] if public else []
    return "\n".join(lines)


def population_line(counts: Mapping | None, models: Sequence[Mapping] = ()) -> list[str]:
    """The population's figures (delta-presence, k-map with a population): none on the common path; with
    delta-presence in ARX's order of checks, the population classes it let pass without a subset row."""
    if not counts or counts.get("least_population_match") is None:
        return []
    lines = [f"  population: {counts['population_rows']} rows; each released class matches >= "
             f"{counts['least_population_match']} of them, share in the release {counts['share_min']:.3f} to "
             f"{counts['share_max']:.3f}"]
    arx = next((m for m in models if m.get("model") == "delta-presence" and m.get("variant") == "arx"), None)
    if arx is not None and int(arx.get("minimal_class_size") or 1) > 1:
        lines.append(f"  delta-presence, ARX's order (weaker than the definition): "
                     f"{counts.get('population_classes_without_released_rows', 0)} population classes without a "
                     f"subset row let pass beside class size {arx['minimal_class_size']}")
    return lines


def released_text(r: Mapping) -> str:
    """Rows released and suppressed, in the report's words: `rows_released` counts the rows not suppressed;
    suppressed rows are written with * in every QI, or left out (`rows_written` < `rows`)."""
    suppressed = r.get("suppressed") or 0
    released = r.get("rows_released", r["rows"] - suppressed)
    if not suppressed:
        return f"{r['rows']} rows, {released} released"
    how = "left out" if r.get("rows_written", r["rows"]) < r["rows"] else "written with * in every QI"
    return f"{r['rows']} rows: {released} released, {suppressed} suppressed ({how})"


def refinement_lines(r: Mapping, width: int = WIDTH) -> list[str]:
    """Local recoding (each group's node and rows) and microaggregation (each QI's function and loss)."""
    lines = []
    local = r.get("local_recoding")
    if local:
        groups = local["groups"]
        lines.append(f"  local recoding: {len(groups)} row groups; suppressed {local['suppressed_before']} -> "
                     f"{local['suppressed_after']}, NCP {local['ncp_before']:.4f} -> {local['ncp_after']:.4f}")
        for i, g in enumerate(groups[:8]):
            levels = ",".join(str(x) for x in g["node"].values())
            lines.append(cut(f"    group {i}: {g['rows']} rows at node ({levels})", width))
        if len(groups) > 8:
            lines.append(f"    (+{len(groups) - 8} more groups in the report)")
    for name, m in (r.get("microaggregation") or {}).items():
        lines.append(cut(f"  microaggregated {name}: class {m['function']}, SSE {m['sse']:.4g} "
                         f"({m['relative_sse']:.2%} of the total sum of squares)", width))
    return lines


def bound_line(r: dict) -> list[str]:
    """How far from the optimum the release is, as proved by the certified lower bound (docs/certify.md): "proved
    optimal", else "best found, within [lower bound, found]"; and, for `auto`, how it answered when it could
    not run the certified search."""
    lines = []
    if r.get("optimal"):
        lines.append("  proved optimal")
    elif r.get("gap") is not None:
        found = r["lower_bound"] + r["gap"]
        lines.append(f"  best found, within [{r['lower_bound']:.4f}, {found:.4f}] ({r.get('metric', 'log')}; the "
                     f"optimum is proved in it)")
    auto = (r.get("parameters") or {}).get("auto") or {}
    if auto.get("why"):
        lines.append(cut(f"  auto: {auto['answer']} instead of the certified search ({auto['why']})", WIDTH))
    return lines


def next_steps(output: str | os.PathLike, report: str | os.PathLike, qis: Sequence[str], k: int,
               html: str | os.PathLike | None = None, suppression: float = 0.0) -> str:
    """What to look at after `kgen demo`: the HTML report, the risk, the independent check with checksums."""
    lines = ["Next:"]
    if html is not None:
        lines.append(f"  open {html} in a browser: summary, charts, risk and provenance")
    else:
        lines.append(f"  kgen report {report} -o {Path(report).with_suffix('.html')}")
    lines += [
        f"  kgen risk {output} --report {report}",
        f"  kgen check {output} --report {report} \\",
        f"      --k {k} --suppression {suppression:g} \\",
        fit("      --qi ", [",".join(qis)], WIDTH) if len(",".join(qis)) < WIDTH - 12 else "      --qi QI,...",
        "  the JSON report holds every figure, the suppressed rows and the provenance (docs/report.md)",
    ]
    return "\n".join(lines)


def grassberger_words(figures: dict) -> str:
    """exp of the least Grassberger entropy estimate, when the run had entropy l-diversity under it."""
    return f" (grassberger {figures['min_grassberger_l']:.3f})" if "min_grassberger_l" in figures else ""


def likeness_words(figures: dict) -> str:
    """The largest beta and delta-disclosure of a sensitive column, when the report has them (older ones do not)."""
    if figures.get("max_beta") is None:
        return ""
    return f"  beta {figures['max_beta']:.3f}  delta {figures['max_delta_disclosure']:.3f}"


# ARX's raw score of each ARX metric variant (docs/metrics.md): the report key and its unit
ARX_SCORES = {"arx-entropy": ("arx_entropy_bits", " bits"), "arx-entropy-nm": ("arx_entropy_nm_bits", " bits"),
              "arx-dm": ("dm_star", " (DM*)"), "arx-loss": ("arx-loss", ""), "arx-precision": ("arx-precision", "")}


def arx_score_lines(metric: str, metrics: dict) -> list[str]:
    """The line with ARX's own score for an ARX metric (full precision, to compare with an ARX result)."""
    key, unit = ARX_SCORES.get(metric, (metric, "") if metric.startswith("arx-loss:") else (None, ""))
    if key is None or metrics.get(key) is None:
        return []
    return [f"  ARX's score: {metrics[key]!r}{unit}"]


__all__ = ["WIDTH", "arx_score_lines", "control_lines", "level_kind", "next_steps", "released_text", "text"]
