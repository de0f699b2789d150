"""A Kubernetes API for tests: KMock with the server-side behaviour kopf, kubectl and clients need.

`RealisticEmulator` fills what a real API server fills (uid, resourceVersion, creationTimestamp,
generation, generateName) and answers discovery and lists the way kubectl expects
(`../shared/research/test-infra.md` §2). `kube` is the fixture most tests want: an emulator on
127.0.0.1 with the bundled resources and the DebugJob resource registered, and `KUBECONFIG`
pointing at it. KMock serves on the test's event loop, so test bodies must `await` (use
`eventually`), and blocking clients (the official `kubernetes` client, kubectl) must run off the
loop: `await asyncio.to_thread(...)` or `await kubectl(...)`.

Usage from any test package: `from tests.kube import kube  # noqa: F401` (the fixture), then
`async def test_x(kube: KubeEnv) -> None: ...`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import itertools
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import kmock
import pytest
import pytest_asyncio

DEBUGJOB_GROUP = "trainguard.dev"
DEBUGJOB_VERSION = "v1alpha1"
DEBUGJOB_PLURAL = "debugjobs"
DEBUGJOB_RESOURCE = f"{DEBUGJOB_GROUP}/{DEBUGJOB_VERSION}/{DEBUGJOB_PLURAL}"
"""KMock's resource key of DebugJobs (`kube.get(DEBUGJOB_RESOURCE, ns, name)`)."""

_resource_versions = itertools.count(1)


class RealisticEmulator(kmock.KubernetesEmulator):
    """KMock plus the metadata a real API server fills in and the discovery shapes kubectl needs.

    Set `keep_request_log = False` to keep only the requests in flight: KMock matches each new
    request against its whole log, which makes thousands of requests (benchmarks) quadratic.
    """

    keep_request_log: bool = True

    def _KubernetesEmulator__get_objs(self, request: Any, strict: bool) -> list[Any]:
        # One object by name: a dict lookup instead of KMock's scan over every stored object.
        if strict and request.name is not None and request.resource is not None:
            try:
                return [self.objects[request.resource, request.namespace, request.name]]
            except KeyError:
                return []
        return super()._KubernetesEmulator__get_objs(request, strict)  # type: ignore[misc]

    async def _handle(self, request: Any) -> Any:
        if self.keep_request_log:
            return await self._handle_one(request)
        inflight: set[int] = self.__dict__.setdefault("_inflight", set())
        inflight.add(id(request))
        self._requests[:] = [r for r in self._requests if id(r) in inflight]
        for payload in self._payloads:
            payload._requests.clear()
        try:
            return await self._handle_one(request)
        finally:
            inflight.discard(id(request))

    async def _handle_one(self, request: Any) -> Any:
        if request.resource is not None and isinstance(request.data, dict):
            now = datetime.datetime.now(tz=datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            if request.action == kmock.action.CREATE:
                meta = request.data.setdefault("metadata", {})
                if not meta.get("name") and meta.get("generateName"):
                    meta["name"] = meta["generateName"] + secrets.token_hex(3)
                if request.namespace:
                    meta.setdefault("namespace", request.namespace)
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", now)
                meta.setdefault("generation", 1)
                meta["resourceVersion"] = str(next(_resource_versions))
            elif request.action == kmock.action.UPDATE:
                meta = request.data.setdefault("metadata", {})
                meta["resourceVersion"] = str(next(_resource_versions))
                # A spec change bumps generation, as the API server does (status patches do not).
                if "spec" in request.data and request.subresource is None and request.name is not None:
                    current = self._current(request.resource, request.namespace, request.name)
                    if current is not None:
                        meta["generation"] = int(current.get("metadata", {}).get("generation", 1)) + 1
        return await super()._handle(request)

    def _current(self, resource: Any, namespace: str | None, name: str) -> dict[str, Any] | None:
        try:
            obj = self.objects[resource, namespace, name]
        except KeyError:
            return None
        return None if obj.deleted else dict(obj.raw)

    async def _serve_version(self, request: Any) -> Any:
        data = await super()._serve_version(request)
        # kubectl needs the core group's groupVersion to read "v1", not "/v1".
        data["groupVersion"] = data["groupVersion"].lstrip("/")
        for res in data["resources"]:
            if "/" in res["name"]:
                # Otherwise kubectl says the short name `dj` "could also match .../status".
                res["shortNames"] = []
        return data

    async def _serve_fetch(self, request: Any) -> Any:
        data = await super()._serve_fetch(request)
        columns = self._printer_columns(request)
        return _table(columns, [data]) if columns is not None else data

    async def _serve_list(self, request: Any) -> Any:
        data = await super()._serve_list(request)
        columns = self._printer_columns(request)
        if columns is not None:
            return _table(columns, data["items"])
        res = request.resource
        try:
            kind = self.resources[res].kind or res.plural.capitalize()
        except KeyError:
            kind = res.plural.capitalize()
        # kubectl refuses lists without kind/apiVersion.
        data["apiVersion"] = f"{res.group}/{res.version}" if res.group else res.version
        data["kind"] = f"{kind}List"
        return data

    def _printer_columns(self, request: Any) -> list[dict[str, Any]] | None:
        """Return the CRD's printer columns when the client asked for a Table (kubectl does), else None."""
        if "as=Table" not in request.headers.get("Accept", ""):
            return None
        columns: dict[str, list[dict[str, Any]]] = getattr(self, "printer_columns", {})
        res = request.resource
        return columns.get(f"{res.group}/{res.version}/{res.plural}")


def _table(columns: list[dict[str, Any]], objects: list[dict[str, Any]]) -> dict[str, Any]:
    """Render objects as a meta.k8s.io/v1 Table, as the API server does for a CRD's printer columns."""
    definitions = [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}]
    definitions += [
        {"name": c["name"], "type": c["type"], "format": "", "description": c.get("description", ""),
         "priority": c.get("priority", 0)}
        for c in columns
    ]  # fmt: skip
    rows = []
    for obj in objects:
        cells: list[Any] = [obj["metadata"]["name"]]
        for c in columns:
            value = _json_path(obj, c["jsonPath"])
            if c["type"] == "date" and isinstance(value, str):
                value = _age(value)
            cells.append(value)
        rows.append({
            "cells": cells,
            "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]},
        })  # fmt: skip
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "1"},
            "columnDefinitions": definitions, "rows": rows}  # fmt: skip


