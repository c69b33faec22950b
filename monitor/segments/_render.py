"""The segment report as Markdown and as a self-contained HTML page."""

from __future__ import annotations

from html import escape

from monitor.segments._report import SegmentReport

_HEAD = ("segment", "support", "share", "value", "rest", "effect (95% CI)", "p", "q", "score")


def _cells(report: SegmentReport) -> list[list[str]]:
    return [
        [s.describe(), str(s.support), f"{s.share:.2%}", f"{s.value:.4g}", f"{s.rest_value:.4g}",
         f"{s.effect:+.4g} [{s.ci_low:+.4g}, {s.ci_high:+.4g}]", f"{s.p_value:.3g}",
         f"{s.q_value:.3g}", f"{s.score:.4g}"]
        for s in report.segments
    ]  # fmt: skip


_FLAGS = {
    "labels": "",
    "estimated": " Estimated without labels: each row's expected error under the reference's "
    "calibration (CBPE); the interval assumes the calibration holds within the segment.",
    "drift": " Estimated without labels: value is the segment's share of the current rows, "
    "rest its share of the reference rows.",
}


def _summary(report: SegmentReport) -> str:
    overall = "n/a" if report.overall is None else f"{report.overall:.4g}"
    skipped = f" Skipped: {'; '.join(report.skipped)}." if report.skipped else ""
    return (
        f"{report.n_rows} rows, {report.metric} overall {overall} (mode {report.mode}, status "
        f"{report.status}); up to {report.max_predicates} predicates, minimum support "
        f"{report.min_support}; {report.candidates_tested} slices tested, FDR {report.alpha} "
        f"(Benjamini–Hochberg).{_FLAGS.get(report.mode, '')}{skipped}"
    )


def render_segments_markdown(report: SegmentReport) -> str:
    lines = ["# Weak segments", "", _summary(report), ""]
    if not report.segments:
        return "\n".join([*lines, f"No segment reported: {report.reason}.", ""])
    lines += ["| " + " | ".join(_HEAD) + " |", "|" + "---|" * len(_HEAD)]
    lines += [
        "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in _cells(report)
    ]
    return "\n".join([*lines, ""])


def render_segments_html(report: SegmentReport, title: str = "Weak segments") -> str:
    if report.segments:
        head = "".join(f"<th>{escape(h)}</th>" for h in _HEAD)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
            for row in _cells(report)
        )
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    else:
        table = f"<p>No segment reported: {escape(report.reason or '')}.</p>"
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>body{{font-family:sans-serif}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px}</style>"
        f"</head><body><h1>{escape(title)}</h1><p>{escape(_summary(report))}</p>{table}"
        "</body></html>\n"
    )
