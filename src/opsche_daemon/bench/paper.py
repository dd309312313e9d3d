"""Seed 000's published results (its Tables 5-24), so a report can print them next to ours.

``paper_tables.csv`` holds every cell of those tables as printed: the paired difference
OPSche minus kube-scheduler (mean ± std over five seeds of 2 h traces) of effective usage (the
paper's "%", read as percentage points), mean scheduling latency (ms, and per priority level
with 4 priorities), pod deletions, and OPSche's own solver runs and plan activations, per
setting (16/32 nodes, 1/4 priorities, mean inter-arrival 4/8/16 s) and variant. Variants are in
this project's label syntax (``periodic-4s-blocking``, ``stable-queue-no-preemption``; 8 s, the
default period and window, carries no suffix), so a cell is looked up with the report's own keys.
The numbers were extracted from the paper's text and cross-checked against its Section 4.3
ranges and Tables 2-4 (every range is the min/max of the matching rows).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PAPER_TABLES", "PaperCell", "PaperKey", "load_paper"]

PAPER_TABLES = Path(__file__).with_name("paper_tables.csv")


@dataclass(frozen=True)
class PaperKey:
    """What a paper cell is about, in the report's terms (priority ``total`` or ``1``-``4``)."""

    metric: str
    nodes: int
    priorities: int
    mean_interarrival_s: float
    label: str
    priority: str


@dataclass(frozen=True)
class PaperCell:
    """One printed cell: its mean, its std (None where the paper prints none), its table."""

    mean: float
    std: float | None
    table: int


def load_paper(path: Path = PAPER_TABLES) -> dict[PaperKey, PaperCell]:
    """Every cell of ``path`` by key."""
    cells: dict[PaperKey, PaperCell] = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            key = PaperKey(
                metric=row["metric"],
                nodes=int(row["nodes"]),
                priorities=int(row["priorities"]),
                mean_interarrival_s=float(row["iat_s"]),
                label=row["label"],
                priority=row["priority"] or "total",
            )
            std = row["std"]
            cells[key] = PaperCell(
                float(row["mean"]), float(std) if std else None, int(row["table"])
            )
    return cells
