"""A small synchronous JSON client for the few calls ``opsche cluster`` makes.

The CLI creates a handful of Node objects and polls readiness; a synchronous client over
``http.client`` keeps that path free of event-loop plumbing and gives plain error messages. The
daemon talks to the API server through kubernetes-asyncio in the ``kube`` package instead.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from opsche_daemon.localcluster.pki import PKI

__all__ = ["ApiError", "LocalApi", "http_ok", "write_kubeconfig"]


class ApiError(RuntimeError):
    """A request failed; ``status`` is the HTTP status (0 when no answer came)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


def _client_context(pki: PKI) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.cert), str(pki.key))
    return context


def http_ok(url: str, timeout: float = 2.0, pki: PKI | None = None) -> bool:
    """True when ``url`` answers 200. HTTPS health endpoints are probed without verification.

    kube-controller-manager and kube-scheduler serve ``/healthz`` with self-signed certificates
    they generate themselves; the probe only asks whether the process is serving, on 127.0.0.1.
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        if pki is not None:
            context = _client_context(pki)
        else:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", parts.path or "/")
        response = conn.getresponse()
        response.read()
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()
    return response.status == 200


class LocalApi:
    """JSON requests to the local API server authenticated with the admin client certificate."""

    def __init__(self, server: str, pki: PKI, timeout: float = 10.0) -> None:
        parts = urlsplit(server)
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port or 443
        self._context = _client_context(pki)
        self._timeout = timeout

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        """Send one request; return the decoded JSON reply or raise ``ApiError``."""
        conn = http.client.HTTPSConnection(
            self._host, self._port, timeout=self._timeout, context=self._context
        )
        headers = {"Accept": "application/json"}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = content_type
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise ApiError(f"{method} {path}: {exc}") from exc
        finally:
            conn.close()
        decoded = json.loads(data) if data else None
        if response.status >= 300:
            message = (
                decoded.get("message")
                if isinstance(decoded, dict)
                else data[:200].decode(errors="replace")
            )
            raise ApiError(f"{method} {path}: HTTP {response.status}: {message}", response.status)
        return decoded

    def request_merge_patch(self, path: str, body: Any) -> Any:
        """PATCH with a JSON merge patch."""
        return self.request("PATCH", path, body, "application/merge-patch+json")

    def get(self, path: str) -> dict[str, Any]:
        """GET a JSON object."""
        return cast(dict[str, Any], self.request("GET", path))

    def exists(self, path: str) -> bool:
        """True when GET answers 2xx, False on 404."""
        try:
            self.request("GET", path)
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def write_kubeconfig(path: Path, server: str, pki: PKI, name: str = "opsche-local") -> None:
    """An admin kubeconfig with the certificates embedded, so it can be copied anywhere."""

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": b64(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": f"{name}-admin",
                "user": {
                    "client-certificate-data": b64(pki.cert),
                    "client-key-data": b64(pki.key),
                },
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
        "current-context": name,
        "preferences": {},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(config, indent=2) + "\n")
    tmp.chmod(0o600)
    tmp.replace(path)
