"""The layer contract is complete and kept; no import cycles; no package reaches into another's
private modules."""

from __future__ import annotations

import logging
import tomllib

import grimp
from importlinter.cli import lint_imports

from tests.conftest import REPO

PACKAGES = ("monitor", "collectors", "alerts", "guards", "dashboards", "migrations")
# Modules every layer may use: the version string.
UNLAYERED = {"monitor._version"}


def _layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "layers"]
    return [m.strip() for layer in contract["layers"] for m in layer.replace(":", "|").split("|")]


def test_every_module_of_monitor_and_every_package_has_a_layer() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    children = {m for m in graph.find_children("monitor")} | set(PACKAGES) - {"monitor"}
    missing = sorted(children - set(_layers()) - UNLAYERED)
    assert missing == [], f"add these to a layer in [tool.importlinter]: {missing}"


def test_layer_contracts_hold() -> None:
    # lint_imports configures logging with dictConfig, which disables every logger that exists
    # already (collectors', the daemon's): later tests in this process would see no records.
    loggers = [x for x in logging.root.manager.loggerDict.values() if isinstance(x, logging.Logger)]
    disabled = [x.disabled for x in loggers]
    try:
        assert lint_imports(no_cache=True) == 0  # the broken import chain is printed above
    finally:
        for logger, was in zip(loggers, disabled, strict=True):
            logger.disabled = was


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_package_imports_another_packages_private_module() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    reaching = []
    for importer in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(importer):
            parts = imported.split(".")
            private = next(
                (k for k, p in enumerate(parts) if p.startswith("_") and p[:2] != "__"), None
            )
            if private is None:
                continue
            owner = ".".join(parts[:private])
            if importer != owner and not importer.startswith(owner + "."):
                reaching.append(f"{importer} -> {imported}")
    assert reaching == [], "import what the package's __init__ exports instead"


def test_no_import_cycle_among_first_party_modules() -> None:
    """Not even one behind `if TYPE_CHECKING:` or inside a function: a cycle means two modules
    are one concept split in two, or a definition they share sits in the higher one."""
    graph = grimp.build_graph(
        *PACKAGES, include_external_packages=False, exclude_type_checking_imports=False,
        cache_dir=None,
    )  # fmt: skip
    cycles: dict[frozenset[str], str] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.setdefault(frozenset(back), " -> ".join([importer, *back]))
    found = "\n".join(sorted(cycles.values()))
    assert not cycles, f"import cycles (move what both sides share lower):\n{found}"


# Test infrastructure (the real services the tests start), not tests of a source folder.
NOT_MIRRORED = {"services"}


def test_test_folders_mirror_the_source_folders() -> None:
    """tests/<path>/ tests <path>/: a reader finds a module's tests by its path, and back."""
    tests = REPO / "tests"
    folders = [
        d.relative_to(tests)
        for d in tests.rglob("*")
        if d.is_dir()
        and (d / "__init__.py").exists()
        and d.relative_to(tests).parts[0] not in NOT_MIRRORED
    ]
    assert folders, "no test folders found"
    unmirrored = sorted(str(f) for f in folders if not (REPO / f).is_dir())
    assert unmirrored == [], f"test folders with no source folder of the same path: {unmirrored}"
    stray = sorted(p.name for p in tests.glob("test_*.py") if p.stem not in REPO_WIDE_TESTS)
    assert stray == [], f"move these next to what they test (tests/<package>/...): {stray}"


# Tests of the repository as a whole, at the top of tests/.
REPO_WIDE_TESTS = {"test_imports", "test_layers", "test_public_api"}
