"""Reference pages generated from the code: configuration, HTTP API, metrics, signal kinds.

Each `*_entries` function walks one definition (the pydantic config models, the FastAPI app's
OpenAPI document, the Prometheus metric registry, the alert signal kinds) and returns typed rows;
each `*_markdown` function renders them. The MkDocs hook (`docs/_gen/hooks.py`) puts the
rendered Markdown where a page says `<!-- gen:NAME -->`, and `tests/docs/` checks the same rows
for missing descriptions, so what is documented and what is checked cannot drift apart.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class ConfigKey:
    """One key of the YAML file: where it sits, its type, default and description."""

    section: str  # e.g. "models[].drift"; "" for the top level
    name: str
    type: str
    default: str
    description: str

    @property
    def path(self) -> str:
        return f"{self.section}.{self.name}" if self.section else self.name


@dataclass(frozen=True)
class ConfigSection:
    """A config model as it appears in the file, with the keys it holds."""

    path: str
    title: str  # the model's docstring, first line
    keys: tuple[ConfigKey, ...]


# Models written in YAML as one string (parsed by a `mode="before"` validator): shown as that
# string, not as a section of their own.
WRITTEN_AS_STRING: dict[str, str] = {
    "Matcher": 'matcher (`name="value"`, `!=`, `=~` or `!~` with an RE2 regex)',
}


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """Config models reachable from a field's type (through lists, dicts, unions, Optional)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [] if annotation.__name__ in WRITTEN_AS_STRING else [annotation]
    out: list[type[BaseModel]] = []
    for arg in get_args(annotation):
        out += _models_in(arg)
    return out


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (typing.Union, types.UnionType)


def type_name(annotation: Any) -> str:
    """A reader's name for a field type: `duration`, `list of str`, `"a" or "b"`, ..."""
    if annotation is type(None):
        return "null"
    if annotation is timedelta:
        return "duration"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return WRITTEN_AS_STRING.get(annotation.__name__, "mapping")
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        return " or ".join(f"`{a}`" if not isinstance(a, bool) else str(a).lower() for a in args)
    if _is_union(annotation):
        names = dict.fromkeys(type_name(a) for a in args)  # one "mapping" for several models
        return " or ".join(names)
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"mapping of {type_name(args[0])} to {type_name(args[1])}"
    if origin is typing.Annotated:
        return type_name(args[0])
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


_BOUNDS: tuple[tuple[type[Any], str, str], ...] = (
    (annotated_types.Ge, "ge", "≥"),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "≤"),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.MinLen, "min_length", "length ≥"),
    (annotated_types.MaxLen, "max_length", "length ≤"),
)


def _constraints(info: FieldInfo) -> str:
    parts: list[str] = []
    for item in info.metadata:
        for kind, attr, sign in _BOUNDS:
            if isinstance(item, kind):
                parts.append(f"{sign} {getattr(item, attr)}")
    return ", ".join(parts)


def format_duration(value: timedelta) -> str:
    """`1h`, `10m`, `500ms`: the largest unit that divides the duration."""
    ms = round(value.total_seconds() * 1000)
    if ms == 0:
        return "0s"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    factory = info.default_factory
    value = factory() if factory is not None else info.default  # type: ignore[call-arg]
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, timedelta):
        return f"`{format_duration(value)}`"
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | dict) and not value:
        return f"`{'[]' if isinstance(value, list) else '{}'}`"
    return f"`{value}`"


def _child_path(path: str, name: str, annotation: Any) -> str:
    base = f"{path}.{name}" if path else name
    if get_origin(annotation) is list:
        return f"{base}[]"
    if get_origin(annotation) is dict:
        return f"{base}.<name>"
    return base


def _variant(path: str, model: type[BaseModel], variants: int) -> str:
    """`sources[] (type: kafka)` where one key holds one of several models told apart by `type`."""
    kind = model.model_fields.get("type")
    if variants < 2 or kind is None or get_origin(kind.annotation) is not Literal:
        return path
    return f"{path} (type: {get_args(kind.annotation)[0]})"


