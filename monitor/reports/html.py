"""A self-contained HTML drift report: inline SVG per column, worst first, no external assets."""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

from monitor.detectors import DriftResult
from monitor.profiles import OVERALL, CategoricalProfile, NumericProfile, ProfileSet
from monitor.profiles.kinds import Profile

_W, _H, _PAD = 520, 180, 30
_REF, _CUR = "#4c78a8", "#f58518"
_STYLE = """body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin-bottom:24px}
td,th{padding:3px 8px;border-bottom:1px solid #ddd}
.drift{color:#b00;font-weight:600}.ok{color:#070}.insufficient_data{color:#888}.missing{color:#b00}.new{color:#05a}
section{margin:18px 0;padding-top:8px;border-top:1px solid #ccc}.legend span{margin-right:12px}"""


def render_html(
    results: Sequence[DriftResult], reference: ProfileSet, current: ProfileSet, title: str
) -> str:
    """The whole report as one HTML string (charts are inline SVG)."""
    overall = sorted((r for r in results if r.slice is None), key=_severity)
    rows = "".join(_row(r) for r in sorted(results, key=_severity))
    sections = "".join(
        _section(r, reference.get(r.column, OVERALL), current.get(r.column, OVERALL))
        for r in _first_per_column(overall)
    )
    legend = (
        f'<p class="legend"><span style="color:{_REF}">■ reference</span>'
        f'<span style="color:{_CUR}">■ current</span></p>'
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
        f"<p>reference rows: {reference.n_rows}, current rows: {current.n_rows}</p>"
        f"<table><tr><th>column</th><th>slice</th><th>method</th><th>value</th>"
        f"<th>threshold</th><th>p-value</th><th>n ref</th><th>n cur</th><th>status</th></tr>"
        f"{rows}</table>{legend}{sections}</body></html>"
    )


def _severity(r: DriftResult) -> tuple[int, float, str]:
    rank = {"missing": 0, "drift": 1, "new": 2, "ok": 3, "insufficient_data": 4}[r.status]
    ratio = (r.value or 0.0) / r.threshold if r.threshold else 0.0
    return rank, -ratio, r.column


def _first_per_column(results: Sequence[DriftResult]) -> list[DriftResult]:
    seen: set[str] = set()
    out = []
    for r in results:
        if r.column not in seen:
            seen.add(r.column)
            out.append(r)
    return out


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def _row(r: DriftResult) -> str:
    where = "overall" if r.slice is None else ", ".join(f"{k}={v}" for k, v in r.slice.items())
    cells = [r.column, where, r.method, _fmt(r.value), _fmt(r.threshold), _fmt(r.p_value)]
    cells += [str(r.n_reference), str(r.n_current)]
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return f'<tr>{tds}<td class="{r.status}">{r.status}</td></tr>'


def _section(r: DriftResult, ref: Profile, cur: Profile) -> str:
    chart = _cdf_svg(ref, cur) if isinstance(ref, NumericProfile) else _bars_svg(ref, cur)
    return (
        f"<section><h2>{html.escape(r.column)} <small class='{r.status}'>{r.status}</small></h2>"
        f"<p>{r.method} = {_fmt(r.value)} (threshold {_fmt(r.threshold)}, "
        f"p = {_fmt(r.p_value)}); nulls: reference {ref.null_count}, current {cur.null_count}</p>"
        f"{chart}</section>"
    )


def _share(p: Profile) -> np.ndarray:
    return p.counts / max(p.n, 1)


def _cdf_svg(ref: Profile, cur: Profile) -> str:
    edges = ref.spec.edges_array
    lo, hi = float(edges[0]), float(edges[-1])
    span = hi - lo or 1.0

    def line(p: Profile, color: str) -> str:
        cdf = np.cumsum(_share(p))[:-1]  # CDF at each edge (overflow excluded)
        pts = [
            (_PAD + (e - lo) / span * (_W - 2 * _PAD), _H - _PAD - c * (_H - 2 * _PAD))
            for e, c in zip(edges.tolist(), cdf.tolist(), strict=True)
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        return f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>'

    axis = (
        f'<text x="{_PAD}" y="{_H - 8}" font-size="11">{lo:.4g}</text>'
        f'<text x="{_W - _PAD}" y="{_H - 8}" font-size="11" text-anchor="end">{hi:.4g}</text>'
        f'<text x="4" y="{_PAD}" font-size="11">CDF</text>'
    )
    return _svg(line(ref, _REF) + line(cur, _CUR) + axis)


def _bars_svg(ref: Profile, cur: Profile) -> str:
    assert isinstance(ref, CategoricalProfile)
    labels = [*ref.spec.categories, "(other)", "(unseen)"]
    r, c = _share(ref), _share(cur)
    top = np.argsort(-(r + c), kind="stable")[:20]
    width = (_W - 2 * _PAD) / max(len(top), 1)
    peak = max(float(r[top].max(initial=0)), float(c[top].max(initial=0)), 1e-9)
    parts = []
    for i, b in enumerate(top.tolist()):
        x = _PAD + i * width
        for j, (share, color) in enumerate(((r[b], _REF), (c[b], _CUR))):
            h = float(share) / peak * (_H - 2 * _PAD)
            parts.append(
                f'<rect x="{x + j * width / 2:.1f}" y="{_H - _PAD - h:.1f}" '
                f'width="{width / 2 - 1:.1f}" height="{h:.1f}" fill="{color}"/>'
            )
        label = html.escape(labels[b][:10])
        parts.append(f'<text x="{x:.1f}" y="{_H - 12}" font-size="9">{label}</text>')
    return _svg("".join(parts))


def _svg(body: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}">{body}</svg>'
    )
