"""Fuzzing the config loader: whatever a file holds, the answer is a Config or one ConfigError line.

The full example of docs/how-to/configure.md (every section) is mutated at random places (a value
replaced by anything YAML can hold, a key dropped or misspelt, a mapping turned into a list),
random trees of real key names are validated, and random text is loaded as a file. Each ends in
a validated `Config` or a `ConfigError` whose message is one line that starts with the file name
(and each of its `problems` too): never a traceback, never another exception.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from monitor.app.daemon.names import registry_names
from monitor.config import Config, load_config, parse_config
from monitor.errors import ConfigError
from tests.conftest import REPO
from tests.fuzzing import SCALARS, TEXT, fuzz, nested

NAMES = registry_names()
GUIDE = (REPO / "docs/how-to/configure.md").read_text()
SEED = next(
    data
    for block in re.findall(r"```yaml\n(.*?)```", GUIDE, re.S)
    if isinstance(data := yaml.safe_load(block), dict) and {"models", "sources"} <= set(data)
)


def _keys(schema: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for model in [schema, *schema.get("$defs", {}).values()]:
        found |= set(model.get("properties", {}))
    return found


KEYS = sorted(_keys(Config.model_json_schema()))  # every key the config knows, at any level
# What YAML can hold besides JSON: dates, timestamps, bytes (`!!binary`), durations as text.
YAML_SCALARS = st.one_of(
    SCALARS,
    st.dates(),
    st.datetimes(timezones=st.none() | st.just(dt.UTC)),
    st.binary(max_size=8),
    st.sampled_from(["10m", "1d", "-5s", "0", "1e400s", "inf", ".nan", "~", "yes"]),
)
YAMLISH = nested(YAML_SCALARS, st.one_of(TEXT, st.sampled_from(KEYS)))


def _places(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in `data`."""
    out = [path]
    if isinstance(data, dict):
        for key, value in data.items():
            out += _places(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _places(value, (*path, i))
    return out


PLACES = _places(SEED)[1:]


def _copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_copy(v) for v in data]
    return data


@st.composite
def mutated_seed(draw: st.DrawFn) -> Any:
    """The guide's full config with a few random places broken."""
    data = _copy(SEED)
    for path in draw(st.lists(st.sampled_from(PLACES), min_size=1, max_size=4)):
        parent: Any = data
        try:
            for part in path[:-1]:
                parent = parent[part]
            old = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed it
        if not isinstance(parent, dict | list):
            continue  # an earlier change made it a string (which indexes, but is immutable)
        how = draw(st.sampled_from(["value", "drop", "key", "list", "swap"]))
        if how == "value":
            parent[path[-1]] = draw(YAMLISH)
        elif how == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif how == "key" and isinstance(parent, dict):
            parent[draw(st.one_of(TEXT, st.sampled_from(KEYS)))] = old
        elif how == "list":
            parent[path[-1]] = [old]
        else:  # a value from elsewhere in the file: the right shape in the wrong place
            parent[path[-1]] = _copy(_get(SEED, draw(st.sampled_from(PLACES))))
    return data


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def assert_config_or_one_line(call: Any, source: str) -> None:
    try:
        assert isinstance(call(), Config)
    except ConfigError as err:
        for line in (str(err), *err.problems):
            assert line.startswith(f"{source}: ") and len(line) > len(source) + 2, line
            assert "\n" not in line and "\r" not in line, line
            assert "Traceback" not in line, line


def test_the_seed_is_the_guides_full_example() -> None:
    config = parse_config(SEED, env={}, names=NAMES)
    assert config.models and config.sources and config.alerts.receivers


@fuzz(300)
@given(mutated_seed())
def test_a_broken_config_is_one_line_naming_the_key(data: Any) -> None:
    assert_config_or_one_line(lambda: parse_config(data, "mw.yaml", env={}, names=NAMES), "mw.yaml")


@fuzz(200)
@given(st.one_of(YAMLISH, st.dictionaries(st.sampled_from(KEYS), YAMLISH, max_size=6)))
def test_any_tree_of_keys_and_values_is_one_line_or_a_config(data: Any) -> None:
    assert_config_or_one_line(lambda: parse_config(data, "mw.yaml", env={}, names=NAMES), "mw.yaml")


TEXTS = st.one_of(
    st.text(max_size=200),
    mutated_seed().map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
    st.tuples(mutated_seed(), st.text(max_size=5), st.integers(0, 10_000)).map(
        lambda t: (
            (s := yaml.safe_dump(t[0]))[: t[2] % (len(s) + 1)] + t[1] + s[t[2] % (len(s) + 1) :]
        )
    ),
    st.sampled_from(["models: " + "[" * 5000, "a: &a [*a]", "models: !!python/name:os.system"]),
)


@fuzz(200)
@given(TEXTS)
def test_any_file_is_one_line_or_a_config(text: str) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "mw.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        assert_config_or_one_line(lambda: load_config(path, env={}, names=NAMES), str(path))


@pytest.mark.parametrize("depth", [200, 5000])
@pytest.mark.parametrize("bracket", ["[", "{a: "])
def test_a_file_nested_too_deep_is_one_line(tmp_path: Path, bracket: str, depth: int) -> None:
    """Found by the fuzzing: YAML nested thousands deep raised RecursionError."""
    closing = "]" if bracket == "[" else "}"
    path = tmp_path / "mw.yaml"
    path.write_text("models: " + bracket * depth + "1" * (bracket != "[") + closing * depth)
    with pytest.raises(ConfigError) as err:
        load_config(path, env={}, names=NAMES)
    assert "\n" not in str(err.value) and str(err.value).startswith(f"{path}: ")


def test_an_unknown_key_with_a_newline_is_named_on_one_line() -> None:
    """Found by the fuzzing: the key was quoted raw, making a two-line error."""
    with pytest.raises(ConfigError) as err:
        parse_config({"api": {"ho\nst": 1}}, "mw.yaml", env={}, names=NAMES)
    assert str(err.value) == "mw.yaml: unknown key 'api.ho\\nst' (did you mean 'host'?)"
