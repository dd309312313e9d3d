"""The API client keeps idle connections long enough that a bind every few seconds reuses one."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from opsche_daemon.kube.client import KEEPALIVE_S, api_client

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


async def test_idle_connections_outlive_aiohttps_default_but_not_the_apiservers(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    api = await api_client(path, pool_size=8)
    async with api:
        connector = api.rest_client.pool_manager.connector
        assert isinstance(connector, aiohttp.TCPConnector)
        assert connector.limit == 8
        # aiohttp's default is 15 s; kube-apiserver closes idle connections after 90 s.
        assert connector._keepalive_timeout == KEEPALIVE_S
        assert 15 < KEEPALIVE_S < 90
