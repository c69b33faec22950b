"""Default alert annotations per signal kind, and where an alert's `generatorURL` points.

A rule without `annotations` still sends a `summary` and a `description` that say what moved,
where and by how much; a rule's own annotations override these key by key. Placeholders are
those of `alerts._rules.render_annotations` (labels, `{value}`, `{threshold}`, `{slice}`, and the
signal's `details`: an outcome's `{decided}` says at what level its verdict was decided).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from urllib.parse import quote

from alerts.base import SIGNAL_KINDS

_DEFAULTS: dict[str, tuple[str, str]] = {
    "drift": (
        "Drift in {model} {version}: column {column} ({method}, slice {slice})",
        "{method} of column {column} is {value} against threshold {threshold} in the latest "
        "window of model {model} version {version}, slice {slice}.",
    ),
    "drift_count": (
        "{value} columns drifted in {model} {version}",
        "{value} columns of model {model} version {version} drifted in the latest window.",
    ),
    "outcome": (
        "{metric} of {model} {version} degraded (slice {slice}{decided})",
        "{metric} is {value} against a baseline of {threshold} for model {model} version "
        "{version}, slice {slice}{decided}.",
    ),
    "guard": (
        "Gate {verdict} for {model} {version}: {criterion} (slice {slice})",
        "The latest gate run of model {model} version {version} answered {verdict}; "
        "{criterion} is {value} against {threshold}, slice {slice}.",
    ),
    "guard_divergence": (
        "Gate of {model} {version} diverges from an earlier pass on the same content",
        "The latest gate run of model {model} version {version} did not pass on the same "
        "reference, candidate and golden set that passed before: the hardware or runtime "
        "changed (see the run's providers in GET /v1/models/{model}/guard).",
    ),
    "ingest_lag": (
        "Source {source} is {value} messages behind",
        "Collector source {source} has {value} messages between its committed position and "
        "the end of its input.",
    ),
    "dead_letter_rate": (
        "Source {source} dead-letters events",
        "Collector source {source} rejected a fraction {value} of its recent events; see "
        "its dead letters for the reasons.",
    ),
    "no_data": (
        "No data for {model} for {value} minutes",
        "Model {model} has received no events for {value} minutes (limit {threshold}).",
    ),
    "slo": (
        "{objective} of {model} {version} at {value} (objective {threshold}, slice {slice})",
        "Serving objective {objective} of model {model} version {version} is {value} against "
        "{threshold} in the newest window, slice {slice}.",
    ),
    "estimated_outcome": (
        "Estimated {metric} of {model} {version} degraded (slice {slice})",
        "{metric} estimated without labels (CBPE) is {value} against a reference threshold of "
        "{threshold} for model {model} version {version}, slice {slice}, in the newest window.",
    ),
    "multivariate_drift": (
        "Multivariate drift in {model} {version} (slice {slice})",
        "The mean PCA reconstruction error of model {model} version {version} is {value} "
        "against a reference bound of {threshold} in the newest window, slice {slice}.",
    ),
    "shadow": (
        "Shadow {version} of {model} diverges from {primary_version} ({criterion}, slice {slice})",
        "Paired shadow mode: {criterion} of shadow version {version} against primary version "
        "{primary_version} of model {model} is {value} against {threshold} in the newest "
        "window, slice {slice}.",
    ),
    "canary": (
        "Canary {version} of {model}: {criterion} (slice {slice})",
        "Criterion {criterion} of canary version {version} against stable {stable} of model "
        "{model} is {value} against {threshold} in slice {slice} of its newest evaluation.",
    ),
    "skew": (
        "Skew in {model}: feature {column} ({check})",
        "{value} of the entities joined by skew check {check} of model {model} differ between "
        "serving and offline values of feature {column} (threshold {threshold}).",
    ),
    "fairness": (
        "{metric} of {model} {version} violated for {attribute} (group {group})",
        "{metric} of protected attribute {attribute} (group {group}) of model {model} version "
        "{version} is {value} against a bound of {threshold} in the newest labelled window.",
    ),
    "segment": (
        "Weak segment in {model}: {segment} ({persistence}, {check})",
        "Segment check {check} of model {model} ({mode}) reports the segment {segment}, "
        "{persistence}, with an effect of {value}.",
    ),
    "evaluation_failed": (
        "Evaluation of {model} {version} failing",
        "{value} windows of model {model} version {version} failed to evaluate; see /readyz "
        "and the daemon log.",
    ),
}
if set(_DEFAULTS) != set(SIGNAL_KINDS):  # pragma: no cover - caught by the import in tests
    raise RuntimeError(f"default annotations missing for {set(SIGNAL_KINDS) - set(_DEFAULTS)}")

DEFAULT_ANNOTATIONS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {kind: {"summary": s, "description": d} for kind, (s, d) in _DEFAULTS.items()}
)


def decision_details(level: float | None, family: int) -> dict[str, str]:
    """An outcome signal's `details`: `{level}` its verdict was decided at (one-sided, two
    significant digits), `{family}` how many results were decided together (Holm's
    correction; 1: per result) and `{decided}`, both as the clause the default annotations
    end with; none without a level (no verdict, or a row stored before levels were)."""
    if level is None:
        return {}
    shown = f"{level:.2g}"
    of = f" of a family of {family} results, Holm" if family > 1 else ""
    return {"level": shown, "family": str(family), "decided": f"; decided at level {shown}{of}"}


def annotation_templates(kind: str, own: Mapping[str, str]) -> dict[str, str]:
    """The kind's default summary and description, overridden by the rule's own templates."""
    return {**DEFAULT_ANNOTATIONS.get(kind, {}), **own}


def generator_url(external_url: str, fingerprint: str) -> str:
    """The alert's detail in the API (`GET /v1/alerts/{fingerprint}`, read scope)."""
    return f"{external_url.rstrip('/')}/v1/alerts/{quote(fingerprint, safe='')}"