def _json_path(obj: Any, path: str) -> Any:
    """Evaluate a dotted printer-column path such as `.status.phase` (the form our CRD uses)."""
    for part in path.strip(".").split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _age(timestamp: str) -> str:
    then = datetime.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    seconds = int((datetime.datetime.now(tz=datetime.timezone.utc) - then).total_seconds())
    return f"{seconds}s" if seconds < 120 else f"{seconds // 60}m"


def register_crd(emulator: kmock.KubernetesEmulator, crd: dict[str, Any]) -> None:
    """Serve a CRD's resource as the API server would once it is installed: discovery, status, printer columns."""
    spec = crd["spec"]
    names = spec["names"]
    for version in spec["versions"]:
        key = f"{spec['group']}/{version['name']}/{names['plural']}"
        emulator.resources[key] = kmock.ResourceInfo(
            kind=names["kind"],
            singular=names["singular"],
            namespaced=spec["scope"] == "Namespaced",
            verbs={"get", "list", "watch", "create", "patch", "delete"},
            shortnames=set(names.get("shortNames", [])),
            categories=set(names.get("categories", [])),
            subresources=set(version.get("subresources", {})),
        )
        columns = getattr(emulator, "printer_columns", {})
        columns[key] = list(version.get("additionalPrinterColumns", []))
        emulator.printer_columns = columns  # type: ignore[attr-defined]


def register_resources(emulator: kmock.KubernetesEmulator) -> None:
    """Declare the bundled built-in resources and install the DebugJob and DebugPolicy CRDs generated from the models."""
    from trainguard.api import crd

    emulator.resources.load_bundled()
    register_crd(emulator, crd.build_crd())
    register_crd(emulator, crd.build_policy_crd())


