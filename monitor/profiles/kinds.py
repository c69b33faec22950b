"""The union of profile types, for annotations and isinstance checks."""

from __future__ import annotations

from typing import TypeAlias

from monitor.profiles.categorical import CategoricalProfile
from monitor.profiles.numeric import NumericProfile

Profile: TypeAlias = NumericProfile | CategoricalProfile
