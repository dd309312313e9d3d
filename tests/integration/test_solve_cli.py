"""``opsche snapshot`` then ``opsche solve`` on the live local cluster: a dry run that plans
placements for pending pods and changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kubernetes_asyncio import client

from tests.integration.waiting import wait_for_pods

DRY = "opsche-dry-run"  # no scheduler serves this name: its pods stay pending


def opsche(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "opsche_daemon.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_snapshot_and_solve_plan_pending_pods_without_touching_them(
    api: client.ApiClient, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    core = client.CoreV1Api(api)
    for i in range(3):
        await core.create_namespaced_pod(
            namespace,
            client.V1Pod(
                metadata=client.V1ObjectMeta(name=f"wait-{i}"),
                spec=client.V1PodSpec(
                    scheduler_name=DRY,
                    containers=[
                        client.V1Container(
                            name="main",
                            image="registry.k8s.io/pause:3.10",
                            resources=client.V1ResourceRequirements(requests={"cpu": "500m"}),
                        )
                    ],
                ),
            ),
        )
    await wait_for_pods(api, namespace, lambda p: len(p) == 3)
    snapshot = tmp_path / "cluster.json"
    taken = opsche("snapshot", "--kubeconfig", str(kubeconfig), "-o", str(snapshot))
    assert taken.returncode == 0, taken.stderr
    document = json.loads(snapshot.read_text())
    assert {"nodes", "pods", "namespaces", "workloads", "disruptionBudgets"} <= set(document)

    for solver in ("cpsat", "heuristic"):
        solved = opsche("solve", str(snapshot), "--solver", solver, "--format", "json",
                        "--scheduler-name", DRY)  # fmt: skip
        assert solved.returncode == 0, solved.stderr
        plan = json.loads(solved.stdout)
        assert sorted(p["name"] for p in plan["placements"]) == ["wait-0", "wait-1", "wait-2"]
        assert plan["moves"] == [] and plan["evictions"] == []
        assert plan["stats"]["solver"] == solver

    text = opsche("solve", str(snapshot), "--scheduler-name", DRY)
    assert text.returncode == 0 and "PLACE" in text.stdout
    # A dry run: nothing was bound.
    pods = (await core.list_namespaced_pod(namespace)).items
    assert all(p.spec.node_name is None for p in pods)


def test_solve_reports_a_bad_file_plainly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"nodes": "oops", "pods": []}')
    result = opsche("solve", str(bad))
    assert result.returncode == 2  # bad input, as argparse and opsche config check
    assert "'nodes' must be a list of objects" in result.stderr
    assert "Traceback" not in result.stderr
