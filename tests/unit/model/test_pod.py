from opsche_daemon.model.pod import Pod
from tests.factories import container


def test_requests_combine_containers_init_containers_sidecars_and_overhead() -> None:
    pod = Pod.from_api(
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {
                "containers": [
                    container(requests={"cpu": "500m", "memory": "1Gi"}),
                    container(requests={"cpu": "250m", "memory": "1Gi"}),
                ],
                "initContainers": [
                    # A sidecar: adds to the total.
                    container(requests={"cpu": "100m"}, restart_policy="Always"),
                    # Runs alone (plus earlier sidecars) before the rest.
                    container(requests={"cpu": "2", "memory": "512Mi"}),
                ],
                "overhead": {"cpu": "10m"},
            },
        }
    )
    # cpu: max(500+250+100, 2000+100) + 10 ; memory: max(2Gi, 512Mi) + 0
    assert pod.requests.milli_cpu == 2110
    assert pod.requests.memory == 2 * 2**30


def test_non_zero_requests_default_missing_cpu_and_memory_for_scoring_only() -> None:
    pod = Pod.from_api(
        {
            "metadata": {"name": "p"},
            "spec": {"containers": [container(), container(requests={"cpu": "0"})]},
        }
    )
    assert pod.requests.milli_cpu == 0
    # Missing cpu counts 100m; an explicit 0 stays 0 (upstream NonMissingContainerRequests).
    assert pod.non_zero_requests.milli_cpu == 100
    assert pod.non_zero_requests.memory == 2 * 200 * 2**20


def test_pod_level_requests_replace_the_container_sum() -> None:
    pod = Pod.from_api(
        {
            "metadata": {"name": "p"},
            "spec": {
                "resources": {"requests": {"cpu": "3"}},
                "containers": [container(requests={"cpu": "1", "memory": "1Gi"})],
            },
        }
    )
    assert pod.requests.milli_cpu == 3000
    assert pod.requests.memory == 2**30


def test_volumes_and_claims_opsche_cannot_schedule_are_flagged() -> None:
    pod = Pod.from_api(
        {
            "metadata": {"name": "p"},
            "spec": {
                "containers": [container()],
                "volumes": [
                    {"name": "d", "persistentVolumeClaim": {"claimName": "c"}},
                    {"name": "e", "emptyDir": {}},
                ],
                "resourceClaims": [{"name": "gpu"}],
            },
        }
    )
    assert pod.unsupported_volumes == ("persistentVolumeClaim", "resourceClaims")


def test_controller_owner_and_protection_markers() -> None:
    pod = Pod.from_api(
        {
            "metadata": {
                "name": "p",
                "ownerReferences": [
                    {"kind": "ReplicaSet", "name": "rs", "uid": "1", "controller": False},
                    {"kind": "DaemonSet", "name": "ds", "uid": "2", "controller": True},
                ],
                "annotations": {"kubernetes.io/config.mirror": "x"},
            },
            "spec": {"containers": [container()]},
        }
    )
    assert pod.owner is not None and pod.owner.kind == "DaemonSet"
    assert pod.is_daemonset and pod.is_mirror


def test_the_unschedulable_condition_message_is_read_and_only_that_condition() -> None:
    def with_conditions(*conditions: dict[str, str]) -> Pod:
        return Pod.from_api({"metadata": {"name": "p"}, "status": {"conditions": list(conditions)}})

    failed = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
    assert with_conditions(failed).unschedulable_message == "m"
    assert with_conditions().unschedulable_message is None
    gated = {**failed, "reason": "SchedulingGated"}
    assert with_conditions(gated).unschedulable_message is None
    assert with_conditions({**failed, "status": "True"}).unschedulable_message is None
