"""Zero-tolerance criteria are exact: an identical copy passes at every slice size and preset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guards import GateRequest, load_golden, preset, run_gate
from guards._criteria import Evidence, Slice, evaluate
from guards._stats import wilson_interval
from guards._tasks import detect_task
from guards.policy import PRESETS
from tests.guards.conftest import Suite

SIZES = range(1, 1001)


def test_wilson_interval_is_exact_at_the_ends() -> None:
    for n in SIZES:
        assert wilson_interval(0, n)[0] == 0.0
        assert wilson_interval(n, n)[1] == 1.0
    low, high = wilson_interval(3, 90)
    assert 0.0 < low < 3 / 90 < high < 1.0
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 4)


def _evidence(output: np.ndarray, labels: np.ndarray) -> Evidence:
    # One slice of every size 1..1000 over the same rows: each criterion is judged per size.
    slices = [Slice(None, np.arange(len(output)))]
    slices += [Slice({"size": str(s)}, np.arange(s)) for s in SIZES]
    task = detect_task("out", output, output.copy(), 0.5)
    return Evidence({}, task, labels, tuple(slices))


@pytest.mark.parametrize("name", sorted(PRESETS))
@pytest.mark.parametrize("kind", ["scores", "binary", "labels"])
def test_identical_outputs_pass_every_slice_size(name: str, kind: str) -> None:
    rng = np.random.default_rng(0)
    n = max(SIZES)
    labels = rng.integers(0, 2, n)
    output = {
        "scores": rng.dirichlet([1.0, 1.0], n).astype(np.float32),
        "binary": rng.uniform(0, 1, n).astype(np.float32),
        "labels": labels.copy(),
    }[kind]
    policy = PRESETS[name].with_overrides({"min_topk_overlap": 0.9})
    criteria = evaluate(policy, _evidence(output, labels))
    assert len({c.slice["size"] for c in criteria if c.slice}) == len(SIZES)
    bad = [c.describe() for c in criteria if c.status != "pass"]
    assert not bad, bad[:5]


def test_one_flip_in_a_small_slice_still_fails_a_zero_limit() -> None:
    # Exactness does not make small slices lenient: 30 flips of 40 rows breach a zero limit.
    ref = np.zeros(40, dtype=np.int64)
    cand = ref.copy()
    cand[:30] = 1
    task = detect_task("out", ref, cand, 0.5)
    evidence = Evidence({}, task, None, (Slice({"s": "x"}, np.arange(40)),))
    (flip,) = evaluate(PRESETS["fp32"], evidence)
    assert flip.status == "fail" and flip.value == 0.75


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_gate_passes_an_identical_copy_with_small_slices(
    suite: Suite, tmp_path: Path, name: str
) -> None:
    frame = pd.read_parquet(suite.golden)
    # Slices of 1, 7, 90 and 199 rows (below min_slice_rows) and the rest.
    sizes = [1, 7, 90, 199]
    tag = np.full(len(frame), "rest", dtype=object)
    start = 0
    for s in sizes:
        tag[start : start + s] = f"s{s}"
        start += s
    frame["bucket"] = tag
    path = tmp_path / "golden.parquet"
    frame.to_parquet(path)
    golden = load_golden(
        path, id_column="id", label_column="label", slice_by=["segment", "region", "bucket"]
    )
    request = GateRequest(
        suite.models["reference"], suite.models["reexport"], golden, preset(name),
        latency_batch_sizes=(),
    )  # fmt: skip
    verdict = run_gate(request)
    assert verdict.verdict == "pass", [c.describe() for c in verdict.criteria if c.status != "pass"]
    assert verdict.exit_code == 0
