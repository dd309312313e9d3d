"""Certificates for the local control plane, made with the openssl command-line tool.

One CA signs one certificate that is both the API server's serving certificate (SANs for
localhost, 127.0.0.1 and the in-cluster service names) and the admin client certificate
(``O=system:masters``); its private key doubles as the service-account signing key. That is what
kwokctl's binary runtime does, and it is enough for a single-user cluster on loopback while keeping
RBAC and service-account tokens real.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PKI", "PKIError", "ensure_pki"]

_SANS = (
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
    "IP:127.0.0.1",
)
_DAYS = "3650"


class PKIError(RuntimeError):
    """openssl is missing or failed; the message carries its output."""


@dataclass(frozen=True)
class PKI:
    """Paths of the files the components are started with."""

    directory: Path

    @property
    def ca_cert(self) -> Path:
        """The CA certificate every component trusts."""
        return self.directory / "ca.crt"

    @property
    def ca_key(self) -> Path:
        """The CA key (kept for re-signing; no component reads it)."""
        return self.directory / "ca.key"

    @property
    def cert(self) -> Path:
        """Serving certificate of kube-apiserver and client certificate of every component."""
        return self.directory / "admin.crt"

    @property
    def key(self) -> Path:
        """Key of ``cert``; also the service-account signing key."""
        return self.directory / "admin.key"

    def complete(self) -> bool:
        """True when every file exists (so a re-run of ``up`` keeps the same identity)."""
        return all(p.is_file() for p in (self.ca_cert, self.ca_key, self.cert, self.key))


def _openssl(args: list[str], cwd: Path) -> None:
    if shutil.which("openssl") is None:
        raise PKIError("the openssl command is needed to create the cluster's certificates")
    result = subprocess.run(
        ["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=120
    )
    if result.returncode != 0:
        raise PKIError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def ensure_pki(directory: Path) -> PKI:
    """Create the CA and the admin/serving certificate in ``directory`` unless they exist."""
    pki = PKI(directory)
    if pki.complete():
        return pki
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    _openssl(
        [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", _DAYS,
            "-keyout", pki.ca_key.name, "-out", pki.ca_cert.name,
            "-subj", "/CN=opsche-local-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ],
        directory,
    )  # fmt: skip
    extensions = directory / "admin.ext"
    extensions.write_text(
        "basicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
        f"subjectAltName={','.join(_SANS)}\n"
    )
    _openssl(
        [
            "req", "-newkey", "rsa:2048", "-nodes", "-sha256",
            "-keyout", pki.key.name, "-out", "admin.csr",
            "-subj", "/O=system:masters/CN=kubernetes-admin",
        ],
        directory,
    )  # fmt: skip
    _openssl(
        [
            "x509", "-req", "-in", "admin.csr", "-CA", pki.ca_cert.name,
            "-CAkey", pki.ca_key.name, "-CAcreateserial", "-sha256", "-days", _DAYS,
            "-extfile", extensions.name, "-out", pki.cert.name,
        ],
        directory,
    )  # fmt: skip
    for private in (pki.ca_key, pki.key):
        private.chmod(0o600)
    return pki
