"""The frontier explorer: one self-contained HTML page (inline SVG, CSS and a little vanilla JavaScript; nothing
fetched, so it works from file://) for choosing a point of a risk-utility frontier (`kgen.run.frontier`).

Why a page: a steward weighs what each step of risk costs in utility by looking at the alternatives; the
chart shows the frontier, and selecting a point (click, hover, or Tab then Enter/Space) shows everything the
frontier's JSON holds about it: per-QI levels and loss, the risk table, the class-size histogram, ten released
rows, the privacy models, the identifiers and kept columns, and the command that publishes it. Without
JavaScript the page is the same chart and a static table of every point with its command.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping, Sequence

from kgen.io.files import write_atomic

AXIS = {"highest": "highest prosecutor risk", "average": "average prosecutor risk",
        "records": "records at risk (share)", "journalist": "highest journalist risk"}
WIDTH, HEIGHT, MARGIN, LEFT = 640, 400, 56, 84  # LEFT: room for the risk axis's tick labels


def render(result: Mapping) -> str:
    """The page for a frontier (the dict `kgen.run.frontier.frontier` returns, or its JSON read back)."""
    points = list(result.get("points") or [])
    title = f"Risk-utility frontier: {len(points)} points ({result.get('risk', '?')} risk)"
    data = json.dumps({"points": points, "risk": result.get("risk"), "columns": result.get("columns", []),
                       "quasi_identifiers": result.get("quasi_identifiers", [])}, separators=(",", ":"))
    data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title>", f"<style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>", setting(result),
        '<div class="layout"><figure>', chart(points, str(result.get("risk", ""))),
        "<figcaption>Each point is a release that no other release beats on both information loss (x) and "
        "re-identification risk (y). Click a point, or Tab to it and press Enter or Space.</figcaption></figure>",
        '<section id="details" hidden aria-live="polite"><h2 id="d-title">Point</h2>'
        '<p>Publish it with:</p><pre><code id="command"></code></pre>'
        '<h3>Levels and loss per quasi-identifier</h3><table id="levels"></table>'
        '<h3>Risk</h3><table id="risks"></table>'
        '<h3>Class sizes</h3><div id="histogram"></div>'
        '<h3>Released rows (the first ten)</h3><div class="scroll"><table id="sample"></table></div>'
        "</section></div>",
        "<h2>All points</h2>", static_table(points),
        f'<script type="application/json" id="frontier-data">{data}</script>',
        f"<script>{SCRIPT}</script>", "</body></html>", ""])


def setting(result: Mapping) -> str:
    """What every point shares: input, models, suppression limit, roles of the columns."""
    models = "; ".join(", ".join(f"{k}={v}" for k, v in m.items()) for m in result.get("models") or [])
    how = result.get("frontier") or {}
    ks = (f"from {result.get('k_min')} to {result.get('k_max')}: each point is the least loss at its k"
          if result.get("risk") == "highest" else f"{result.get('k_min')} (the hard model of every point)")
    rows = [("Input", result.get("input") or "(in memory)"), ("Rows", result.get("rows")),
            ("Privacy models", models), ("k", ks), ("Suppression limit", result.get("suppression_limit")),
            ("Quasi-identifiers", ", ".join(result.get("quasi_identifiers") or [])),
            ("Identifiers (released as *)", ", ".join(result.get("identifiers") or []) or "none"),
            ("Kept columns (released as they are)", ", ".join(result.get("kept_columns") or []) or "none"),
            ("Information loss", result.get("metric")),
            ("Found by", f"{how.get('algorithm')} ({'exact' if how.get('complete') else 'not proved complete'}, "
                         f"{float(how.get('seconds') or 0):.1f} s)")]
    body = "".join(f"<tr><th scope=\"row\">{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in rows)
    return f'<table class="setting" id="setting">{body}</table>'


def chart(points: Sequence[Mapping], risk: str) -> str:
    """The frontier as an SVG scatter with its staircase; every point a focusable button."""
    if not points:
        return "<p>No feasible point.</p>"
    xs = [float(p["loss"]) for p in points]
    ys = [float(p["risk"]) for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = 0.0, max(ys) * 1.05 or 1.0
    x0, x1 = (x0 - 0.02, x1 + 0.02) if x1 - x0 < 1e-9 else (x0 - (x1 - x0) * 0.05, x1 + (x1 - x0) * 0.05)

    def sx(v: float) -> float:
        return LEFT + (v - x0) / (x1 - x0) * (WIDTH - LEFT - MARGIN)

    def sy(v: float) -> float:
        return HEIGHT - MARGIN - (v - y0) / (y1 - y0) * (HEIGHT - 2 * MARGIN)

    order = sorted(range(len(points)), key=lambda i: xs[i])
    steps = " ".join(f"{sx(xs[i]):.1f},{sy(ys[i]):.1f}" for i in order)
    parts = [f'<svg id="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="group" aria-label="frontier chart">',
             axes(sx, sy, (x0, x1), (y0, y1), risk), f'<polyline class="stairs" points="{steps}"/>']
    for i, p in enumerate(points):
        label = f"point {i + 1}: loss {xs[i]:.4f}, risk {ys[i]:.4g}, k {p.get('k')}"
        parts.append(f'<circle class="point" id="point-{i}" data-index="{i}" cx="{sx(xs[i]):.1f}" '
                     f'cy="{sy(ys[i]):.1f}" r="7" tabindex="0" role="button" aria-label="{html.escape(label)}">'
                     f"<title>{html.escape(label)}</title></circle>")
    parts.append("</svg>")
    return "".join(parts)


def axes(sx, sy, xr: tuple[float, float], yr: tuple[float, float], risk: str) -> str:
    """Axes with five ticks each and their labels."""
    out = [f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}"/>',
           f'<line class="axis" x1="{LEFT}" y1="{MARGIN}" x2="{LEFT}" y2="{HEIGHT - MARGIN}"/>']
    for t in range(5):
        xv = xr[0] + (xr[1] - xr[0]) * t / 4
        yv = yr[0] + (yr[1] - yr[0]) * t / 4
        out.append(f'<text class="tick" x="{sx(xv):.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle">'
                   f"{xv:.3f}</text>")
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{sy(yv) + 4:.1f}" text-anchor="end">{yv:.3g}</text>')
    out.append(f'<text class="label" x="{WIDTH / 2}" y="{HEIGHT - 12}" text-anchor="middle">information loss'
               "</text>")
    out.append(f'<text class="label" x="14" y="{HEIGHT / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {HEIGHT / 2})">{html.escape(AXIS.get(risk, risk))}</text>')
    return "".join(out)


def static_table(points: Sequence[Mapping]) -> str:
    """Every point in a plain table: what the page is without JavaScript."""
    head = ("<tr><th>#</th><th>node</th><th>k</th><th>loss</th><th>risk</th><th>classes</th><th>suppressed</th>"
            "<th>command</th></tr>")
    rows = []
    for i, p in enumerate(points):
        node = ", ".join(f"{q}={x}" for q, x in p["node"].items())
        rows.append(f'<tr id="row-{i}"><td>{i + 1}</td><td>{html.escape(node)}</td><td>{p["k"]}</td>'
                    f'<td>{float(p["loss"]):.4f}</td><td>{float(p["risk"]):.4g}</td><td>{p["classes"]}</td>'
                    f'<td>{p["suppressed"]}</td><td><code>{html.escape(p["command"])}</code></td></tr>')
    return f'<table id="points" class="points">{head}{"".join(rows)}</table>'


def write(result: Mapping, path: str | os.PathLike, protected: Sequence[str | os.PathLike] = ()) -> None:
    """Render and write the page atomically (never over a `protected` input)."""
    write_atomic(path, render(result), protected)


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em} h3{font-size:1em;margin:.8em 0 .3em}
table{border-collapse:collapse;margin:.3em 0} td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.setting th{background:#f4f4f4;font-weight:600}
.layout{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
figure{margin:0} figcaption{max-width:640px;color:#555}
#chart{width:640px;max-width:100%;height:auto;border:1px solid #ddd;background:#fff}
.axis{stroke:#444} .tick{font-size:11px;fill:#444} .label{font-size:12px;fill:#222}
.stairs{fill:none;stroke:#8aa;stroke-width:1.5}
.point{fill:#1f77b4;stroke:#fff;stroke-width:2;cursor:pointer}
.point:hover,.point:focus{fill:#ff7f0e;outline:none;stroke:#222}
.point.selected{fill:#d62728;stroke:#222;stroke-width:3}
#details{max-width:640px} pre{white-space:pre-wrap;word-break:break-all;background:#f6f6f6;padding:.5em}
.scroll{overflow-x:auto;max-width:640px} .bar{fill:#1f77b4} tr.selected td{background:#fde}
.points code{font-size:11px;word-break:break-all}
"""

