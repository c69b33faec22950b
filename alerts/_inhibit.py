"""Inhibition: a firing source alert mutes target alerts that share the `equal` labels.

Example: an `ingest_lag` or `no_data` alert for model `fraud` mutes the drift alerts of `fraud`,
whose windows are then incomplete. Muted alerts keep their state; only notifications (and
rollback actions) are held back. Source alerts inhibit even when they are silenced themselves,
as in Alertmanager; an alert never inhibits itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from monitor.config.alerts import InhibitRuleConfig, matches_all


def inhibited(firing: Mapping[str, dict[str, str]], rules: list[InhibitRuleConfig]) -> set[str]:
    """Fingerprints among `firing` (fingerprint -> labels) muted by some inhibit rule."""
    muted: set[str] = set()
    for rule in rules:
        sources = [
            (fp, labels)
            for fp, labels in firing.items()
            if matches_all(rule.source_matchers, labels)
        ]
        if not sources:
            continue
        for fp, labels in firing.items():
            if fp in muted or not matches_all(rule.target_matchers, labels):
                continue
            if any(
                sfp != fp and all(slabels.get(k, "") == labels.get(k, "") for k in rule.equal)
                for sfp, slabels in sources
            ):
                muted.add(fp)
    return muted
