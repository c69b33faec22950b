"""The pure state machine, table-driven over an injected clock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from alerts._state import StoredState, step
from tests.alerts.conftest import T0, at

M5 = timedelta(minutes=5)


@pytest.mark.parametrize(
    ("prev", "active", "now", "for_", "keep", "expected", "fired", "resolved"),
    [
        (None, False, at(0), M5, timedelta(0), None, False, False),
        (None, True, at(0), M5, timedelta(0), "pending", False, False),
        (None, True, at(0), timedelta(0), timedelta(0), "firing", True, False),
        (StoredState("pending", T0, T0), True, at(299), M5, timedelta(0), "pending", False, False),
        (StoredState("pending", T0, T0), True, at(300), M5, timedelta(0), "firing", True, False),
        (StoredState("pending", T0, T0), False, at(60), M5, timedelta(0), None, False, False),
        (StoredState("firing", T0, T0), True, at(900), M5, timedelta(0), "firing", False, False),
        (StoredState("firing", T0, T0), False, at(60), M5, timedelta(0), "resolved", False, True),
        (StoredState("firing", T0, T0), False, at(60), M5, M5, "firing", False, False),
        (StoredState("firing", T0, T0), False, at(300), M5, M5, "resolved", False, True),
        (
            StoredState("resolved", T0, T0),
            False,
            at(60),
            M5,
            timedelta(0),
            "resolved",
            False,
            False,
        ),
        (StoredState("resolved", T0, T0), True, at(60), M5, timedelta(0), "pending", False, False),
    ],
)
def test_transitions(prev, active, now, for_, keep, expected, fired, resolved) -> None:  # type: ignore[no-untyped-def]
    result = step(prev, active, now, for_, keep)
    assert result.state == expected
    assert result.became_firing is fired
    assert result.became_resolved is resolved


def test_refiring_after_resolution_restarts_the_for_clock() -> None:
    result = step(StoredState("resolved", T0, T0), True, at(600), M5)
    assert result.active_since == at(600)
    assert step(StoredState("pending", at(600), at(600)), True, at(899), M5).state == "pending"
