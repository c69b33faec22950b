"""A loopback HTTP server answering like Grafana's HTTP API for the endpoints provisioning uses.

Grafana itself cannot be installed from the registries this project builds with, so the tests
record what the provisioner sends to this stand-in. It keeps state like Grafana does: folders,
datasources by uid and name, dashboards with versions (a stale version without `overwrite` is
answered 412 version-mismatch, like Grafana).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class GrafanaState:
    def __init__(self) -> None:
        self.folders: dict[str, dict[str, Any]] = {}
        self.datasources: dict[str, dict[str, Any]] = {}
        self.dashboards: dict[str, dict[str, Any]] = {}  # uid -> {"dashboard", "folderUid"}
        self.versions: dict[str, list[dict[str, Any]]] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self.fail_next: list[int] = []  # status codes to answer before handling normally
        self.next_id = 1

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id


Response = tuple[int, Any]


def _search(state: GrafanaState, params: dict[str, str]) -> Response:
    if params.get("type") != "dash-folder":
        return 200, []
    query = params.get("query", "").lower()
    hits = [
        {"uid": f["uid"], "title": f["title"], "type": "dash-folder", "id": f["id"]}
        for f in state.folders.values()
        if query in f["title"].lower()
    ]
    return 200, hits


def _create_folder(state: GrafanaState, body: dict[str, Any]) -> Response:
    if any(f["title"] == body["title"] for f in state.folders.values()):
        return 409, {"message": "a folder with that name already exists"}
    uid = body.get("uid") or f"folder{state.next_id}"
    folder = {"uid": uid, "title": body["title"], "id": state.new_id(), "version": 1}
    state.folders[uid] = folder
    return 200, folder


def _get_datasource(state: GrafanaState, key: str, value: str) -> Response:
    for ds in state.datasources.values():
        if ds[key] == value:
            return 200, ds
    return 404, {"message": "Data source not found"}


def _create_datasource(state: GrafanaState, body: dict[str, Any]) -> Response:
    if any(ds["name"] == body["name"] for ds in state.datasources.values()):
        return 409, {"message": "data source with the same name already exists"}
    ds = {k: v for k, v in body.items() if k != "secureJsonData"}
    ds.update(id=state.new_id(), secureJsonFields={k: True for k in body.get("secureJsonData", {})})
    state.datasources[ds["uid"]] = ds
    return 200, {"datasource": ds, "id": ds["id"], "message": "Datasource added"}


def _update_datasource(state: GrafanaState, uid: str, body: dict[str, Any]) -> Response:
    if uid not in state.datasources:
        return 404, {"message": "Data source not found"}
    ds = {k: v for k, v in body.items() if k != "secureJsonData"}
    ds["id"] = state.datasources[uid]["id"]
    state.datasources[uid] = ds
    return 200, {"datasource": ds, "message": "Datasource updated"}


def _get_dashboard(state: GrafanaState, uid: str) -> Response:
    stored = state.dashboards.get(uid)
    if stored is None:
        return 404, {"message": "Dashboard not found"}
    meta = {"folderUid": stored["folderUid"], "version": stored["dashboard"]["version"]}
    return 200, {"dashboard": stored["dashboard"], "meta": meta}


def _post_dashboard(state: GrafanaState, body: dict[str, Any]) -> Response:
    dash = dict(body["dashboard"])
    uid = dash["uid"]
    stored = state.dashboards.get(uid)
    if stored is not None and not body.get("overwrite"):
        if dash.get("version") != stored["dashboard"]["version"]:
            return 412, {"status": "version-mismatch", "message": "version mismatch"}
    if body.get("folderUid") and body["folderUid"] not in state.folders:
        return 400, {"message": "folder not found"}
    version = 1 if stored is None else stored["dashboard"]["version"] + 1
    dash["id"] = stored["dashboard"]["id"] if stored else state.new_id()
    dash["version"] = version
    state.dashboards[uid] = {"dashboard": dash, "folderUid": body.get("folderUid")}
    state.versions.setdefault(uid, []).append(dash)
    return 200, {"id": dash["id"], "uid": uid, "status": "success", "version": version}


def route(
    state: GrafanaState, method: str, path: str, params: dict[str, str], body: Any
) -> Response:
    parts = path.strip("/").split("/")[1:]  # drop "api"
    match method, parts:
        case "GET", ["search"]:
            return _search(state, params)
        case "POST", ["folders"]:
            return _create_folder(state, body)
        case "GET", ["datasources", ("uid" | "name") as key, value]:
            return _get_datasource(state, key, urllib.parse.unquote(value))
        case "POST", ["datasources"]:
            return _create_datasource(state, body)
        case "PUT", ["datasources", "uid", uid]:
            return _update_datasource(state, uid, body)
        case "GET", ["dashboards", "uid", uid]:
            return _get_dashboard(state, uid)
        case "POST", ["dashboards", "db"]:
            return _post_dashboard(state, body)
    return 404, {"message": f"no route {method} {path}"}


class _Handler(BaseHTTPRequestHandler):
    server: FakeGrafana

    def _handle(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        state = self.server.state
        with self.server.lock:
            state.requests.append((self.command, url.path, body))
            if self.headers.get("Authorization") != self.server.expected_auth:
                status, payload = 401, {"message": "Unauthorized"}
            elif state.fail_next:
                status, payload = state.fail_next.pop(0), {"message": "injected failure"}
            else:
                status, payload = route(state, self.command, url.path, params, body)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = _handle

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FakeGrafana(ThreadingHTTPServer):
    """Serves on 127.0.0.1:<free port>; accepts only `Bearer <token>`."""

    def __init__(self, token: str = "test-token") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = GrafanaState()
        self.lock = threading.Lock()
        self.expected_auth = f"Bearer {token}"
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> FakeGrafana:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)

    def calls(self) -> list[tuple[str, str]]:
        """(method, path) of every request so far."""
        return [(m, p) for m, p, _ in self.state.requests]

    def writes(self) -> list[tuple[str, str]]:
        return [(m, p) for m, p in self.calls() if m != "GET"]
