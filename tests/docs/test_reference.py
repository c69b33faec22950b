"""The generated reference pages: every config key, route, metric and signal kind is described.

The pages are generated from these same definitions (docs/_gen), so a missing description is a
hole in the documentation; fix it where the thing is defined.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from alerts.annotations import DEFAULT_ANNOTATIONS
from alerts.base import SIGNAL_KIND_DOCS, SIGNAL_KINDS
from docs._gen import hooks, reference, sources

# Placeholders every annotation template may use besides the signal's labels.
TEMPLATE_EXTRAS = {"value", "threshold", "observed_at", "slice"}


def test_every_config_key_has_a_description() -> None:
    keys = list(reference.config_keys(sources.config_model()))
    assert len(keys) > 100  # the walk reached the nested sections
    missing = [k.path for k in keys if not k.description]
    assert missing == [], f"config keys without Field(description=...): {missing}"


def test_config_walk_names_nested_sections_as_the_file_spells_them() -> None:
    paths = {k.path for k in reference.config_keys(sources.config_model())}
    assert "models[].drift.thresholds.strategy" in paths
    assert "alerts.rules[].for" in paths  # the alias, not the Python name
    assert "guards.presets.<name>.max_flip_rate" in paths
    assert "sources[] (type: kafka).client" in paths


def test_every_http_operation_has_a_summary_a_description_and_a_scope() -> None:
    ops = reference.operations(sources.openapi_document())
    assert len(ops) >= 20
    for op in ops:
        where = f"{op.method} {op.path}"
        assert op.summary, f"{where}: no summary"
        assert op.description, f"{where}: no description (the route's docstring)"
        if op.path.startswith("/v1/"):
            assert op.scope in {"read", "ingest", "admin"}, f"{where}: no x-scope"


def test_every_query_parameter_has_a_description() -> None:
    ops = reference.operations(sources.openapi_document())
    missing = [
        f"{o.method} {o.path} ?{name}"
        for o in ops
        for name, where, _, text in o.parameters
        if where == "query" and not text
    ]
    assert missing == [], f"query parameters without a description: {missing}"


def test_scopes_follow_the_routes_dependencies() -> None:
    scopes = {(o.method, o.path): o.scope for o in reference.operations(sources.openapi_document())}
    assert scopes["POST", "/v1/events"] == "ingest"
    assert scopes["POST", "/v1/silences"] == "admin"
    assert scopes["GET", "/v1/models"] == "read"
    assert scopes["GET", "/healthz"] == "open"


def test_every_metric_has_help_and_the_exposed_name() -> None:
    docs = reference.metric_docs(list(sources.metric_collectors()))
    names = {m.name for m in docs}
    assert "modelwatch_http_request_duration_seconds" in names
    assert "modelwatch_events_ingested_total" in names  # counters as scraped
    missing = [m.name for m in docs if not m.help]
    assert missing == [], f"metrics without help text: {missing}"


def test_every_signal_kind_is_documented() -> None:
    assert set(SIGNAL_KIND_DOCS) == set(SIGNAL_KINDS)
    for kind, doc in SIGNAL_KIND_DOCS.items():
        assert doc.labels and doc.value and doc.fires, f"signal kind {kind!r} lacks a description"


@pytest.mark.parametrize("kind", SIGNAL_KINDS)
def test_default_annotations_use_only_documented_labels(kind: str) -> None:
    allowed = set(SIGNAL_KIND_DOCS[kind].labels) | set(SIGNAL_KIND_DOCS[kind].details)
    allowed |= TEMPLATE_EXTRAS
    for template in DEFAULT_ANNOTATIONS[kind].values():
        used = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        assert used <= allowed, f"{kind}: {sorted(used - allowed)} are not documented labels"


def test_every_marker_renders_and_an_unknown_one_is_named() -> None:
    for name in hooks.GENERATORS:
        out = hooks.render(f"<!-- gen:{name} -->")
        assert out.startswith(("|", "###")) and "<!-- gen:" not in out
    with pytest.raises(ValueError, match="'nope'"):
        hooks.render("<!-- gen:nope -->")


def test_reference_pages_place_every_generated_section(docs_dir: Path) -> None:
    used = set()
    for page in docs_dir.rglob("*.md"):
        used |= set(re.findall(r"<!-- gen:([a-z-]+) -->", page.read_text(encoding="utf-8")))
    assert used == set(hooks.GENERATORS)
