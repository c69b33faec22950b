"""Schemathesis against the served OpenAPI spec: no generated request gets a 5xx or a status
code the spec does not list for that operation.

Every operation gets a bounded number of schema-conforming and schema-violating requests with an
admin token (so requests reach the handlers rather than stopping at auth), sent with the
credentials the spec's security scheme describes.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import httpx
import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guards.registry import register_version
from tests.daemon.conftest import ReleaseModels, ServerProcess, auth, db_engine

EXAMPLES = 25


@pytest.fixture(scope="module")
def server(module_server: ServerProcess) -> ServerProcess:
    """One server for the module: the fuzzing test's writes change nothing the others read."""
    return module_server


def _schemathesis() -> Any:
    """Schemathesis (and Faker under it: ~4 s of imports), loaded when these tests run, not at
    collection: the fast lane collects this module and runs none of it."""
    return importlib.import_module("schemathesis")


def _documented(spec: dict[str, Any], method: str, path: str) -> set[str]:
    return set(spec["paths"][path][method.lower()]["responses"])


def _no_server_errors(server: ServerProcess, operation: object, spec: dict[str, Any]) -> list[str]:
    op: Any = operation
    mode = _schemathesis().GenerationMode
    strategy = st.one_of(op.as_strategy(mode.POSITIVE), op.as_strategy(mode.NEGATIVE))
    failures: list[str] = []
    session = requests.Session()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def check(case: Any) -> None:
        # Sent with plain requests: schemathesis' own session trips over this urllib3 version.
        kwargs = case.as_transport_kwargs(base_url=server.url, headers=auth("MW_T_ADMIN"))
        response = session.request(**kwargs, timeout=60)
        if response.status_code >= 500 or "Traceback" in response.text:
            failures.append(f"{case.method} {case.formatted_path}: {response.status_code}")
        if str(response.status_code) not in _documented(spec, case.method, case.path):
            failures.append(f"undocumented {response.status_code}: {case.method} {case.path}")

    check()
    return failures


def test_no_generated_request_gets_a_server_error(
    server: ServerProcess, release_models: ReleaseModels
) -> None:
    engine = db_engine(server.directory)
    register_version(engine, "fraud", "1", release_models.reference, activate=True)
    engine.dispose()
    spec = httpx.get(f"{server.url}/openapi.json").json()
    schema = _schemathesis().openapi.from_dict(spec)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    failures: list[str] = []
    for operation in operations:
        failures += _no_server_errors(server, operation, spec)
    assert failures == [], failures[:10]
    assert server.proc.poll() is None


def test_every_v1_endpoint_is_documented_with_typed_models(server: ServerProcess) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    operations = [
        (f"{method.upper()} {path}", op)
        for path, ops in spec["paths"].items()
        if path.startswith("/v1/")
        for method, op in ops.items()
    ]
    assert len(operations) == 18  # POST /v1/canary/{model}/{canary}/apply is the 18th
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": spec["components"]["securitySchemes"]["bearer"]["description"],
    }
    for name, op in operations:
        assert op["security"] == [{"bearer": []}], name
        for code in ("413", "503"):
            assert "ErrorBody" in str(op["responses"][code]), name
        ok = next(v for k, v in op["responses"].items() if k.startswith("2"))
        assert "$ref" in ok["content"]["application/json"]["schema"], name
        for code in ("401", "403"):
            error = op["responses"][code]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/ErrorBody"}, name
        if op.get("parameters") or "requestBody" in op:
            assert "422" in op["responses"], name


def test_readyz_documents_its_503(server: ServerProcess) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    ready = spec["paths"]["/readyz"]["get"]["responses"]
    assert ready["503"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Readiness"
    }


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_every_asset_from_the_daemon(server: ServerProcess, page: str) -> None:
    html = httpx.get(f"{server.url}{page}").text
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*'([^']+)'""", html)
    found = [a or b for a, b in urls]
    assert len(found) >= 2, html
    for url in found:
        assert not re.match(r"^(https?:)?//", url), f"{page} loads {url} from off the host"
        answer = httpx.get(f"{server.url}{url}")
        assert answer.status_code == 200, url
        assert len(answer.content) > 0, url
    assert "cdn" not in html.lower()