def config_sections(root: type[BaseModel]) -> list[ConfigSection]:
    """Every section of the config file, depth first from the top level."""
    out: list[ConfigSection] = []
    seen: set[tuple[str, type[BaseModel]]] = set()

    def walk(model: type[BaseModel], path: str) -> None:
        if (path, model) in seen:
            return
        seen.add((path, model))
        keys: list[ConfigKey] = []
        children: list[tuple[type[BaseModel], str]] = []
        for name, info in model.model_fields.items():
            shown = info.alias or name
            annotation = info.annotation
            kind = type_name(annotation)
            bounds = _constraints(info)
            keys.append(
                ConfigKey(
                    path,
                    shown,
                    f"{kind} ({bounds})" if bounds else kind,
                    _default(info),
                    (info.description or "").strip(),
                )
            )
            found = _models_in(annotation)
            child_path = _child_path(path, shown, annotation)
            children += [(child, _variant(child_path, child, len(found))) for child in found]
        doc = (model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        out.append(ConfigSection(path, doc, tuple(keys)))
        for child, child_path in children:
            walk(child, child_path)

    walk(root, "")
    return out


def config_keys(root: type[BaseModel]) -> Iterator[ConfigKey]:
    """Every key of the config file."""
    for section in config_sections(root):
        yield from section.keys


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def config_markdown(root: type[BaseModel]) -> str:
    """One table per section: key, type, default, description."""
    lines: list[str] = []
    for section in config_sections(root):
        lines += [f"### `{section.path or 'top level'}`", "", _cell(section.title), ""]
        lines += ["| key | type | default | description |", "| --- | --- | --- | --- |"]
        for key in section.keys:
            lines.append(
                f"| `{key.name}` | {_cell(key.type)} | {_cell(key.default)} "
                f"| {_cell(key.description)} |"
            )
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- HTTP API

SCOPE_KEY = "x-scope"
METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Operation:
    """One route and method of the OpenAPI document."""

    method: str
    path: str
    scope: str
    summary: str
    description: str
    tag: str
    parameters: tuple[tuple[str, str, bool, str], ...]  # name, in, required, description
    responses: tuple[tuple[str, str], ...]  # status, description


def operations(openapi: dict[str, Any]) -> list[Operation]:
    """Every operation of an OpenAPI document, in document order."""
    out: list[Operation] = []
    for path, item in openapi.get("paths", {}).items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            params = tuple(
                (
                    p.get("name", ""),
                    p.get("in", ""),
                    bool(p.get("required", False)),
                    (p.get("description") or p.get("schema", {}).get("description") or ""),
                )
                for p in op.get("parameters", [])
            )
            responses = tuple(
                (str(code), (r.get("description") or "").strip())
                for code, r in op.get("responses", {}).items()
            )
            out.append(
                Operation(
                    method.upper(),
                    path,
                    op.get(SCOPE_KEY, "open" if not op.get("security") else ""),
                    (op.get("summary") or "").strip(),
                    (op.get("description") or "").strip(),
                    (op.get("tags") or ["other"])[0],
                    params,
                    responses,
                )
            )
    return out


def api_markdown(openapi: dict[str, Any]) -> str:
    """An overview table, then one section per operation grouped by tag."""
    ops = operations(openapi)
    lines = ["| method | path | scope | summary |", "| --- | --- | --- | --- |"]
    lines += [f"| {op.method} | `{op.path}` | {op.scope} | {_cell(op.summary)} |" for op in ops]
    lines.append("")
    tag = None
    for op in sorted(ops, key=lambda o: o.tag):
        if op.tag != tag:
            tag = op.tag
            lines += [f"### {tag}", ""]
        lines += [f"#### `{op.method} {op.path}`", "", f"Scope: **{op.scope}**.", ""]
        lines += [op.description, ""]
        if op.parameters:
            lines += ["| parameter | in | required | description |", "| --- | --- | --- | --- |"]
            for name, where, required, text in op.parameters:
                yes = "yes" if required else "no"
                lines.append(f"| `{name}` | {where} | {yes} | {_cell(text)} |")
            lines.append("")
        codes = ", ".join(f"`{code}` {_cell(text)}" for code, text in op.responses)
        lines += [f"Answers: {codes}.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class MetricDoc:
    """One registered Prometheus metric family."""

    name: str
    type: str
    labels: tuple[str, ...]
    help: str


def metric_docs(collectors: list[Any]) -> list[MetricDoc]:
    """The families of metric wrappers (Counter, Gauge, Histogram) as exposed, sorted by name."""
    out: list[MetricDoc] = []
    for collector in collectors:
        for family in collector.describe():
            name = f"{family.name}_total" if family.type == "counter" else family.name
            labels = tuple(getattr(collector, "_labelnames", ()))
            out.append(MetricDoc(name, family.type, labels, family.documentation.strip()))
    return sorted(out, key=lambda m: m.name)


def metrics_markdown(docs: list[MetricDoc]) -> str:
    lines = ["| metric | type | labels | description |", "| --- | --- | --- | --- |"]
    for m in docs:
        labels = ", ".join(f"`{label}`" for label in m.labels) or "—"
        lines.append(f"| `{m.name}` | {m.type} | {labels} | {_cell(m.help)} |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- signal kinds


@dataclass(frozen=True)
class SignalDoc:
    """One alert signal kind: its labels, what its value is and when it fires."""

    kind: str
    labels: tuple[str, ...]
    value: str
    fires: str


def signals_markdown(docs: list[SignalDoc]) -> str:
    lines = ["| kind | labels | value | fires (without `above`) |", "| --- | --- | --- | --- |"]
    for s in docs:
        labels = ", ".join(f"`{label}`" for label in s.labels)
        lines.append(f"| `{s.kind}` | {labels} | {_cell(s.value)} | {_cell(s.fires)} |")
    return "\n".join(lines) + "\n"