SCRIPT = r"""
(function () {
  var data = JSON.parse(document.getElementById('frontier-data').textContent);
  var points = data.points;
  function el(tag, text) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = String(text);
    return e;
  }
  function fill(table, header, rows) {
    table.textContent = '';
    var tr = el('tr');
    header.forEach(function (h) { tr.appendChild(el('th', h)); });
    table.appendChild(tr);
    rows.forEach(function (r) {
      var row = el('tr');
      r.forEach(function (c) { row.appendChild(el('td', c)); });
      table.appendChild(row);
    });
  }
  function fmt(v) {
    return typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : String(v);
  }
  function histogram(box, sizes) {
    box.textContent = '';
    var ns = 'http://www.w3.org/2000/svg', w = 600, h = 120, max = 0;
    var svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('viewBox', '0 0 ' + w + ' ' + (h + 30));
    svg.setAttribute('width', w);
    sizes.forEach(function (s) { max = Math.max(max, s[1]); });
    var bw = Math.max(2, Math.min(40, (w - 20) / Math.max(1, sizes.length) - 2));
    sizes.slice(0, Math.floor((w - 20) / (bw + 2))).forEach(function (s, i) {
      var r = document.createElementNS(ns, 'rect'), bh = max ? s[1] / max * h : 0;
      r.setAttribute('class', 'bar');
      r.setAttribute('x', 10 + i * (bw + 2));
      r.setAttribute('y', h - bh);
      r.setAttribute('width', bw);
      r.setAttribute('height', bh);
      var t = document.createElementNS(ns, 'title');
      t.textContent = s[1] + ' classes of ' + s[0] + ' rows';
      r.appendChild(t);
      svg.appendChild(r);
    });
    var cap = document.createElementNS(ns, 'text');
    cap.setAttribute('x', 10);
    cap.setAttribute('y', h + 20);
    cap.setAttribute('font-size', '11');
    var last = sizes.length ? sizes[sizes.length - 1][0] : 0;
    cap.textContent = 'classes per class size, from ' + (sizes.length ? sizes[0][0] : 0) + ' to ' + last + ' rows';
    svg.appendChild(cap);
    box.appendChild(svg);
  }
  function riskRows(p) {
    var r = p.risks;
    return [
      ['highest prosecutor risk (1 / smallest class)', fmt(r.highest_prosecutor)],
      ['average prosecutor risk', fmt(r.average_prosecutor)],
      ['records at risk (prosecutor > ' + r.threshold + ')', fmt(r.records_at_risk)],
      ['marketer risk', fmt(r.marketer)], ['sample uniques', r.sample_uniques], ['classes', p.classes],
      ['smallest class', p.smallest_class], ['suppressed rows', p.suppressed], ['LOG', fmt(p.log)],
      ['independent check (kgen.check)', p.checked && p.checked.passed ? 'passed' : 'not passed']].concat(
      r.journalist_highest === undefined ? [] : [['highest journalist risk', fmt(r.journalist_highest)],
        ['average journalist risk', fmt(r.journalist_average)]]);
  }
  function show(i) {
    var p = points[i];
    document.querySelectorAll('.point').forEach(function (c) {
      c.classList.toggle('selected', Number(c.dataset.index) === i);
    });
    document.querySelectorAll('#points tr').forEach(function (r) {
      r.classList.toggle('selected', r.id === 'row-' + i);
    });
    var d = document.getElementById('details');
    d.hidden = false;
    d.dataset.index = String(i);
    document.getElementById('d-title').textContent =
      'Point ' + (i + 1) + ': k ' + p.k + ', loss ' + fmt(p.loss) + ', risk ' + fmt(p.risk);
    document.getElementById('command').textContent = p.command;
    fill(document.getElementById('levels'), ['quasi-identifier', 'level', 'loss (level / height)'],
      data.quasi_identifiers.map(function (q) { return [q, p.node[q], fmt(p.loss_per_qi[q])]; }));
    fill(document.getElementById('risks'), ['figure', 'value'], riskRows(p));
    histogram(document.getElementById('histogram'), p.class_sizes);
    fill(document.getElementById('sample'), data.columns, p.sample);
  }
  document.querySelectorAll('.point').forEach(function (c) {
    var i = Number(c.dataset.index);
    c.addEventListener('click', function () { show(i); });
    c.addEventListener('mouseenter', function () { show(i); });
    c.addEventListener('keydown', function (e) {
      if (e.key === 'Enter' || e.key === ' ' || e.key === 'Spacebar') { e.preventDefault(); show(i); }
    });
  });
  if (points.length) show(0);
})();
"""

__all__ = ["render", "write"]
