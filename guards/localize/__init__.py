"""Layer localisation: where in the graph an optimized build departs from its reference.

Both models run a bounded sample of the golden set (the failing slice's rows first) with every
matched intermediate tensor exposed as an output; the report lists per-tensor errors in
topological order, the first tensor over tolerance, the tensor where error grows most, int8
calibrated ranges against the ranges the rows reach, and a remedy when the evidence is clear.
"""

from __future__ import annotations

from guards.localize._results import ActivationRange, Localization, Remedy, TensorError
from guards.localize._run import LocalizeJob, localize

__all__ = ["ActivationRange", "Localization", "LocalizeJob", "Remedy", "TensorError", "localize"]
