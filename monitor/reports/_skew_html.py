"""The training-serving skew report as one offline HTML page: join counts, then one section per
feature (worst first) with its mismatch rate and the keys whose values differ most."""

from __future__ import annotations

import html
from typing import Any

from monitor.reports._page import page, results_table
from monitor.skew import FeatureSkew, SkewReport

FEATURE_HEADER = ("feature", "kind", "compared", "mismatches", "mismatch rate", "mean |diff|")


def render_skew_html(report: SkewReport, title: str) -> str:
    """Headline, a sortable table of features, then each mismatching feature's worst keys."""
    skewed = [f for f in report.features if f.mismatches]
    lines = [
        f"{len(skewed)} of {len(report.features)} features differ between serving and offline "
        f"rows of the same key '{report.key}'",
        f"Joined {report.n_joined} keys; only in serving: {report.only_serving}; "
        f"only offline: {report.only_offline} (serving rows {report.n_serving}, offline rows "
        f"{report.n_offline})",
        *(
            f"Columns missing from {name}: {', '.join(cols)}"
            for name, cols in report.missing_columns.items()
            if cols
        ),
    ]
    cls = "headline drift" if skewed else "headline"
    head = f'<div class="{cls}">' + "".join(f"<p>{html.escape(x)}</p>" for x in lines) + "</div>"
    rows = [_row(f) for f in report.features]
    sections = "".join(_section(f) for f in skewed)
    body = (
        f"<h1>{html.escape(title)}</h1>{head}<h2>Features</h2>"
        f"{results_table('features', FEATURE_HEADER, rows, None)}{sections}"
    )
    return page(title, body)


def _row(f: FeatureSkew) -> list[str]:
    mad = "—" if f.mean_abs_diff is None else f"{f.mean_abs_diff:.4g}"
    return [f.column, f.kind, str(f.n_compared), str(f.mismatches), f"{f.mismatch_rate:.4%}", mad]


def _cell(value: Any) -> str:
    return "null" if value is None else str(value)


def _section(f: FeatureSkew) -> str:
    worst = "".join(
        f"<tr><td>{html.escape(_cell(w['key']))}</td><td>{html.escape(_cell(w['serving']))}</td>"
        f"<td>{html.escape(_cell(w['offline']))}</td></tr>"
        for w in f.worst
    )
    return (
        f'<section id="feature-{html.escape(f.column)}"><h2>{html.escape(f.column)} '
        f"<small class='drift'>{f.mismatch_rate:.2%} mismatched</small></h2>"
        f"<p>{f.mismatches} of {f.n_compared} joined rows differ; worst keys:</p>"
        f"<table><thead><tr><th>key</th><th>serving</th><th>offline</th></tr></thead>"
        f"<tbody>{worst}</tbody></table></section>"
    )
