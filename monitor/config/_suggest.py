"""Every problem of a config validation error as one line each, with a did-you-mean for typos.

The valid keys at a location come from the pydantic models themselves (walking field
annotations from the root), never from a copied list.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

# pydantic puts the tag of a tagged union into an error's location; it is not a key.
UNION_TAGS = ("kafka", "jsonl")


def location(loc: Sequence[int | str]) -> str:
    """`a.b[0].c` from pydantic's location tuple ('(top level)' for the root)."""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for a mapping key: the key is already named
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(top level)"


def problems(root: type[BaseModel], exc: ValidationError) -> list[str]:
    """One line per error: unknown keys first (with a suggestion), then missing, then values."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    out = []
    for err in errors:
        loc = tuple(p for p in err["loc"] if p not in UNION_TAGS or p == err["loc"][-1])
        key = location(loc)
        if err["type"] == "extra_forbidden":
            hint = suggest(root, loc)
            out.append(f"unknown key '{key}'" + (f" (did you mean '{hint}'?)" if hint else ""))
        elif err["type"] == "missing":
            out.append(f"missing required key '{key}'")
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
            out.append(f"invalid value for '{key}': {msg}")
    return [_one_line(line) for line in out]


def _one_line(text: str) -> str:
    """`text` with control characters escaped: a key or value quoted in an error may hold a
    newline, and an error is one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def suggest(root: type[BaseModel], loc: Sequence[int | str]) -> str | None:
    """The closest valid key to the last part of `loc`, among the keys valid at its parent."""
    if not loc or not isinstance(loc[-1], str):
        return None
    keys: set[str] = set()
    for model in _models_at(root, loc[:-1]):
        for name, info in model.model_fields.items():
            keys.add(info.alias or name)
    close = difflib.get_close_matches(loc[-1], sorted(keys), n=1, cutoff=0.6)
    return close[0] if close else None


def _models_at(root: type[BaseModel], parents: Sequence[int | str]) -> list[type[BaseModel]]:
    candidates = [root]
    for part in parents:
        if isinstance(part, int):
            continue  # a list index
        following: list[type[BaseModel]] = []
        for model in candidates:
            field = model.model_fields.get(part)
            if field is not None:
                following += _model_types(field.annotation)
        # a dict key or a union tag is not a field: stay at the same models
        candidates = following or candidates
    return candidates


def _model_types(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_types(typing.get_args(annotation)[0])
    if origin is None and not isinstance(annotation, types.UnionType):
        return []
    return [m for arg in typing.get_args(annotation) for m in _model_types(arg)]
