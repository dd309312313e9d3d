"""Decisions to learn from: real placements, with the occupancy each one saw, and its rivals.

Seed 002's method, on two sources:

* **replays under the real kube-scheduler** (``opsche bench replay`` results): each pod record
  says which node it ran on and when; the trace says what each pod requested;
* **the Alibaba cluster-trace v2018** (``machine_meta.csv``, ``batch_task.csv``,
  ``batch_instance.csv``, the public schema without header rows; cpu in 100 units per core,
  memory normalised to 0-100 of a machine): each batch instance says which machine ran it and
  when, its task what it planned to use.

Occupancy is reconstructed by a **sweep line**: every placement is a +request event at its start
and a -request event at its end; sorted by time (ends first at equal times) and summed per node,
the state just before a placement's own +event is exactly the as-of query the seed ran with
``pandas.merge_asof``. Each decision becomes a **group**: the chosen node (positive, label 100)
and up to three other nodes where the request fit at that moment (negatives, label 20), drawn
with a seed fixed per decision so every run builds the same dataset. Groups without any rival
are dropped (there is nothing to rank). ``source`` names where a decision came from, so that
training and test sets are split by trace (or by time), never by rows of one trace.
"""

from __future__ import annotations

import csv
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opsche_daemon.scoring.features import Candidate, PodDemand
from opsche_daemon.trace.model import TraceFileError, read_trace
from opsche_daemon.trace.result import read_result_json

__all__ = [
    "NEGATIVE_LABEL",
    "POSITIVE_LABEL",
    "DatasetError",
    "Decision",
    "Placement",
    "decisions_from_alibaba",
    "decisions_from_placements",
    "decisions_from_replay",
    "load_decisions",
]

POSITIVE_LABEL = 100.0
NEGATIVE_LABEL = 20.0
_RIVALS = 3
_MIB_PER_GIB = 1024


class DatasetError(ValueError):
    """Input that cannot become decisions, with the file and the reason."""


@dataclass(frozen=True)
class Placement:
    """One pod (or instance) that ran on ``node`` from ``start`` to ``end`` (None: still)."""

    key: str
    node: str
    start: float
    end: float | None
    demand: PodDemand
    domain: str = ""  # failure domain of its node, when the source has one


@dataclass(frozen=True)
class Decision:
    """One placement decision: the chosen node first, then its rivals, as of ``time``."""

    source: str
    key: str
    time: float
    pod: PodDemand
    candidates: tuple[Candidate, ...]  # [0] is the chosen node

    @property
    def chosen(self) -> Candidate:
        """The node the scheduler picked."""
        return self.candidates[0]

    def labels(self) -> list[float]:
        """The seed's pointwise labels: 100 for the chosen node, 20 for the others."""
        return [POSITIVE_LABEL] + [NEGATIVE_LABEL] * (len(self.candidates) - 1)


_EXHAUSTIVE = 64  # pools up to this size are searched whole; larger ones are sampled


def _pools(
    nodes: dict[str, tuple[float, float]], domains: dict[str, str] | None
) -> dict[str, list[str]]:
    """Candidate node names, all ("") and per failure domain, in a fixed (sorted) order."""
    pools: dict[str, list[str]] = {"": sorted(nodes)}
    for name in pools[""]:
        if domains is not None and domains.get(name):
            pools.setdefault(domains[name], []).append(name)
    return pools


def _rivals(
    pool: Sequence[str],
    p: Placement,
    candidate: Callable[[str], Candidate],
    rng: random.Random,
    count: int,
) -> list[Candidate]:
    """Up to ``count`` other nodes of ``pool`` where ``p`` fits now, drawn at random.

    A small pool is searched whole (every feasible rival is equally likely); a large one (the
    Alibaba trace's thousands of machines) is probed at up to 64 random nodes, which keeps a
    decision O(1) instead of O(machines) at the cost of missing rivals in a nearly full cluster.
    """
    if len(pool) <= _EXHAUSTIVE:
        feasible = [c for n in pool if n != p.node and (c := candidate(n)).fits(p.demand)]
        return rng.sample(feasible, min(count, len(feasible)))
    found: list[Candidate] = []
    for name in rng.sample(pool, _EXHAUSTIVE):
        if name != p.node and (c := candidate(name)).fits(p.demand):
            found.append(c)
            if len(found) == count:
                break
    return found


