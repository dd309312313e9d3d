"""Command lines, config files and health endpoints of the five control-plane components.

Pure functions of a ``Layout`` (where files live, which ports are used), so the exact flags every
component runs with can be read in one place and unit-tested. Everything binds to 127.0.0.1.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from opsche_daemon.localcluster.pki import PKI

__all__ = [
    "AUDIT_POLICY",
    "COMPONENTS",
    "PORT_NAMES",
    "SERVICE_CLUSTER_IP_RANGE",
    "Layout",
    "argv_for",
    "health_url",
    "scheduler_config",
]

# Start order matters: etcd before the API server, the API server before its clients.
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kwok", "kube-scheduler")
PORT_NAMES = (
    "etcd",
    "etcd-peer",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
)
LOOPBACK = "127.0.0.1"
# Addresses handed to Services as data; no proxy runs, so nothing ever sends traffic to them.
SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/16"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


@dataclass(frozen=True)
class Layout:
    """Where one local cluster keeps its files, which binaries it runs and on which ports."""

    state_dir: Path
    bin_dir: Path
    stage_files: tuple[Path, ...]
    ports: dict[str, int]

    @property
    def pki(self) -> PKI:
        """The cluster's certificates."""
        return PKI(self.state_dir / "pki")

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig: a stable path users export as KUBECONFIG."""
        return self.state_dir / "kubeconfig"

    @property
    def etcd_data(self) -> Path:
        """Etcd's data directory."""
        return self.state_dir / "etcd"

    @property
    def log_dir(self) -> Path:
        """One log file per component."""
        return self.state_dir / "logs"

    @property
    def scheduler_config_file(self) -> Path:
        """The KubeSchedulerConfiguration kube-scheduler runs with."""
        return self.state_dir / "kube-scheduler.yaml"

    @property
    def audit_policy_file(self) -> Path:
        """The API server's audit policy: what service accounts do, at Metadata level."""
        return self.state_dir / "audit-policy.yaml"

    @property
    def audit_log(self) -> Path:
        """One JSON line per request a service account made (who, verb, resource, code).

        Tests read it to prove RBAC rules from what a component actually asked for.
        """
        return self.log_dir / "audit.log"

    @property
    def server(self) -> str:
        """The API server URL."""
        return f"https://{LOOPBACK}:{self.ports['kube-apiserver']}"

    def binary(self, name: str) -> str:
        """Absolute path of a control-plane binary."""
        return str(self.bin_dir / name)


def argv_for(name: str, layout: Layout) -> list[str]:
    """The command line of one component."""
    p = layout.ports
    pki = layout.pki
    kubeconfig = str(layout.kubeconfig)
    if name == "etcd":
        peer = f"http://{LOOPBACK}:{p['etcd-peer']}"
        client = f"http://{LOOPBACK}:{p['etcd']}"
        return [
            layout.binary("etcd"),
            "--name=opsche",
            f"--data-dir={layout.etcd_data}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=opsche={peer}",
            "--initial-cluster-state=new",
            # A throw-away test cluster: durability is not worth an fsync per write.
            "--unsafe-no-fsync=true",
            "--quota-backend-bytes=8589934592",
            "--log-level=warn",
        ]
    if name == "kube-apiserver":
        return [
            layout.binary("kube-apiserver"),
            f"--etcd-servers=http://{LOOPBACK}:{p['etcd']}",
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={p['kube-apiserver']}",
            f"--tls-cert-file={pki.cert}",
            f"--tls-private-key-file={pki.key}",
            f"--client-ca-file={pki.ca_cert}",
            f"--service-account-key-file={pki.key}",
            f"--service-account-signing-key-file={pki.key}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            "--authorization-mode=Node,RBAC",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # There is one API server on loopback; reconciling its endpoint only logs complaints.
            "--endpoint-reconciler-type=none",
            "--allow-privileged=true",
            # Benchmarks must measure the schedulers, not the API server's fairness queues.
            "--max-requests-inflight=0",
            "--max-mutating-requests-inflight=0",
            "--enable-priority-and-fairness=false",
            f"--audit-policy-file={layout.audit_policy_file}",
            f"--audit-log-path={layout.audit_log}",
            "--audit-log-maxsize=100",
            "--audit-log-maxbackup=1",
        ]
    if name == "kube-controller-manager":
        return [
            layout.binary("kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={p['kube-controller-manager']}",
            f"--root-ca-file={pki.ca_cert}",
            "--leader-elect=false",
            # ReplicaSets in benchmarks create thousands of pods; the default 20 QPS would make the
            # controller, not the scheduler, the bottleneck for both schedulers alike.
            "--kube-api-qps=1000",
            "--kube-api-burst=1000",
        ]
    if name == "kube-scheduler":
        return [
            layout.binary("kube-scheduler"),
            f"--config={layout.scheduler_config_file}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={LOOPBACK}",
            f"--secure-port={p['kube-scheduler']}",
        ]
    if name == "kwok":
        argv = [
            layout.binary("kwok"),
            f"--kubeconfig={kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
            f"--server-address={LOOPBACK}:{p['kwok']}",
            "--node-lease-duration-seconds=40",
        ]
        argv += [f"--config={stage}" for stage in layout.stage_files]
        return argv
    raise ValueError(f"unknown component {name!r}")


def health_url(name: str, layout: Layout) -> str:
    """The endpoint that answers 200 once the component is ready."""
    p = layout.ports
    if name == "etcd":
        return f"http://{LOOPBACK}:{p['etcd']}/health"
    if name == "kube-apiserver":
        return f"{layout.server}/readyz"
    if name in ("kube-controller-manager", "kube-scheduler"):
        return f"https://{LOOPBACK}:{p[name]}/healthz"
    if name == "kwok":
        return f"http://{LOOPBACK}:{p['kwok']}/healthz"
    raise ValueError(f"unknown component {name!r}")


# Only service accounts are audited: the cluster's own components use the admin certificate, so
# the log holds what a workload (opsche run with its chart's rights, in the RBAC test) asked for.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
"""


def scheduler_config(layout: Layout) -> str:
    """kube-scheduler's KubeSchedulerConfiguration: upstream defaults, no leader election.

    The client QPS/burst are left at kube-scheduler's defaults (50/100) on purpose: the benchmark
    compares opsche with kube-scheduler *at its default client settings*.
    """
    return (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "clientConnection:\n"
        f"  kubeconfig: {layout.kubeconfig}\n"
        "leaderElection:\n"
        "  leaderElect: false\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
    )
