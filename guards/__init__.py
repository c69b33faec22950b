"""Golden-set replay of optimized vs reference ONNX models, verdicts, canary gate and rollback."""

from __future__ import annotations

__all__: list[str] = []
