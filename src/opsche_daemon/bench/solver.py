"""``opsche bench solver``: CP-SAT and the heuristic on generated, fragmented clusters.

Each generated cluster is filled to high utilisation with ReplicaSet pods of a few sizes placed
at random (which fragments the free capacity), and given pending pods larger than most free
fragments, so placing them needs moves. All pods share one priority, so nothing may be evicted and
the number of pending pods that can be placed is bounded by a counting bound: the largest k such
that the k smallest pending requests fit in the total free capacity, in every dimension.

For each size both solvers run on the same snapshot with the same time limit; the table shows
wall time (including building the model), pending pods placed against the bound, the gap, moves,
and whether CP-SAT proved every phase optimal.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Owner, Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.snapshot import Snapshot

__all__ = ["SolverRow", "counting_bound", "format_rows", "generate", "run_solver_bench"]

GiB = 2**30
SCHEDULER = "opsche"
DEFAULT_SIZES = (16, 32, 100, 500, 2000)


@dataclass(frozen=True)
class SolverRow:
    """One solver on one generated cluster."""

    nodes: int
    pods: int
    pending: int
    solver: str
    seconds: float
    placed: int
    bound: int
    moves: int
    evictions: int
    status: str

    @property
    def gap(self) -> float:
        """Relative distance of ``placed`` from the bound."""
        return 0.0 if self.bound == 0 else (self.bound - self.placed) / self.bound


def generate(
    nodes: int, seed: int = 1, utilisation: float = 0.9, pod_scale: float = 1.0
) -> Snapshot:
    """A fragmented cluster, 3 % as many pending pods as running ones.

    With ``pod_scale`` 1 nodes hold about 26 running pods each; larger scales make every pod
    that much bigger (so fewer per node).
    """
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, not cryptography
    shapes = [(8000, 32 * GiB), (16000, 64 * GiB), (16000, 32 * GiB)]
    node_objs = []
    for i in range(nodes):
        cpu, memory = shapes[i % len(shapes)]
        node_objs.append(
            Node(
                f"node-{i:04d}",
                labels={"kubernetes.io/hostname": f"node-{i:04d}"},
                allocatable=Resources(cpu, memory, 0, 110),
            )
        )
    sizes = [
        (int(cpu * pod_scale), int(memory * pod_scale))
        for cpu, memory in ((100, GiB // 4), (250, GiB // 2), (500, GiB), (1000, 2 * GiB))
    ]
    owners = [Owner("ReplicaSet", f"rs-{k}", f"uid-rs-{k}") for k in range(12)]
    running: list[list[Pod]] = [[] for _ in node_objs]
    used = [[0, 0] for _ in node_objs]
    target = [
        (int(n.allocatable.milli_cpu * utilisation), int(n.allocatable.memory * utilisation))
        for n in node_objs
    ]
    counter = 0
    for index in rng.sample(range(nodes), nodes):
        while True:
            k = rng.randrange(len(owners))
            cpu, memory = sizes[k % len(sizes)]
            if (
                used[index][0] + cpu > target[index][0]
                or used[index][1] + memory > target[index][1]
            ):
                break
            used[index][0] += cpu
            used[index][1] += memory
            running[index].append(
                Pod(
                    "bench",
                    f"run-{counter:06d}",
                    uid=f"uid-run-{counter}",
                    scheduler_name=SCHEDULER,
                    node_name=node_objs[index].name,
                    phase="Running",
                    requests=Resources(cpu, memory),
                    owner=owners[k],
                )
            )
            counter += 1
    total_running = sum(len(r) for r in running)
    big = [(int(1500 * pod_scale), 3 * GiB), (int(2500 * pod_scale), 5 * GiB)]
    pending_owners = [Owner("ReplicaSet", f"big-{k}", f"uid-big-{k}") for k in range(2)]
    pending = []
    for j in range(max(1, total_running * 3 // 100)):
        k = j % len(big)
        cpu, memory = big[k]
        pending.append(
            Pod(
                "bench",
                f"pend-{j:05d}",
                uid=f"uid-pend-{j}",
                scheduler_name=SCHEDULER,
                requests=Resources(cpu, memory),
                owner=pending_owners[k],
                created=float(j),
            )
        )
    infos = [NodeInfo.build(n, tuple(r)) for n, r in zip(node_objs, running, strict=True)]
    return Snapshot.of(infos, tuple(pending), generation=seed)


def counting_bound(snapshot: Snapshot) -> int:
    """Largest k: the k smallest pending requests fit in the total free capacity, per dimension."""
    free_cpu = sum(
        i.node.allocatable.milli_cpu - i.requested.milli_cpu for i in snapshot.node_infos()
    )
    free_mem = sum(i.node.allocatable.memory - i.requested.memory for i in snapshot.node_infos())
    bound = len(snapshot.pending)
    for free, values in (
        (free_cpu, sorted(p.requests.milli_cpu for p in snapshot.pending)),
        (free_mem, sorted(p.requests.memory for p in snapshot.pending)),
    ):
        total, k = 0, 0
        for value in values:
            if total + value > free:
                break
            total += value
            k += 1
        bound = min(bound, k)
    return bound


def run_solver_bench(
    sizes: Sequence[int],
    solvers: Sequence[str],
    time_limit: float,
    out: Callable[[str], None],
    pod_scale: float = 1.0,
) -> list[SolverRow]:
    """Generate each size once and run every solver on it."""
    from opsche_daemon.optimiser.api import solve_snapshot  # noqa: PLC0415
    from opsche_daemon.safety import is_protected  # noqa: PLC0415

    rows: list[SolverRow] = []
    for nodes in sizes:
        snapshot = generate(nodes, pod_scale=pod_scale)
        pods = sum(len(i.pods) for i in snapshot.node_infos())
        bound = counting_bound(snapshot)
        for solver in solvers:
            out(f"  {nodes} nodes, {pods} running, {len(snapshot.pending)} pending: {solver} ...")
            started = time.monotonic()
            plan = solve_snapshot(
                snapshot,
                scheduler_name=SCHEDULER,
                protected=is_protected,
                solver=solver,
                time_limit=time_limit,
            )
            rows.append(
                SolverRow(
                    nodes=nodes,
                    pods=pods,
                    pending=len(snapshot.pending),
                    solver=solver,
                    seconds=time.monotonic() - started,
                    placed=len(plan.placements),
                    bound=bound,
                    moves=len(plan.moves),
                    evictions=len(plan.evictions),
                    status=str(plan.status),
                )
            )
    return rows


def format_rows(rows: Sequence[SolverRow]) -> str:
    """The side-by-side table."""
    lines = [
        f"{'nodes':>6}{'running':>9}{'pending':>9}  {'solver':<10}{'seconds':>8}"
        f"{'placed':>8}{'bound':>7}{'gap':>7}{'moves':>7}{'evict':>7}  status"
    ]
    for r in rows:
        lines.append(
            f"{r.nodes:>6}{r.pods:>9}{r.pending:>9}  {r.solver:<10}{r.seconds:>8.2f}"
            f"{r.placed:>8}{r.bound:>7}{100 * r.gap:>6.1f}%{r.moves:>7}{r.evictions:>7}  {r.status}"
        )
    return "\n".join(lines)