def decisions_from_placements(
    source: str,
    placements: Iterable[Placement],
    nodes: dict[str, tuple[float, float]],
    *,
    domains: dict[str, str] | None = None,
    rivals: int = _RIVALS,
) -> list[Decision]:
    """Sweep ``placements`` over ``nodes`` (name -> allocatable cores, GiB) into decisions."""
    events: list[tuple[float, int, int, Placement]] = []
    ordered = list(placements)
    for index, p in enumerate(ordered):
        if p.node not in nodes or (p.end is not None and p.end <= p.start):
            continue  # a placement that never ran (or ended as it started) held nothing
        events.append((p.start, 1, index, p))
        if p.end is not None:
            events.append((p.end, 0, index, p))  # ends sort before starts at the same time
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    used = {name: [0.0, 0.0] for name in nodes}
    pools = _pools(nodes, domains)
    decisions: list[Decision] = []
    for time, kind, _, p in events:
        if kind == 0:
            used[p.node][0] = max(0.0, used[p.node][0] - p.demand.cpu)
            used[p.node][1] = max(0.0, used[p.node][1] - p.demand.memory)
            continue

        def candidate(name: str) -> Candidate:
            cpu, memory = nodes[name]
            return Candidate(name, cpu, memory, used[name][0], used[name][1])

        pool = pools.get(p.domain if domains is not None and p.domain else "", pools[""])
        rng = random.Random(f"{source}/{p.key}")  # noqa: S311 - a reproducible sample
        picked = _rivals(pool, p, candidate, rng, rivals)
        if picked:
            decisions.append(Decision(source, p.key, time, p.demand, (candidate(p.node), *picked)))
        used[p.node][0] += p.demand.cpu
        used[p.node][1] += p.demand.memory
    return decisions


# ---------------------------------------------------------------------- replays
def _trace_path(result: dict[str, Any], where: Path) -> Path:
    given = Path(str((result.get("trace") or {}).get("path", "")))
    for candidate in (given, where.parent / given.name, where.parent / given):
        if candidate.is_file():
            return candidate
    raise DatasetError(
        f"{where}: its trace {given} is not found (looked beside the result and from the "
        "current directory)"
    )


def _node_names(seen: Iterable[str], count: int) -> list[str]:
    """Every node of the replay: the ones pods ran on, and the idle ones by the same naming."""
    names = set(seen)
    prefixes = {m.group(1) for n in names if (m := re.fullmatch(r"(.*-)(\d+)", n))}
    if len(prefixes) == 1:
        prefix = next(iter(prefixes))
        names |= {f"{prefix}{i}" for i in range(count)}
    return sorted(names)


def decisions_from_replay(path: Path) -> list[Decision]:
    """The decisions of one replay under the real kube-scheduler (virtual replays refused)."""
    try:
        result = read_result_json(path)  # .json, or .json.gz as the benchmarks write
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: cannot read a replay result: {exc}") from None
    if not isinstance(result, dict) or result.get("format") != "opsche-replay/v1":
        raise DatasetError(f"{path}: not a replay result (opsche-replay/v1)")
    scheduler = result.get("scheduler")
    scheduler = scheduler if isinstance(scheduler, dict) else {}
    settings = scheduler.get("settings")
    settings = settings if isinstance(settings, dict) else {}
    if scheduler.get("scheduler_name") != "default-scheduler" or settings.get("backend"):
        raise DatasetError(
            f"{path}: placements by {scheduler.get('label')!r} "
            f"({settings.get('backend') or scheduler.get('scheduler_name')}), not by the real "
            "kube-scheduler; learn from `opsche bench replay` runs with --schedulers "
            "kube-scheduler on the real cluster"
        )
    try:
        trace = read_trace(_trace_path(result, path))
    except TraceFileError as exc:
        raise DatasetError(str(exc)) from None
    workloads = {w.name: w for w in trace.workloads}
    cores = trace.node.cpu_millis / 1000
    gib = trace.node.memory_mib / _MIB_PER_GIB
    try:
        placements = _replay_placements(result, workloads, trace)
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError(f"{path}: a malformed pod record ({exc!r})") from None
    names = _node_names((p.node for p in placements), trace.nodes)
    source = str((result.get("trace") or {}).get("name") or path.stem)
    return decisions_from_placements(source, placements, dict.fromkeys(names, (cores, gib)))


