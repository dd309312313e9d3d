"""``opsche bench report DIR``: the paper's paired tables and Figure 3 from replay result files.

Reads only result files (no cluster, no replay), so it is cheap to rerun after adding seeds or
configurations. The Markdown (the paper's tables, then every configuration's means across
settings, ``bench.across``, one section per grid part, and each configuration beside its
twins, ``bench.twins``) goes to stdout and, with the long-form CSV and the figure, into the
output directory. The report module and matplotlib are imported only when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import UserError

__all__ = ["add_fidelity_parser", "add_report_parser"]


def add_report_parser(sub: Any) -> None:
    """Add ``report`` to ``opsche bench``'s subcommands."""
    report = sub.add_parser(
        "report",
        help="paired differences against kube-scheduler from replay result files",
        description=(
            "Pair every opsche replay with the kube-scheduler replay of the same trace and "
            "report mean ± std per setting; writes report.md, report.csv and figure.png."
        ),
    )
    report.add_argument(
        "directory", type=Path, metavar="DIR", help="replay result files (*.json, *.json.gz)"
    )
    report.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="OUTDIR",
        help="where report.md, report.csv and figure.png go (default DIR)",
    )
    report.add_argument(
        "--paper",
        action="store_true",
        help="print seed 000's published number (Tables 5-24) beside each cell it has "
        "(comparable for 2 h traces of the paper's settings)",
    )
    report.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from opsche_daemon.bench.across import (  # noqa: PLC0415 - on demand, as below
        across_parts,
        format_across,
    )
    from opsche_daemon.bench.report import (  # noqa: PLC0415 - matplotlib and numpy on demand
        ReportError,
        build_report,
        format_markdown,
        load_results,
        write_csv,
        write_figure,
    )
    from opsche_daemon.bench.twins import format_twins, twin_rows  # noqa: PLC0415

    directory: Path = args.directory
    output: Path = args.output or directory
    try:
        results = load_results(directory)
    except ReportError as exc:
        raise UserError(str(exc)) from None
    if not results:
        raise UserError(f"{directory}: no replay result files (*.json, *.json.gz) found")
    report = build_report(results)
    paper = None
    if args.paper:
        from opsche_daemon.bench.paper import load_paper  # noqa: PLC0415

        paper = load_paper()
    markdown = (
        format_markdown(report, paper)
        + "".join(format_across(across, heading) for heading, across in across_parts(report.pairs))
        + format_twins(twin_rows(report.pairs))
    )
    try:
        output.mkdir(parents=True, exist_ok=True)
        (output / "report.md").write_text(markdown)
        write_csv(report, output / "report.csv")
        write_figure(report, output / "figure.png")
    except OSError as exc:
        raise UserError(f"{output}: cannot write the report: {exc.strerror or exc}") from None
    print(markdown, end="")
    for line in report.unpaired:
        print(f"opsche: warning: unpaired: {line}", file=sys.stderr)
    print(f"wrote report.md, report.csv and figure.png to {output}", file=sys.stderr)
    return 0


def add_fidelity_parser(sub: Any) -> None:
    """Add ``fidelity`` to ``opsche bench``'s subcommands."""
    fidelity = sub.add_parser(
        "fidelity",
        help="real-cluster and virtual-time replays of the same traces, side by side",
        description=(
            "Match the runs of a real-cluster result directory and a virtual-time one (same "
            "trace, same label) and print their usage, pending pods, latency, deletions and "
            "counters side by side, with how many agree on usage within 0.5 points."
        ),
    )
    fidelity.add_argument("real", type=Path, metavar="REAL_DIR", help="real-cluster results")
    fidelity.add_argument("virtual", type=Path, metavar="VIRTUAL_DIR", help="virtual results")
    fidelity.set_defaults(handler=_fidelity)


def _fidelity(args: argparse.Namespace) -> int:
    from opsche_daemon.bench.fidelity import compare, format_fidelity  # noqa: PLC0415
    from opsche_daemon.bench.report import ReportError, load_results  # noqa: PLC0415

    try:
        real = load_results(args.real)
        virtual = load_results(args.virtual)
    except ReportError as exc:
        raise UserError(str(exc)) from None
    comparisons = compare(real, virtual)
    if not comparisons:
        raise UserError(
            f"no run of {args.real} (real cluster) has a virtual-time twin in {args.virtual} "
            "(same trace file name and label)"
        )
    print(format_fidelity(comparisons), end="")
    return 0
