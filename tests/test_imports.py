"""Imports at module top (STYLE 24), except the few documented heavy optional libraries.

A function-local import hides a cycle or a dependency and makes the function's types `Any`.
Only the libraries below may be imported inside a function, each for the reason given
(docs/architecture.md, "Imports at module top"): loading them at module top would be paid by
every CLI command and test process that never uses them, or would fail where the optional extra
is not installed.

The command line is the one place where anything may be imported inside a function: a command
module declares its flags with click alone and imports what the command runs inside the
command (or moves it to a `_<command>_run.py` module imported there), so `modelwatch COMMAND
--help` loads none of it and a command loads only what it uses
(tests/monitor/app/cli/test_cli_imports.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("monitor", "collectors", "alerts", "guards", "dashboards", "migrations")
# The composition root of one-shot commands: imports there are per command (module docstring).
LAZY_ROOT = ROOT / "monitor" / "app" / "cli"

# top-level name -> why it may load inside the function that uses it
HEAVY_OPTIONAL = {
    "evidently": "~4 s to import; only `drift --evidently-html` uses it",
    "onnxruntime": "loads the CUDA/TensorRT providers; only gate runs and the demo use it",
    "onnx": "~0.8 s (ml_dtypes); only localisation reads graphs, yet `serve` loads guards",
    "confluent_kafka": "optional extra (modelwatch[confluent]); only `client: confluent-kafka`",
    "pyspark": "optional extra (modelwatch[spark]); only `baseline create --engine spark`",
    "lightgbm": "optional extra (modelwatch[regression]); only regression loss estimation",
    "pandas": "~0.3 s; the daemon's window jobs and most commands never build a frame",
    "pyarrow": "only reading data files (pyarrow.dataset, ~0.3 s with pandas: directories)",
    "scipy": "~0.8 s; the statistical core imports without it (tests/monitor/test_public_api.py)",
    "kafka": "~0.1 s on every command (they all import collectors); only Kafka sources use it",
}


def _function_local_imports(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module) of every import statement inside a function of `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import):
                found += [(inner.lineno, alias.name.split(".")[0]) for alias in inner.names]
            elif isinstance(inner, ast.ImportFrom):
                module = "." * inner.level + (inner.module or "")
                found.append((inner.lineno, module.split(".")[0] or module))
    return found


def _all_function_local() -> list[tuple[str, int, str]]:
    return sorted(
        (str(path.relative_to(ROOT)), line, module)
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if not path.is_relative_to(LAZY_ROOT)
        for line, module in _function_local_imports(path)
    )


def test_no_function_local_imports_outside_the_heavy_optional_libraries() -> None:
    offenders = [
        f"{path}:{line}: import of {module!r} inside a function"
        for path, line, module in _all_function_local()
        if module not in HEAVY_OPTIONAL
    ]
    assert not offenders, "move these to module top:\n" + "\n".join(offenders)


def test_every_allowlisted_library_is_still_imported_lazily_somewhere() -> None:
    """An entry nobody needs any more is taken off the list, so the list stays the truth."""
    used = {module for _, _, module in _all_function_local()}
    assert set(HEAVY_OPTIONAL) <= used, f"stale allowlist entries: {set(HEAVY_OPTIONAL) - used}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os\n", []),
        ("def f():\n    import json\n", [(2, "json")]),
        ("class C:\n    def m(self):\n        from monitor.errors import X\n", [(3, "monitor")]),
        ("async def f():\n    if True:\n        import pandas.api as p\n", [(3, "pandas")]),
        ("def f():\n    from . import sibling\n", [(2, ".")]),
    ],
)
def test_scanner_finds_imports_in_any_function(
    tmp_path: Path, source: str, expected: list[tuple[int, str]]
) -> None:
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert _function_local_imports(path) == expected
