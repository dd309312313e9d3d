"""The Helm chart: lint, template tests, schemas, and install/upgrade/uninstall on the real cluster.

Tools are the project's own builds (helm, helm-unittest; ``make tools``). On the local cluster
the chart's pods run on KWOK nodes, which mark them Running and Ready without starting the
container: these tests prove what the API server accepts and what helm does with it; the
image's entrypoint is tested on its own, and the chart's RBAC with a real ``opsche run`` in
``test_chart_rbac.py``.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client

from opsche_daemon.localcluster.components import Layout
from opsche_daemon.localcluster.tools import load_tool_versions
from tests.integration.chart import CHART, helm, of_kind, render, run, tool
from tests.integration.waiting import wait_for

KUBERNETES = "1.36.0"  # the schemas kubernetes-validate checks against (the local cluster's minor)


def test_lint_is_clean_in_strict_mode() -> None:
    done = helm("lint", "--strict", CHART)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


def test_the_template_suites_pass() -> None:
    done = run([tool("helm-unittest"), "--color=false", CHART])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Test Suites: 5 passed, 5 total" in done.stdout, done.stdout


@pytest.mark.parametrize(
    "sets",
    [
        (),
        ("replicaCount=1", "leaderElection.enabled=false"),
        ("metrics.serviceMonitor.enabled=true",),
        ("serviceAccount.create=false", "serviceAccount.name=existing", "rbac.create=false"),
    ],
    ids=["defaults", "single", "servicemonitor", "bring-your-own-account"],
)
def test_every_rendering_is_valid_against_the_kubernetes_schemas(
    tmp_path: Path, sets: tuple[str, ...]
) -> None:
    objects = render(*sets)
    # kubernetes-validate bundles the upstream schemas (offline); a CRD's kind is not among them.
    core = [o for o in objects if o["kind"] != "ServiceMonitor"]
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all(core))
    validate = Path(sys.executable).with_name("kubernetes-validate")
    done = run([validate, "--strict", "--kubernetes-version", KUBERNETES, manifest])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("passed for resource") == len(core), done.stdout


def test_a_config_change_rolls_the_pods_and_nothing_else_does() -> None:
    def checksum(*sets: str) -> str:
        [deployment] = of_kind(render(*sets), "Deployment")
        value: str = deployment["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
        return value

    default = checksum()
    assert checksum("config.optimiser.trigger=periodic") != default
    assert checksum("leaderElection.leaseDurationSeconds=30") != default
    assert checksum("image.tag=other") == default
    [config_map] = of_kind(render(), "ConfigMap")
    config = config_map["data"]["config.yaml"]
    assert default == hashlib.sha256(config.rstrip("\n").encode()).hexdigest()  # of the file


def test_the_rendered_config_passes_opsche_config_check(tmp_path: Path) -> None:
    [config_map] = of_kind(render("config.optimiser.trigger=periodic"), "ConfigMap")
    path = tmp_path / "config.yaml"
    path.write_text(config_map["data"]["config.yaml"])
    done = run([Path(sys.executable).with_name("opsche"), "config", "check", path])
    assert done.returncode == 0, done.stderr
    assert "trigger periodic" in done.stdout


def test_bad_values_are_refused_with_a_message_before_anything_is_applied() -> None:
    for sets, message in (
        (
            ["replicaCount=3", "leaderElection.enabled=false"],
            "replicaCount is 3 but leaderElection.enabled is false",
        ),
        (["replicaCount=0"], "at '/replicaCount': minimum: got 0, want 1"),
        (["schedulerName=Not_A_Name"], "at '/schedulerName'"),
    ):
        argv: list[str | Path] = ["template", "opsche", CHART]
        for item in sets:
            argv += ["--set", item]
        done = helm(*argv)
        assert done.returncode != 0
        assert message in done.stderr, done.stderr


def test_the_api_server_accepts_the_rendered_manifests(
    local_cluster: Layout, tmp_path: Path, namespace: str
) -> None:
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all(render(namespace=namespace)))
    done = run(
        [
            local_cluster.binary("kubectl"), "--kubeconfig", local_cluster.kubeconfig,
            "apply", "--dry-run=server", "--namespace", namespace, "-f", manifest,
        ]
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(server dry run)") == 9, done.stdout


async def test_install_upgrade_and_uninstall(
    local_cluster: Layout, api: client.ApiClient, namespace: str
) -> None:
    kubeconfig = local_cluster.kubeconfig
    apps, rbac = client.AppsV1Api(api), client.RbacAuthorizationV1Api(api)
    release = f"opsche-{namespace[-20:]}".rstrip("-")
    done = helm("install", release, CHART, "-n", namespace, "--wait", "--timeout", "120s",
                kubeconfig=kubeconfig)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "schedulerName: opsche" in done.stdout  # NOTES.txt tells how to opt in
    deployment = await apps.read_namespaced_deployment(release, namespace)
    assert deployment.status.ready_replicas == 2
    before = deployment.spec.template.metadata.annotations["checksum/config"]
    roles = await rbac.list_cluster_role(label_selector=f"app.kubernetes.io/instance={release}")
    assert [r.metadata.name for r in roles.items] == [release]

    done = helm("upgrade", release, CHART, "-n", namespace, "--wait", "--timeout", "120s",
                "--set", "config.optimiser.trigger=periodic", kubeconfig=kubeconfig)  # fmt: skip
    assert done.returncode == 0, done.stderr
    deployment = await apps.read_namespaced_deployment(release, namespace)
    assert deployment.spec.template.metadata.annotations["checksum/config"] != before
    assert deployment.status.ready_replicas == 2
    assert deployment.status.updated_replicas == 2  # rolled to the new config

    done = helm("uninstall", release, "-n", namespace, "--wait", kubeconfig=kubeconfig)
    assert done.returncode == 0, done.stderr
    await wait_for(
        apps.list_namespaced_deployment, namespace, lambda d: release not in d, what="no Deployment"
    )
    roles = await rbac.list_cluster_role(label_selector=f"app.kubernetes.io/instance={release}")
    assert roles.items == []  # cluster-scoped objects go too


def test_helm_is_the_pinned_release() -> None:
    done = subprocess.run(
        [str(tool("helm")), "version", "--short"], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == load_tool_versions().helm, done.stdout


def test_the_install_guide_has_the_charts_values_table() -> None:
    done = run([sys.executable, CHART.parent / "values_table.py"])
    assert done.returncode == 0, done.stderr
    guide = (CHART.parents[1] / "docs" / "install.md").read_text()
    start, end = "<!-- values-table:start -->\n", "<!-- values-table:end -->"
    assert guide[guide.index(start) + len(start) : guide.index(end)] == done.stdout
