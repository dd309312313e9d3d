"""The study's report: a Markdown table of R² and top-1 accuracy, and a bar chart of top-1."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from opsche_daemon.scoring.dataset import Decision
from opsche_daemon.scoring.learn import Evaluation

__all__ = ["markdown_table", "write_report"]

_DESCRIPTIONS = {
    "random": "uniform random score (chance)",
    "free-cpu": "seed 002's heuristic: most free cpu",
    "default": "kube-scheduler's default scoring (LeastAllocated + BalancedAllocation)",
    "forest": "Random Forest regression on 100/20 labels (seed's model)",
    "ranker": "LightGBM lambdarank (the seed's proposed pairwise/listwise step)",
}


def _number(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}f}"


def markdown_table(evaluations: Sequence[Evaluation]) -> str:
    """Scorer | what it is | top-1 | R², one row per scorer."""
    lines = ["| scorer | what it is | top-1 accuracy | R² |", "|---|---|---:|---:|"]
    for e in evaluations:
        lines.append(
            f"| {e.scorer} | {_DESCRIPTIONS.get(e.scorer, 'model file')} | "
            f"{_number(e.top1)} | {_number(e.r2)} |"
        )
    return "\n".join(lines)


def _sources(decisions: Sequence[Decision]) -> str:
    counts = Counter(d.source for d in decisions)
    return ", ".join(f"{source} ({n})" for source, n in sorted(counts.items()))


def write_report(
    out: Path,
    evaluations: Sequence[Evaluation],
    train: Sequence[Decision],
    test: Sequence[Decision],
    *,
    command: str,
) -> None:
    """``report.md``, ``top1.png`` and ``results.json`` in ``out``."""
    import matplotlib  # noqa: PLC0415 - only when a report is written

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    out.mkdir(parents=True, exist_ok=True)
    chance = evaluations[0].chance if evaluations else float("nan")
    text = [
        "# Learned scoring: top-1 accuracy against real kube-scheduler placements",
        "",
        f"Made by `{command}`.",
        "",
        f"- training decisions: {len(train)} from {_sources(train) or 'none'}",
        f"- test decisions: {len(test)} from {_sources(test)}",
        f"- chance (mean of 1 / candidates per decision): {_number(chance)}",
        "",
        markdown_table(evaluations),
        "",
    ]
    (out / "report.md").write_text("\n".join(text))
    (out / "results.json").write_text(
        json.dumps(
            {
                "command": command,
                "train": len(train),
                "test": len(test),
                "results": [e.__dict__ for e in evaluations],
            },
            indent=2,
            default=str,
        )
        + "\n"
    )
    figure, axes = plt.subplots(figsize=(7, 3.2))
    names = [e.scorer for e in evaluations]
    values = [e.top1 for e in evaluations]
    bars = axes.bar(names, values, color="#4c72b0")
    axes.axhline(chance, color="grey", linestyle="--", linewidth=1, label="chance")
    for bar, value in zip(bars, values, strict=True):
        axes.annotate(
            f"{value:.2f}",
            (bar.get_x() + bar.get_width() / 2, value),
            ha="center",
            va="bottom",
            fontsize=9,
        )
    axes.set_ylim(0, 1)
    axes.set_ylabel("top-1 accuracy (held-out)")
    axes.set_title(f"Ranking {len(test)} real kube-scheduler decisions")
    axes.legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    figure.savefig(out / "top1.png", dpi=110)
    plt.close(figure)