def write_kubeconfig(path: Path, *, server_url: str, namespace: str = "default") -> Path:
    """Write a kubeconfig for a plain-HTTP test server with a dummy token and return its path."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kmock", "cluster": {"server": server_url.rstrip("/")}}],
        "users": [{"name": "kmock", "user": {"token": "test-token"}}],
        "contexts": [
            {"name": "kmock", "context": {"cluster": "kmock", "user": "kmock", "namespace": namespace}}
        ],
        "current-context": "kmock",
    }
    path.write_text(json.dumps(config))
    return path


@dataclasses.dataclass
class KubeEnv:
    """A running emulator and the kubeconfig that reaches it."""

    emulator: RealisticEmulator
    url: str
    kubeconfig: Path
    kubectl_cache_dir: Path

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """Return the stored object as a plain dict, or None when absent or deleted."""
        return self.emulator._current(_resource_ref(resource), namespace, name)

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Return every live object of a resource (in one namespace, or all)."""
        ref = _resource_ref(resource)
        out = []
        for (res, ns, _name), obj in self.emulator.objects.items():
            if res == ref and not obj.deleted and (namespace is None or ns == namespace):
                out.append(dict(obj.raw))
        return out

    def requests(self, method: str, path_contains: str = "") -> list[Any]:
        """Return the requests served so far with this HTTP method whose URL contains `path_contains`."""
        return [
            r for r in self.emulator._requests
            if str(getattr(r.method, "value", r.method)).upper() == method.upper() and path_contains in str(r.url)
        ]  # fmt: skip

    async def create(self, resource: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST an object as a client would; return what the server stored."""
        async with self.emulator.post(
            _collection_path(resource, body["metadata"]["namespace"]), json=body
        ) as resp:
            data: dict[str, Any] = await resp.json()
            if resp.status >= 400:
                raise AssertionError(f"create {resource} failed with HTTP {resp.status}: {data}")
            return data

    async def patch(
        self,
        resource: str,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Send a JSON merge patch (to the main resource or a subresource such as `status`)."""
        path = f"{_collection_path(resource, namespace)}/{name}" + (f"/{subresource}" if subresource else "")
        headers = {"Content-Type": "application/merge-patch+json"}
        async with self.emulator.patch(path, data=json.dumps(body), headers=headers) as resp:
            data: dict[str, Any] = await resp.json()
            if resp.status >= 400:
                raise AssertionError(
                    f"patch {resource} {namespace}/{name} failed with HTTP {resp.status}: {data}"
                )
            return data

    async def delete(self, resource: str, namespace: str, name: str) -> None:
        """DELETE an object as a client would."""
        async with self.emulator.delete(f"{_collection_path(resource, namespace)}/{name}") as resp:
            if resp.status >= 400:
                raise AssertionError(f"delete {resource} {namespace}/{name} failed with HTTP {resp.status}")

    async def kubectl(self, *args: str, check: bool = True) -> str:
        """Run kubectl against the emulator without blocking its event loop; return stdout."""
        return await kubectl(*args, kubeconfig=self.kubeconfig, cache_dir=self.kubectl_cache_dir, check=check)


def _resource_ref(resource: str) -> Any:
    """Turn `group/version/plural` or `version/plural` into KMock's resource key."""
    return kmock.resource(resource)


def _collection_path(resource: str, namespace: str) -> str:
    parts = resource.split("/")
    if len(parts) == 2:
        return f"/api/{parts[0]}/namespaces/{namespace}/{parts[1]}"
    group, version, plural = parts
    return f"/apis/{group}/{version}/namespaces/{namespace}/{plural}"


async def terminate(proc: asyncio.subprocess.Process, *, grace_seconds: float = 30) -> None:
    """SIGTERM a process (an operator, a sidecar) and wait for it; SIGKILL it after `grace_seconds`."""
    proc.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(proc.wait(), grace_seconds)
    except TimeoutError:
        proc.kill()
        await proc.wait()


@contextlib.asynccontextmanager
async def operator_process(
    kubeconfig: Path, log_path: Path, *args: str
) -> AsyncIterator[asyncio.subprocess.Process]:
    """Run `trainguard operator -A ARGS` against `kubeconfig`, logging to `log_path`, until the block ends.

    Yields once kopf's liveness endpoint answers; afterwards the process is stopped with SIGTERM and
    must exit 0 (the end of its log is in the error otherwise).
    """
    liveness = free_port()
    with log_path.open("w") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "trainguard", "operator", "-A", "--metrics-port=0", "--metrics-address=127.0.0.1",
            f"--liveness=http://127.0.0.1:{liveness}/healthz", *args,
            env={**os.environ, "KUBECONFIG": str(kubeconfig)}, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            await wait_http(f"http://127.0.0.1:{liveness}/healthz", alive=lambda: proc.returncode is None)
            yield proc
        finally:
            await terminate(proc)
    if proc.returncode != 0:
        raise AssertionError(f"the operator exited {proc.returncode}:\n{log_path.read_text()[-3000:]}")


async def eventually(
    predicate: Callable[[], Any],
    *,
    timeout_seconds: float = 15.0,
    interval_seconds: float = 0.05,
    what: str = "",
) -> Any:
    """Await until `predicate()` returns something truthy and return it; fail after the timeout."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_seconds} s waiting for {what or predicate!r}")
        await asyncio.sleep(interval_seconds)


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def http_get(url: str) -> str | None:
    """Return the body of a 2xx answer, or None when the server is not (yet) answering."""
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return str(response.read().decode())
    except OSError:
        return None


async def wait_http(
    url: str, *, timeout_seconds: float = 60, alive: Callable[[], bool] = lambda: True
) -> str:
    """Await until `url` answers 2xx (polling off the event loop) and return the body."""
    deadline = time.monotonic() + timeout_seconds
    while (text := await asyncio.to_thread(http_get, url)) is None:
        if not alive() or time.monotonic() > deadline:
            raise AssertionError(f"{url} did not answer within {timeout_seconds} s")
        await asyncio.sleep(0.05)
    return text


async def kubectl(*args: str, kubeconfig: Path, cache_dir: Path, check: bool = True) -> str:
    """Run `kubectl` as a subprocess (awaited, so a KMock on this loop keeps serving); return stdout."""
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed (dev/setup.sh installs it)")
    proc = await asyncio.create_subprocess_exec(
        binary,
        f"--kubeconfig={kubeconfig}",
        f"--cache-dir={cache_dir}",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}: {err.decode()}")
    return out.decode()


@pytest_asyncio.fixture
async def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[KubeEnv]:
    """An emulated API server on 127.0.0.1 (free port) with KUBECONFIG set; stopped on teardown."""
    async with RealisticEmulator() as emulator, kmock.Server(emulator, host="127.0.0.1"):
        register_resources(emulator)
        url = str(emulator.url).rstrip("/")
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server_url=url)
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        cache = tmp_path / "kubectl-cache"
        cache.mkdir()
        yield KubeEnv(emulator=emulator, url=url, kubeconfig=kubeconfig, kubectl_cache_dir=cache)


def debugjob_manifest(
    name: str = "dj1",
    *,
    namespace: str = "default",
    workers: int = 1,
    rules: list[dict[str, Any]] | None = None,
    capture_uri: str = "s3://trainguard-runs/debug",
    **spec: Any,
) -> dict[str, Any]:
    """Return a small valid DebugJob manifest; extra keyword arguments are merged into `spec`.

    Pass a `file://` `capture_uri` under the test's tmp_path when the operator may write END markers.
    """
    body: dict[str, Any] = {
        "apiVersion": f"{DEBUGJOB_GROUP}/{DEBUGJOB_VERSION}",
        "kind": "DebugJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "workers": workers,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "trainer", "image": "python:3.11-slim", "command": ["python", "train.py"]}
                    ]
                }
            },
            "capture": {"uri": capture_uri},
            "rules": rules if rules is not None else [{"type": "exploding_tensor", "action": "stop"}],
        },
    }
    body["spec"].update(spec)
    return body
