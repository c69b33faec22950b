"""Config validation: strictness, environment overrides, error messages."""

from __future__ import annotations

from pathlib import Path

import pytest

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
