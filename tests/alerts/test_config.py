"""The `alerts:` config section: defaults, durations, matchers, references, one-line errors."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from monitor.app.daemon.names import registry_names
from monitor.config import load_config, parse_config
from monitor.config.alerts import Matcher
from monitor.errors import ConfigError

EXAMPLE = """
alerts:
  external_url: https://modelwatch.example
  grouping: {group_by: [alertname, model], group_wait: 30s, group_interval: 5m}
  receivers:
    - {name: oncall, type: webhook, url: "https://hooks.example/mw", secret_env: MW_SECRET}
  rules:
    - name: FeatureDrift
      kind: drift
      matchers: ['slice=""']
      for: 10m
      keep_firing_for: 15m
      receivers: [oncall]
  inhibit_rules:
    - {source_matchers: ['kind=no_data'], target_matchers: ['kind=~"drift.*"'], equal: [model]}
"""


def test_defaults_are_alertmanagers() -> None:
    g = parse_config({}, env={}).alerts.grouping
    assert (g.group_wait, g.group_interval, g.repeat_interval) == (
        timedelta(seconds=30),
        timedelta(minutes=5),
        timedelta(hours=4),
    )


def test_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "mw.yaml"
    path.write_text(EXAMPLE)
    cfg = load_config(path, env={}).alerts
    rule = cfg.rules[0]
    assert rule.for_ == timedelta(minutes=10) and rule.keep_firing_for == timedelta(minutes=15)
    assert cfg.inhibit_rules[0].target_matchers[0].matches({"kind": "drift_count"})


@pytest.mark.parametrize(
    ("alerts", "expected"),
    [
        (
            {"rules": [{"name": "r", "kind": "drift", "recievers": []}]},
            "unknown key 'alerts.rules[0].recievers'",
        ),
        ({"rules": [{"name": "r", "kind": "drfit"}]}, "alerts.rules[0].kind"),
        ({"rules": [{"name": "r", "kind": "drift", "for": "5 minutes"}]}, "cannot parse duration"),
        ({"rules": [{"name": "r", "kind": "drift", "receivers": ["x"]}]}, "unknown receiver(s) x"),
        ({"rules": [{"name": "r", "kind": "drift", "matchers": ["a~b"]}]}, "cannot parse matcher"),
        (
            {"rules": [{"name": "r", "kind": "drift", "annotations": {"s": "{x"}}]},
            "invalid template",
        ),
        (
            {"receivers": [{"name": "a", "type": "webhook", "url": "ftp://x"}]},
            "http:// or https://",
        ),
        (
            {"receivers": [{"name": "a", "type": "sms", "url": "http://x"}]},
            "alerts.receivers[0].type",
        ),
        (
            {
                "receivers": [
                    {"name": "a", "type": "webhook", "url": "http://x", "secret_env": "A-B"}
                ]
            },
            "environment variable name",
        ),
        ({"grouping": {"group_by": ["bad-label"]}}, "invalid label name"),
        ({"delivery": {"concurrency": 0}}, "alerts.delivery.concurrency"),
    ],
)
def test_errors_name_the_key(alerts: dict[str, object], expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"alerts": alerts}, source="mw.yaml", env={}, names=registry_names())
    assert expected in str(info.value) and str(info.value).startswith("mw.yaml")


@pytest.mark.parametrize(
    ("text", "labels", "hit"),
    [
        ("model=fraud", {"model": "fraud"}, True),
        ('model="fraud"', {"model": "fraud"}, True),
        ("model!=fraud", {"model": "fraud"}, False),
        ('column=~"am.*"', {"column": "amount"}, True),
        ('column=~"am"', {"column": "amount"}, False),  # anchored
        ('column!~"am.*"', {"column": "age"}, True),
        ('slice=""', {}, True),  # a missing label reads as ""
    ],
)
def test_matchers(text: str, labels: dict[str, str], hit: bool) -> None:
    assert Matcher.parse(text).matches(labels) is hit


@pytest.mark.parametrize(
    ("text", "labels", "hit"),
    [
        ('alertname=~"(.*){20}X"', {"alertname": "FeatureDriftOnTheFraudModel" * 4}, False),
        ('alertname=~"(.*){20}X"', {"alertname": "FeatureDriftX"}, True),
        ('alertname!~"(a|aa)+b"', {"alertname": "a" * 5000}, True),
        ('column=~"am.*"', {"column": "tamount"}, False),  # fully anchored
        ('column=~"a."', {"column": "a\ud800"}, True),  # a lone surrogate never raises
    ],
)
def test_regexes_are_linear_time_and_anchored(text: str, labels: dict[str, str], hit: bool) -> None:
    assert Matcher.parse(text).matches(labels) is hit
