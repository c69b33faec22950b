"""The shared page shell of the HTML reports: style, a sortable and filterable table, script.

Reports are single offline files: inline CSS and a few lines of inline script, no CDN.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

STYLE = """body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
table{border-collapse:collapse;margin-bottom:24px;font-variant-numeric:tabular-nums}
td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:left}
th{cursor:pointer;background:#f3f3f3;user-select:none}
.drift{color:#b00;font-weight:600}.ok{color:#070}.insufficient_data{color:#888}
.missing{color:#b00}.new{color:#05a}
.headline{font-size:1.15em;padding:10px 14px;border-left:6px solid #070;background:#f6fff6}
.headline.drift{border-color:#b00;background:#fff5f5;color:#222;font-weight:normal}
.headline p{margin:4px 0}
section{margin:18px 0;padding-top:8px;border-top:1px solid #ccc}
.legend span{margin-right:12px}.why{margin:2px 0 2px 12px}
.chart{margin:4px 8px 4px 0}input.filter{margin:8px 0;padding:4px;width:320px}"""

# Click a header to sort (numbers numerically, again to reverse); type to filter rows.
SCRIPT = """document.querySelectorAll('table.results').forEach(function(table){
  var body=table.tBodies[0];
  table.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
    var rows=Array.from(body.rows),dir=th.dataset.dir==='asc'?-1:1;
    th.dataset.dir=dir>0?'asc':'desc';
    rows.sort(function(a,b){var x=a.cells[i].textContent,y=b.cells[i].textContent,
      nx=parseFloat(x),ny=parseFloat(y);
      return dir*(isNaN(nx)||isNaN(ny)?x.localeCompare(y):nx-ny);});
    rows.forEach(function(r){body.appendChild(r);});});});
  var box=document.getElementById(table.dataset.filter);
  if(box){box.addEventListener('input',function(){var q=box.value.toLowerCase();
    Array.from(body.rows).forEach(function(r){
      r.style.display=r.textContent.toLowerCase().indexOf(q)>=0?'':'none';});});}
});"""


def page(title: str, body: str) -> str:
    """A complete offline HTML document."""
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body>{body}<script>{SCRIPT}</script></body></html>\n"
    )


def results_table(
    name: str, header: Sequence[str], rows: Sequence[Sequence[str]], status_col: int | None
) -> str:
    """A sortable table with a filter box above it; the status cell gets its status's class."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for row in rows:
        tds = "".join(
            (f'<td class="{html.escape(c)}">' if i == status_col else "<td>")
            + f"{html.escape(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{tds}</tr>")
    return (
        f'<input class="filter" id="{name}-filter" placeholder="filter rows…">'
        f'<table class="results" id="{name}" data-filter="{name}-filter">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )
