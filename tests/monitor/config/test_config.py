"""Config validation: strictness, environment overrides, error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.app.daemon.names import registry_names
from monitor.config import KafkaSourceConfig, load_config, parse_config
from monitor.errors import ConfigError


def test_defaults_are_embedded_sqlite() -> None:
    cfg = parse_config({}, env={})
    assert cfg.database_url == "sqlite:///modelwatch.db"
    assert cfg.models == [] and cfg.sources == []


def test_environment_overrides_database_url() -> None:
    cfg = parse_config(
        {"database_url": "sqlite:///a.db"}, env={"MODELWATCH_DATABASE_URL": "postgresql://h/db"}
    )
    assert cfg.database_url == "postgresql://h/db"


def test_source_kind_selected_by_type() -> None:
    cfg = parse_config(
        {"sources": [{"name": "s", "type": "kafka", "bootstrap_servers": "h:1", "topic": "t"}]},
        env={},
    )
    src = cfg.sources[0]
    assert isinstance(src, KafkaSourceConfig)
    assert src.api_version == "auto"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"databse_url": "x"}, "unknown key 'databse_url'"),
        ({"models": [{"slices": []}]}, "missing required key 'models[0].name'"),
        ({"models": [{"name": "a"}, {"name": "a"}]}, "repeated: a"),
        ({"models": [{"name": "a", "slices": ["r", "r"]}]}, "slice columns must be unique"),
        ({"sources": [{"name": "s", "type": "ftp"}]}, "sources[0]"),
        ([1, 2], "top level must be a mapping"),
    ],
)
def test_errors_name_the_key(data: object, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="mw.yaml", env={})
    assert expected in str(info.value)
    assert str(info.value).startswith("mw.yaml")
    assert "\n" not in str(info.value)


def test_config_is_frozen(tmp_path: Path) -> None:
    p = tmp_path / "c.yaml"
    p.write_text("models: [{name: fraud}]\n")
    cfg = load_config(p, env={})
    with pytest.raises(ValueError, match="frozen"):
        cfg.models[0].name = "other"  # type: ignore[misc]


def _model(**sections: object) -> dict[str, object]:
    return {"models": [{"name": "fraud", **sections}]}


@pytest.mark.parametrize(
    ("data", "key", "message"),
    [
        (
            _model(drift={"methods": ["psi", "pis"]}),
            "models[0].drift.methods[1]",
            "unknown drift method 'pis' (did you mean 'psi'?); valid: chi2, hellinger, "
            "jensen_shannon, ks, l_infinity, missing_rate, psi, wasserstein",
        ),
        (
            _model(outcomes={"metrics": ["accuracy", "mae"]}),
            "models[0].outcomes.metrics[1]",
            "unknown outcome metric 'mae' for task classification; valid: accuracy, ece, f1, "
            "log_loss, precision, recall, roc_auc",
        ),
        (
            _model(outcomes={"task": "regression", "baseline": {"rsme": 0.3}}),
            "models[0].outcomes.baseline.rsme",
            "unknown outcome metric 'rsme' for task regression (did you mean 'rmse'?)",
        ),
        (
            {"sources": [{"name": "s", "type": "jsonl", "path": "x", "format": "sagemkaer"}]},
            "sources[0].format",
            "unknown format 'sagemkaer' (did you mean 'sagemaker'?); valid: cloudevents, "
            "modelwatch, sagemaker",
        ),
        (
            {"alerts": {"receivers": [{"name": "a", "type": "sms", "url": "http://x"}]}},
            "alerts.receivers[0].type",
            "unknown receiver type 'sms'; valid: alertmanager, pagerduty, slack, webhook",
        ),
        (
            {"alerts": {"rules": [{"name": "r", "kind": "no-data"}]}},
            "alerts.rules[0].kind",
            "unknown signal kind 'no-data' (did you mean 'no_data'?)",
        ),
        (
            {"collect": {"window": "9" * 400}},
            "collect.window",
            "characters) is too long (at most 36500d)",
        ),
        ({"collect": {"window": 1e400}}, "collect.window", "duration inf is too long"),
        ({"collect": {"window": 10**400}}, "collect.window", "is too long"),
        ({"collect": {"window": float("nan")}}, "collect.window", "must not be negative"),
        ({"collect": {"allowed_lateness": -1}}, "collect.allowed_lateness", "must not be neg"),
        (
            {"alerts": {"rules": [{"name": "r", "kind": "drift", "for": "9" * 30 + "d"}]}},
            "alerts.rules[0].for",
            "is too long",
        ),
        (
            {"alerts": {"rules": [{"name": "r", "kind": "drift", "matchers": ["a=~(x)\\1"]}]}},
            "alerts.rules[0].matchers[0]",
            "invalid regex '(x)\\\\1' (RE2 syntax): invalid escape sequence: \\1",
        ),
        (
            {
                "alerts": {
                    "inhibit_rules": [{"source_matchers": ["a=~(?!x)"], "target_matchers": []}]
                }
            },
            "alerts.inhibit_rules[0].source_matchers[0]",
            "invalid perl operator: (?!",
        ),
    ],
)
def test_registry_names_durations_and_regexes_are_checked_at_load(
    data: object, key: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="mw.yaml", env={"MW_EMPTY": ""}, names=registry_names())
    assert str(info.value).startswith(f"mw.yaml: invalid value for '{key}': ")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_names_from_the_registries_pass() -> None:
    data = {
        **_model(drift={"methods": ["psi", "ks"]}, outcomes={"baseline": {"recall": 0.8}}),
        "api": {"tokens": [{"name": "ops", "scopes": ["admin"], "token_env": "MW_SET"}]},
        "alerts": {"rules": [{"name": "r", "kind": "no_data", "for": "100y".replace("y", "d")}]},
    }
    cfg = parse_config(data, env={"MW_SET": "s3cret"}, names=registry_names())
    assert cfg.models[0].drift.methods == ["psi", "ks"]


def test_token_variables_are_read_by_whoever_serves_not_at_load() -> None:
    """A config loads without its API secrets (only `serve` reads them); the check names the
    first token whose variable is unset or empty, in the loader's one-line format."""
    tokens = [
        {"name": "ops", "scopes": ["admin"], "token_env": "MW_SET"},
        {"name": "o", "scopes": ["read"], "token_env": "MW_EMPTY"},
        {"name": "inline", "scopes": ["read"], "token": "t"},
    ]
    cfg = parse_config({"api": {"tokens": tokens}}, env={"MW_EMPTY": ""}, names=registry_names())
    cfg.api.check_token_env({"MW_SET": "s3cret", "MW_EMPTY": "x"})
    with pytest.raises(ConfigError) as info:
        cfg.api.check_token_env({"MW_SET": "s3cret", "MW_EMPTY": ""}, "mw.yaml")
    assert str(info.value) == (
        "mw.yaml: invalid value for 'api.tokens[1].token_env': environment variable MW_EMPTY "
        "is not set (or is empty)"
    )


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"scheduler": {"evaluate_interval_s": float("inf")}}, "scheduler.evaluate_interval_s"),
        ({"scheduler": {"lease_s": 1e300}}, "scheduler.lease_s"),
        ({"scheduler": {"retention_days": 10**400}}, "scheduler.retention_days"),
        (_model(outcomes={"baseline": {"recall": float("nan")}}), "models[0].outcomes.baseline"),
    ],
)
def test_numbers_that_would_overflow_later_are_refused_at_load(data: object, key: str) -> None:
    with pytest.raises(ConfigError, match=r"invalid value for '" + key.replace("[", r"\[")):
        parse_config(data, source="mw.yaml", env={})


def test_a_drain_delay_past_the_readiness_lag_bound_is_refused_at_load() -> None:
    # Requests wait the delay in the intake log by design; /readyz would call it falling behind.
    with pytest.raises(ConfigError, match=r"http_max_lag \(60s\) must be longer .*60s"):
        parse_config({"collect": {"drain_max_delay": "60s"}})
    collect = parse_config({"collect": {"drain_max_delay": "60s", "http_max_lag": "3m"}}).collect
    assert collect.drain_max_delay.total_seconds() == 60
