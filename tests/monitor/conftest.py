"""Fixtures for the statistical core: seeded generators and small frames."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)