def _replay_placements(
    result: dict[str, Any], workloads: dict[str, Any], trace: Any
) -> list[Placement]:
    placements = []
    for record in result.get("pods") or ():
        workload = workloads.get(str(record.get("workload")))
        if workload is None or not record.get("node") or record.get("running_s") is None:
            continue
        demand = PodDemand(
            workload.pod_cpu_millis(trace.node) / 1000,
            workload.pod_memory_mib(trace.node) / _MIB_PER_GIB,
            workload.replicas,
        )
        deleted = record.get("deleted_s")
        placements.append(
            Placement(
                str(record["name"]),
                str(record["node"]),
                float(record["running_s"]),
                None if deleted is None else float(deleted),
                demand,
            )
        )
    return placements


# ---------------------------------------------------------------------- Alibaba v2018
def _rows(path: Path, columns: int) -> Iterable[list[str]]:
    try:
        with path.open(newline="") as source:
            for number, row in enumerate(csv.reader(source), 1):
                if len(row) < columns:
                    raise DatasetError(f"{path}:{number}: {len(row)} columns, expected {columns}")
                yield row
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _number(path: Path, value: str) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        raise DatasetError(f"{path}: {value!r} is not a number") from None


def decisions_from_alibaba(directory: Path, *, same_domain: bool = True) -> list[Decision]:
    """Decisions from the Alibaba cluster-trace v2018 CSVs in ``directory``.

    machine_meta: machine_id, time_stamp, failure_domain_1, failure_domain_2, cpu_num,
    mem_size, status. batch_task: task_name, instance_num, job_name, task_type, status,
    start_time, end_time, plan_cpu, plan_mem. batch_instance: instance_name, task_name,
    job_name, task_type, status, start_time, end_time, machine_id, seq_no, total_seq_no,
    cpu_avg, cpu_max, mem_avg, mem_max. Rivals come from the chosen machine's failure domain
    (``same_domain``, the seed's later iterations).
    """
    machines: dict[str, tuple[float, float]] = {}
    domains: dict[str, str] = {}
    meta = directory / "machine_meta.csv"
    for row in _rows(meta, 7):
        cores, memory = _number(meta, row[4]), _number(meta, row[5])
        if cores and memory:
            machines[row[0]] = (cores, memory)  # memory: 0-100, read as "GiB" of a 100 machine
            domains[row[0]] = row[2]
    task_file = directory / "batch_task.csv"
    tasks: dict[tuple[str, str], tuple[float, float]] = {}
    job_tasks: Counter[str] = Counter()
    for row in _rows(task_file, 9):
        cpu, memory = _number(task_file, row[7]), _number(task_file, row[8])
        job_tasks[row[2]] += 1
        if cpu is not None and memory is not None:
            tasks[(row[2], row[0])] = (cpu / 100, memory)  # 100 cpu units = 1 core
    instance_file = directory / "batch_instance.csv"
    placements: list[Placement] = []
    for row in _rows(instance_file, 8):
        task = tasks.get((row[2], row[1]))
        start, end = _number(instance_file, row[5]), _number(instance_file, row[6])
        machine = row[7]
        if task is None or not machine or machine not in machines or not start:
            continue
        if end is not None and end <= start:
            continue
        demand = PodDemand(task[0], task[1], job_tasks[row[2]])
        key = f"{row[2]}/{row[1]}/{row[0]}"
        placements.append(Placement(key, machine, start, end, demand, domains.get(machine, "")))
    if not placements:
        raise DatasetError(f"{directory}: no batch instance with a known machine and task")
    return decisions_from_placements(
        f"alibaba:{directory.name}",
        placements,
        machines,
        domains=domains if same_domain else None,
    )


def load_decisions(paths: Sequence[Path]) -> list[Decision]:
    """Decisions from replay results and Alibaba directories, in the order given."""
    decisions: list[Decision] = []
    for path in paths:
        if path.is_dir():
            decisions += decisions_from_alibaba(path)
        elif path.is_file():
            decisions += decisions_from_replay(path)
        else:
            raise DatasetError(f"{path}: no such file or directory")
    return decisions
