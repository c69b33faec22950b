"""Provider selection without a GPU, and sessions that record what really ran."""

from __future__ import annotations

import pytest

from guards._runtime import gpu_usable, open_session, select_providers, session_options
from monitor.errors import InputError
from tests.guards.conftest import Suite


def test_gpu_providers_are_requested_only_when_a_gpu_is_usable() -> None:
    chosen = select_providers()
    assert chosen[-1] == "CPUExecutionProvider"
    assert (len(chosen) > 1) == gpu_usable()
    if len(chosen) > 1:
        assert chosen[0] in ("TensorrtExecutionProvider", "CUDAExecutionProvider")


def test_explicit_providers_must_exist() -> None:
    with pytest.raises(InputError, match="NoSuchExecutionProvider"):
        select_providers(["NoSuchExecutionProvider"])


def test_session_reports_the_providers_that_ran(suite: Suite) -> None:
    session = open_session(suite.models["reference"], select_providers(), session_options())
    assert session.get_providers()[-1] == "CPUExecutionProvider"


def test_unreadable_model_is_an_input_error_naming_the_file(suite: Suite) -> None:
    bogus = suite.directory / "bogus.onnx"
    bogus.write_bytes(b"not a model")
    with pytest.raises(InputError, match="bogus.onnx: cannot load ONNX model"):
        open_session(bogus, ["CPUExecutionProvider"], session_options())
    with pytest.raises(InputError, match="missing.onnx: model file not found"):
        open_session(suite.directory / "missing.onnx", ["CPUExecutionProvider"], session_options())
