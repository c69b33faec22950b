"""The per-slice canary judgement and its multiple-testing correction.

A regression confined to one slice fails the canary while the whole traffic passes; the
corrections agree with statsmodels' and keep their promise on simulated null families.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy.engine import Engine

from collectors import Ingestor
from monitor.canary import CanaryCriterion, evaluate_pair
from monitor.canary._schedule import correct
from monitor.config import Config, parse_config
from monitor.detectors import adjust_p_values
from tests.monitor.canary.traffic import events, records

# Traffic of one minute, ten minutes before this module loads, judged five minutes later. The
# job, run by the scheduler, reads from the window holding the real time minus `since` (1h), so
# the traffic stays in its range for 50 minutes after the import, whatever hour boundary the
# suite crosses meanwhile (an hour-aligned T0 fell out of range at the next full hour).
T0 = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
NOW = T0 + timedelta(minutes=5)
SINCE = T0.replace(minute=0)  # the start of the traffic's window


def config(url: str, **pair: object) -> Config:
    return parse_config(
        {
            "database_url": url,
            "models": [{"name": "fraud", "slices": ["region"], "canary": {"threshold": 0.3}}],
            "canaries": [{"model": "fraud", "canary": "2", "stable": "1", **pair},
                         {"model": "fraud", "canary": "3", "stable": "1", **pair}],
        },
        env={},
    )  # fmt: skip


def ingest(engine: Engine, cfg: Config) -> None:
    start = T0.timestamp()
    items = events("1", 3000, start, seed=1) + events("2", 3000, start, eu_shift=True, seed=2)
    items += events("3", 3000, start, seed=3)
    Ingestor(engine, "s", "http", cfg.models, cfg.collect).ingest(records(items))


def test_a_regression_in_one_slice_fails_the_canary_the_whole_passes(engine: Engine) -> None:
    cfg = config(str(engine.url))
    ingest(engine, cfg)
    bad, good = (evaluate_pair(engine, p, cfg.models[0], SINCE, NOW) for p in cfg.canaries)
    assert bad.verdict == "fail" and good.verdict == "pass"
    status = {(j.slice_key, j.criterion.name): j.criterion.status for j in bad.judged}
    assert status[("", "prediction")] == "ok"  # the whole traffic hides it
    assert status[('{"region":"eu"}', "prediction")] == "fail"
    assert status[('{"region":"us"}', "prediction")] == "ok"
    assert [j.criterion.name for j in bad.failed] == ["prediction"]
    doc = bad.to_dict()
    assert doc["verdict"] == "fail" and doc["failed"] == 1
    eu = next(s for s in doc["slices"] if s["slice"] == "region=eu")
    assert eu["verdict"] == "fail"
    assert all(c["p_adjusted"] >= c["p_value"] for c in eu["criteria"] if c["p_value"] is not None)
    assert {c["name"] for c in doc["criteria"]} >= {"prediction", "feature:amount"}
    # Slices off: only the whole traffic is judged, and it passes.
    whole = config(str(engine.url), max_slices=0)
    assert evaluate_pair(engine, whole.canaries[0], whole.models[0], SINCE, NOW).verdict == "pass"


def _criterion(name: str, status: str, p: float | None, canary: float = 0.5,
               threshold: float | None = 0.1) -> CanaryCriterion:  # fmt: skip
    return CanaryCriterion(name, status, canary, None, threshold, 500, 500, "", p)  # type: ignore[arg-type]


def test_the_correction_removes_failures_never_adds_them() -> None:
    raw = [
        ("", _criterion("prediction", "fail", 0.001)),
        ('{"region":"eu"}', _criterion("prediction", "fail", 0.04)),  # alone: fails
        ('{"region":"us"}', _criterion("prediction", "ok", 0.0001)),  # under its bound
        ('{"region":"us"}', _criterion("error_rate", "fail", 0.9, 0.2, 0.05)),  # over its SLO
        ('{"region":"us"}', _criterion("latency_p95", "fail", None)),  # a bound, no test
    ]
    judged = correct(raw, "holm", 0.05)
    assert [j.criterion.status for j in judged] == ["fail", "ok", "ok", "fail", "fail"]
    assert "adjusted p" in judged[1].criterion.detail
    assert judged[4].p_adjusted is None
    assert [j.criterion.status for j in correct(raw, "none", 0.05)][:2] == ["fail", "fail"]


@pytest.mark.parametrize("method", ["benjamini_hochberg", "holm"])
def test_adjusted_p_values_agree_with_statsmodels(method: str) -> None:
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(7)
    p = np.concatenate([rng.uniform(size=30), rng.uniform(0, 1e-3, size=5), [1.0, 1.0]])
    theirs = multipletests(p, method={"benjamini_hochberg": "fdr_bh", "holm": "holm"}[method])
    assert np.allclose(adjust_p_values(list(p), method), theirs[1])
    assert adjust_p_values([], method) == []
    with pytest.raises(ValueError, match="unknown correction"):
        adjust_p_values([0.1], "bonferonni")


def test_the_corrections_keep_their_promise_on_null_families() -> None:
    """11 slices × 4 tested criteria with no regression at all: Holm fails a canary in at
    most `level` of evaluations, and so does BH (its FDR equals that chance when all nulls
    are true); uncorrected testing fails most of them."""
    rng = np.random.default_rng(11)
    level, runs, m = 0.05, 4000, 44
    families = rng.uniform(size=(runs, m))
    any_false = {
        method: np.mean([min(adjust_p_values(list(f), method)) < level for f in families])
        for method in ("benjamini_hochberg", "holm", "none")
    }
    bound = level + 3 * np.sqrt(level * (1 - level) / runs)
    assert any_false["holm"] <= bound and any_false["benjamini_hochberg"] <= bound
    assert any_false["none"] > 0.8
