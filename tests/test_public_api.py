"""Public surface pinned per package, and imports without side effects."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGES = [
    "monitor",
    "guards",
    "collectors",
    "alerts",
    "dashboards",
    "migrations",
    "monitor.config",
    "monitor.storage",
    "monitor.errors",
    "monitor.canary",
]

PINNED: dict[str, set[str]] = {
    "monitor": {"__version__"},
    "monitor.canary": {
        "CanaryCriterion",
        "CanaryJudgement",
        "CanaryReport",
        "CanaryVerdict",
        "CriterionStatus",
        "Evidence",
        "JudgedCriterion",
        "analyze_canary",
        "canary_history",
        "evaluate_pair",
        "judge_pair",
        "load_sliced_evidence",
        "since_of",
        "store_judgement",
    },
    "monitor.errors": {
        "ArtifactMismatchError",
        "ConfigError",
        "ConflictError",
        "CorruptProfileError",
        "InputError",
        "ModelwatchError",
        "NotFoundError",
        "RegistryError",
        "SchemaMismatchError",
        "SchemaVersionError",
        "ServiceError",
        "StorageError",
    },
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_all_is_pinned(name: str) -> None:
    module = importlib.import_module(name)
    assert set(module.__all__) == PINNED[name]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_exists(name: str) -> None:
    module = importlib.import_module(name)
    for attr in getattr(module, "__all__", []):
        assert hasattr(module, attr), f"{name}.__all__ lists missing {attr}"


def test_importing_packages_has_no_side_effects(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        f"import {', '.join(PACKAGES)}\n"
        "heavy = [m for m in ('evidently', 'onnxruntime', 'kafka', 'pandas') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin"},
    )
    assert out.stdout.strip() == "", f"heavy modules imported eagerly: {out.stdout}"
    assert list(tmp_path.iterdir()) == [], "importing created files"
