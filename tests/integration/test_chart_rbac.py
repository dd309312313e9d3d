"""The chart's RBAC, proved on the real API server rather than assumed.

Two ``opsche run`` replicas run locally with the credentials of the chart's ServiceAccount (a
token from the TokenRequest API) and the chart's rendered config, on a cluster of their own
(no kube-scheduler, so every placement is theirs). They elect a leader, schedule, post events,
set a pod's PodScheduled condition and enforce a plan that evicts a running pod (the paper's
Figure 1). The API server's audit log (which records what service accounts ask for) then shows
that no request was forbidden, and that every verb of every rule of the chart's ClusterRole and
Role was used: a rule nothing uses is a right opsche does not need.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from opsche_daemon.kube.client import api_client
from opsche_daemon.localcluster.cluster import ClusterSpec, LocalCluster
from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.daemon_process import DaemonProcess, start_opsche
from opsche_daemon.localcluster.versions import load_versions
from tests.integration.chart import of_kind, render, run
from tests.integration.plans import bare_pod, create_replicaset
from tests.integration.waiting import running, wait_for, wait_for_pods

RELEASE_NAMESPACE = "opsche-system"
WORKLOADS = "rbac-workloads"


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Layout]:
    root = tmp_path_factory.mktemp("rbac")
    local = LocalCluster(
        root / "cluster", load_versions(), out=lambda line: print(line, flush=True)
    )
    try:
        yield local.up(ClusterSpec(nodes=2, node_cpu="4", default_scheduler=False))
    finally:
        local.down()


@pytest.fixture(scope="module")
async def admin(layout: Layout) -> AsyncIterator[client.ApiClient]:
    async with await api_client(layout.kubeconfig) as api:
        yield api


def service_account_kubeconfig(layout: Layout, token: str, path: Path) -> Path:
    """A kubeconfig that authenticates with the token alone (no client certificate)."""
    ca = layout.pki.ca_cert.read_text()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": layout.server,
                    "certificate-authority-data": base64.b64encode(ca.encode()).decode(),
                },
            }
        ],
        "users": [{"name": "opsche", "user": {"token": token}}],
        "contexts": [{"name": "opsche", "context": {"cluster": "local", "user": "opsche"}}],
        "current-context": "opsche",
    }
    path.write_text(yaml.safe_dump(config))
    path.chmod(0o600)
    return path


def audited(layout: Layout, username: str) -> list[dict[str, Any]]:
    """Every audited request of ``username`` (one per request and stage)."""
    events = []
    for line in layout.audit_log.read_text().splitlines():
        event = json.loads(line)
        if event.get("user", {}).get("username") == username:
            events.append(event)
    return events


def rule_uses(rule: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, int]:
    """How many audited requests each (resource, verb) of ``rule`` answered."""
    counts: dict[str, int] = {}
    for resource in rule["resources"]:
        name, _, sub = resource.partition("/")
        for verb in rule["verbs"]:
            counts[f"{verb} {resource}"] = sum(
                1
                for e in events
                if e["verb"] == verb
                and e.get("objectRef", {}).get("resource") == name
                and e.get("objectRef", {}).get("subresource", "") == sub
                and e.get("objectRef", {}).get("apiGroup", "") in rule["apiGroups"]
                and (
                    not rule.get("resourceNames")
                    or e.get("objectRef", {}).get("name") in rule["resourceNames"]
                )
            )
    return counts


async def test_the_charts_rights_are_enough_and_each_one_is_used(
    layout: Layout, admin: client.ApiClient, tmp_path: Path
) -> None:
    core = client.CoreV1Api(admin)
    for name in (RELEASE_NAMESPACE, WORKLOADS):
        await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    objects = render(namespace=RELEASE_NAMESPACE)
    rights = [
        o for o in objects if o["kind"] in {
            "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"
        }
    ]  # fmt: skip
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(yaml.safe_dump_all(rights))
    done = run(
        [layout.binary("kubectl"), "--kubeconfig", layout.kubeconfig, "apply", "-f", manifest]
    )
    assert done.returncode == 0, done.stderr
    [account] = of_kind(objects, "ServiceAccount")
    sa = account["metadata"]["name"]
    token = await core.create_namespaced_service_account_token(
        sa, RELEASE_NAMESPACE, client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        )
    )  # fmt: skip
    kubeconfig = service_account_kubeconfig(layout, token.status.token, tmp_path / "sa.kubeconfig")
    [config_map] = of_kind(objects, "ConfigMap")
    config = tmp_path / "config.yaml"
    config.write_text(config_map["data"]["config.yaml"])

    replicas: list[DaemonProcess] = []
    try:
        for name in ("a", "b"):
            replicas.append(
                start_opsche(kubeconfig, tmp_path / f"{name}.log", ["--config", str(config)])
            )
        # Figure 1: two 2-cpu replicas, one per node, then a 4-cpu pod no node can take as is.
        await create_replicaset(admin, WORKLOADS, "small", 2, "2")
        before = await wait_for_pods(
            admin, WORKLOADS, lambda p: len(p) == 2 and all(map(running, p.values())),
            what="two replicas running",
        )  # fmt: skip
        assert len({p.spec.node_name for p in before.values()}) == 2
        await core.create_namespaced_pod(WORKLOADS, bare_pod("big", "4"))
        after = await wait_for_pods(
            admin, WORKLOADS,
            lambda p: "big" in p and running(p["big"]) and sum(map(running, p.values())) == 3,
            within=120, what="the big pod placed by a plan",
        )  # fmt: skip
        assert len(set(before) - set(after)) == 1, "one replica was moved (evicted, replaced)"
        await wait_for(
            core.list_namespaced_event, WORKLOADS,
            lambda evs: {"Scheduled", "FailedScheduling", "OpscheMoved"}
            <= {e.reason for e in evs.values()},
            what="the events opsche posts",
        )  # fmt: skip
        for daemon in replicas:
            assert daemon.process.poll() is None, daemon.log_tail()
    finally:
        codes = [daemon.stop() for daemon in replicas]
    assert codes == [0, 0], [d.log_tail() for d in replicas]

    events = audited(layout, f"system:serviceaccount:{RELEASE_NAMESPACE}:{sa}")
    assert events, "the audit log has the service account's requests"
    forbidden = [
        f"{e['verb']} {e.get('objectRef')}" for e in events
        if e.get("responseStatus", {}).get("code") == 403
    ]  # fmt: skip
    assert forbidden == [], "requests the chart's RBAC refused"
    unused = []
    for role in of_kind(objects, "ClusterRole") + of_kind(objects, "Role"):
        for rule in role["rules"]:
            unused += [use for use, n in rule_uses(rule, events).items() if n == 0]
    assert unused == [], "rights opsche never used"
