"""An in-memory scheduler extender for unit tests of the algorithm, the cycle and plans."""

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from opsche_daemon.framework.extender import ExtenderError, FilterResult, interested
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod


@dataclass
class FakeExtender:
    """An in-memory extender: refuses ``refuse`` nodes, scores from ``scores``, or fails."""

    name: str = "http://127.0.0.1:1"
    refuse: Mapping[str, str] = field(default_factory=dict)
    unresolvable: Mapping[str, str] = field(default_factory=dict)
    scores: Mapping[str, int] = field(default_factory=dict)
    weight: int = 1
    timeout_s: float = 5.0
    ignorable: bool = False
    is_filter: bool = True
    is_prioritizer: bool = False
    fail: str = ""  # "filter" or "prioritize": that verb raises
    managed: frozenset[str] = frozenset()
    delay: float = 0.0
    during: Callable[[], None] | None = None  # run inside filter (to change the world meanwhile)
    calls: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def is_interested(self, pod: Pod) -> bool:
        return interested(pod, self.managed)

    async def filter(self, pod: Pod, nodes: Sequence[NodeInfo]) -> FilterResult:
        self.calls.append(("filter", tuple(n.name for n in nodes)))
        if self.during is not None:
            self.during()
        if self.fail == "filter":
            raise ExtenderError(f'Post "{self.name}/filter": connection refused', "connection")
        names = [n.name for n in nodes]
        failed = {n: m for n, m in self.refuse.items() if n in names}
        gone = {n: m for n, m in self.unresolvable.items() if n in names}
        passed = tuple(n for n in names if n not in failed and n not in gone)
        return FilterResult(passed, failed, gone)

    async def prioritize(self, pod: Pod, nodes: Sequence[NodeInfo]) -> Mapping[str, int]:
        self.calls.append(("prioritize", tuple(n.name for n in nodes)))
        await asyncio.sleep(self.delay)
        if self.fail == "prioritize":
            raise ExtenderError("timed out", "timeout")
        return {n.name: self.scores.get(n.name, 0) for n in nodes}
