"""``opsche trace replay`` (one replay, any cluster) and ``opsche bench replay`` (the grid)."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import UserError
from opsche_daemon.cli.run_cmd import add_trigger_timing, blocking_help

__all__ = ["add_bench_grid_parser", "add_bench_replay_parser", "add_trace_replay_parser"]


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _interruptible() -> None:
    """SIGTERM and SIGINT both stop a replay the way Ctrl-C does: cleaning up what it made.

    A shell starts background jobs with SIGINT ignored, and ``kill`` sends SIGTERM, which would
    end the process without any cleanup, leaving a cluster and an opsche daemon behind. SIGINT
    gets Python's default handler back (``asyncio.run`` then cancels the replay, whose cleanup
    runs), and SIGTERM is turned into SIGINT.
    """
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def terminate(_signum: int, _frame: object) -> None:
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, terminate)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="compress the trace's clock by this factor (default 1: real time; see "
        "docs/evaluation.md for what compression distorts)",
    )
    parser.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many real seconds (default: the trace's horizon / time scale)",
    )
    parser.add_argument(
        "--initial-timeout",
        type=float,
        default=180.0,
        help="longest wait for the initial workloads to be placed, seconds (default 180)",
    )


def add_trace_replay_parser(sub: Any) -> None:
    """Add ``replay`` under ``opsche trace``."""
    parser = sub.add_parser(
        "replay", help="replay a trace on a cluster whose nodes match it and record what happens"
    )
    parser.add_argument("trace", type=Path, help="trace file (opsche trace generate)")
    parser.add_argument(
        "--backend",
        choices=["cluster", "virtual"],
        default="cluster",
        help="cluster (default): a real API server; virtual: opsche's own code in-process on a "
        "simulated API server and a virtual clock (see docs/evaluation.md, Virtual time)",
    )
    parser.add_argument(
        "--scheduler-name",
        default=None,
        help="the pods' spec.schedulerName (default: default-scheduler, i.e. kube-scheduler; "
        "virtual: opsche's name)",
    )
    parser.add_argument("--label", default=None, help="the run's name in reports")
    parser.add_argument("--kubeconfig", type=Path, default=None, help="default: the usual lookup")
    parser.add_argument(
        "--metrics-url",
        default=None,
        help="the scheduler's /metrics URL, to record opsche's solver runs and plan activations",
    )
    parser.add_argument("-o", "--output", type=Path, required=True, help="result file (JSON)")
    _common(parser)
    virtual = parser.add_argument_group("virtual backend (opsche runs in-process)")
    virtual.add_argument("--config", type=Path, default=None, help="opsche's YAML config file")
    virtual.add_argument(
        "--trigger",
        choices=["scheduling-failure", "periodic", "stable-queue", "none"],
        default=None,
        help="opsche's trigger (default: the config file's; none: plans off, the virtual "
        "stand-in for kube-scheduler)",
    )
    virtual.add_argument("--blocking", action="store_true", help=blocking_help())
    virtual.add_argument("--no-preemption", action="store_true", help="disable default preemption")
    add_trigger_timing(virtual)
    _solver_time(virtual)
    virtual.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="FILE",
        help="profile the replay (cProfile, all of opsche's own code; the solver's thread shows "
        "as waits) into FILE (pstats) and print where the real time went",
    )
    parser.set_defaults(handler=_trace_replay)


def _solver_time(parser: Any) -> None:
    parser.add_argument(
        "--solver-time",
        choices=["real", "limit"],
        default="real",
        help="what a solve costs in virtual time: real (default), the solver's own wall time "
        "on this machine; limit, its full time limit (optimiser.solveTimeLimitSeconds) "
        "whenever it stops, the same on every machine",
    )


def _check_numbers(args: argparse.Namespace) -> None:
    if args.time_scale <= 0:
        raise UserError(f"--time-scale {args.time_scale:g}: must be positive")
    if args.duration is not None and args.duration <= 0:
        raise UserError(f"--duration {args.duration:g}: must be positive")
    if args.initial_timeout <= 0:
        raise UserError(f"--initial-timeout {args.initial_timeout:g}: must be positive")


def _read_trace(path: Path) -> Any:
    from opsche_daemon.trace.model import TraceFileError, read_trace  # noqa: PLC0415

    try:
        return read_trace(path)
    except TraceFileError as exc:
        raise UserError(str(exc), exit_code=2) from None


def _trace_replay(args: argparse.Namespace) -> int:
    _check_numbers(args)
    if not args.output.parent.is_dir():
        raise UserError(f"-o {args.output}: directory {args.output.parent} does not exist")
    if args.backend == "virtual":
        return _virtual_replay(args)
    given = [
        flag
        for flag, value in (
            ("--config", args.config),
            ("--trigger", args.trigger),
            ("--blocking", args.blocking or None),
            ("--no-preemption", args.no_preemption or None),
            ("--period", args.period),
            ("--stable-window", args.stable_window),
            ("--solver-time", None if args.solver_time == "real" else args.solver_time),
            ("--profile", args.profile),
        )
        if value is not None
    ]
    if given:
        raise UserError(
            f"{', '.join(given)}: opsche's settings apply with --backend virtual only; on a "
            "cluster, start opsche with them (opsche run ...)"
        )
    return _cluster_replay(args)


def _virtual_replay(args: argparse.Namespace) -> int:
    from opsche_daemon.cli.config_cmd import checked_config  # noqa: PLC0415
    from opsche_daemon.cli.run_cmd import apply_flags  # noqa: PLC0415

    if args.kubeconfig is not None or args.metrics_url is not None:
        raise UserError(
            "--kubeconfig and --metrics-url are for --backend cluster; a virtual replay runs "
            "opsche in-process"
        )
    if args.time_scale != 1.0:
        raise UserError("--time-scale: a virtual replay needs none (its clock costs nothing)")
    config = checked_config(args.config, lambda loaded: apply_flags(loaded, args))
    trace = _read_trace(args.trace)

    from opsche_daemon.framework.registry import ProfileError  # noqa: PLC0415
    from opsche_daemon.replay.driver import ReplayError, ReplayOptions  # noqa: PLC0415
    from opsche_daemon.simulation.run import replay_virtual_to_file  # noqa: PLC0415
    from opsche_daemon.trace.result import SchedulerRun  # noqa: PLC0415

    optimiser = config.optimiser
    label = args.label or str(optimiser.trigger)
    scheduler = SchedulerRun(
        label=label,
        scheduler_name=config.scheduler_name,
        trigger=str(optimiser.trigger),
        blocking=optimiser.blocking,
        preemption=config.preemption.enabled,
        settings={
            "backend": "virtual",
            "config": str(args.config) if args.config else None,
            "solver_time": args.solver_time,
            **({"period_s": args.period} if args.period is not None else {}),
            **({"stable_window_s": args.stable_window} if args.stable_window is not None else {}),
        },
    )
    options = ReplayOptions(
        scheduler=scheduler,
        initial_timeout_s=args.initial_timeout,
        duration_s=args.duration,
        progress_every_s=600.0,
    )
    from opsche_daemon.daemon.logs import configure_logging  # noqa: PLC0415

    configure_logging("warning")  # opsche's per-pod lines would drown the replay's progress
    _interruptible()
    _say(f"replaying {args.trace} ({trace.nodes} nodes) in virtual time under opsche ({label})")
    profiler = None
    if args.profile is not None:
        import cProfile  # noqa: PLC0415

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        result = replay_virtual_to_file(
            trace, args.trace, options, config, args.output, out=_say, solver_time=args.solver_time
        )
    except (ReplayError, ProfileError) as exc:
        raise UserError(str(exc)) from None
    finally:
        if profiler is not None:
            profiler.disable()
    if profiler is not None:
        _write_profile(profiler, args.profile)
    print(_summary_line(result))
    _say(
        f"result written to {args.output} ({result.duration_s:.0f} virtual s in "
        f"{result.environment['real_s']:.1f} real s)"
    )
    return 0


def _write_profile(profiler: Any, path: Path) -> None:
    """The pstats file, and the functions that took the most time themselves, on stderr."""
    import io  # noqa: PLC0415
    import pstats  # noqa: PLC0415

    try:
        profiler.dump_stats(path)
    except OSError as exc:
        raise UserError(f"--profile {path}: cannot write: {exc.strerror or exc}") from None
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
    _say(text.getvalue().rstrip())
    _say(f"profile written to {path} (python -m pstats {path})")


def _cluster_replay(args: argparse.Namespace) -> int:
    from kubernetes_asyncio.client.exceptions import ApiException  # noqa: PLC0415

    from opsche_daemon.kube.client import ConnectionError_, resolve_kubeconfig  # noqa: PLC0415
    from opsche_daemon.replay.replayer import ReplayError, ReplayOptions  # noqa: PLC0415
    from opsche_daemon.replay.run import replay_to_file  # noqa: PLC0415
    from opsche_daemon.trace.result import SchedulerRun  # noqa: PLC0415

    trace = _read_trace(args.trace)
    try:
        kubeconfig = resolve_kubeconfig(args.kubeconfig)
    except ConnectionError_ as exc:
        raise UserError(str(exc)) from None
    args.scheduler_name = args.scheduler_name or "default-scheduler"
    label = args.label or (
        "kube-scheduler" if args.scheduler_name == "default-scheduler" else args.scheduler_name
    )
    options = ReplayOptions(
        scheduler=SchedulerRun(label=label, scheduler_name=args.scheduler_name),
        time_scale=args.time_scale,
        initial_timeout_s=args.initial_timeout,
        metrics_url=args.metrics_url,
        duration_s=args.duration,
    )
    _interruptible()
    _say(f"replaying {args.trace} ({trace.nodes} nodes) with schedulerName {args.scheduler_name}")
    try:
        result = replay_to_file(kubeconfig, trace, args.trace, options, args.output, _say)
    except ReplayError as exc:
        raise UserError(str(exc)) from None
    except ApiException as exc:
        raise UserError(f"the API server refused a request: {exc.status} {exc.reason}") from None
    except OSError as exc:
        raise UserError(f"cannot reach the API server: {exc}") from None
    print(_summary_line(result))
    _say(f"result written to {args.output}")
    return 0


def _summary_line(result: Any) -> str:
    from opsche_daemon.trace.result import DeletionCause  # noqa: PLC0415 - the CLI imports lazily

    s = result.summary
    p50 = "n/a" if s.latency_p50_ms is None else f"{s.latency_p50_ms:.0f}"
    split = ""
    if s.binding_p50_ms is not None and s.start_p50_ms is not None:
        split = f" (to bound {s.binding_p50_ms:.0f}, bound to Running {s.start_p50_ms:.0f})"
    plans = ""
    if s.plan_pods_placed is not None and s.all_disruptions_by_cause is not None:
        plans = (
            f", plans placed {s.plan_pods_placed} pending pods with "
            f"{s.all_disruptions_by_cause.get(DeletionCause.EVICTED.value, 0)} evictions "
            "(initial pods included)"
        )
    return (
        f"{result.scheduler.label}: usage {s.effective_usage:.1%} (capped demand "
        f"{s.limit_usage:.1%}, pooled bound {s.pooled_usage:.1%}), latency p50 {p50} ms"
        f"{split}, disruptions {s.disruptions}{plans}, pending at end {s.pending_at_end}"
    )


def _shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected I/N, e.g. 1/3") from None
    return index, count


def add_bench_replay_parser(sub: Any) -> None:
    """Add ``replay`` under ``opsche bench``."""
    parser = sub.add_parser(
        "replay",
        help="replay traces under kube-scheduler and opsche configurations, a fresh cluster each",
    )
    parser.add_argument("traces", type=Path, nargs="+", help="trace files")
    parser.add_argument(
        "--schedulers",
        default="kube-scheduler,periodic,stable-queue,scheduling-failure",
        help="comma-separated: kube-scheduler, periodic, stable-queue, scheduling-failure, none; "
        "an opsche trigger may end in -blocking and/or -no-preemption "
        "(default kube-scheduler,periodic,stable-queue,scheduling-failure)",
    )
    parser.add_argument("--out", type=Path, required=True, help="results directory (resumable)")
    parser.add_argument(
        "--shard", type=_shard, default=(1, 1), help="run only slice I of N of the grid"
    )
    parser.add_argument("--opsche-config", type=Path, default=None, help="config for opsche runs")
    parser.add_argument(
        "--backend",
        choices=["cluster", "virtual"],
        default="cluster",
        help="cluster (default): a fresh local cluster per run, the real kube-scheduler as the "
        "baseline; virtual: opsche in-process on a virtual clock, opsche with plans off as the "
        "baseline (see docs/evaluation.md, Virtual time)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="virtual backend: replays at once (default: one per core)",
    )
    _solver_time(parser)
    _common(parser)
    parser.set_defaults(handler=_bench_replay)


def _bench_replay(args: argparse.Namespace) -> int:
    from kubernetes_asyncio.client.exceptions import ApiException  # noqa: PLC0415

    from opsche_daemon.bench.replay import GridError, plan_grid, run_grid  # noqa: PLC0415
    from opsche_daemon.localcluster.cluster import ClusterError  # noqa: PLC0415
    from opsche_daemon.localcluster.daemon_process import DaemonStartError  # noqa: PLC0415
    from opsche_daemon.replay.replayer import ReplayError, ReplayOptions  # noqa: PLC0415
    from opsche_daemon.trace.result import SchedulerRun  # noqa: PLC0415

    _check_numbers(args)
    for path in args.traces:
        _read_trace(path)  # every trace is checked before the first cluster comes up
    labels = [s.strip() for s in args.schedulers.split(",") if s.strip()]
    if not labels:
        raise UserError("--schedulers: give at least one configuration")
    try:
        runs = plan_grid(args.traces, labels, args.shard)
    except GridError as exc:
        raise UserError(str(exc)) from None
    if args.opsche_config is not None and not args.opsche_config.is_file():
        raise UserError(f"--opsche-config {args.opsche_config}: no such file")
    if args.jobs is not None and (args.jobs < 1 or args.backend != "virtual"):
        raise UserError(f"--jobs {args.jobs}: a positive number, with --backend virtual only")
    if args.backend == "virtual":
        return _bench_virtual(args, runs, labels)
    if args.solver_time != "real":
        raise UserError(
            "--solver-time: for --backend virtual only (a cluster's solves take real time)"
        )
    options = ReplayOptions(
        scheduler=SchedulerRun(label="", scheduler_name=""),  # per run
        time_scale=args.time_scale,
        initial_timeout_s=args.initial_timeout,
        duration_s=args.duration,
    )
    _interruptible()
    _say(f"{len(runs)} runs in this shard ({len(args.traces)} traces x {len(labels)} schedulers)")
    try:
        ran, skipped = run_grid(runs, args.out, options, args.opsche_config, _say)
    except (ClusterError, DaemonStartError, ReplayError, GridError) as exc:
        raise UserError(str(exc)) from None
    except ApiException as exc:
        raise UserError(f"the API server refused a request: {exc.status} {exc.reason}") from None
    print(f"{ran} runs done, {skipped} already done; results in {args.out}")
    print(f"report: opsche bench report {args.out}")
    return 0


def _bench_virtual(args: argparse.Namespace, runs: Any, labels: list[str]) -> int:
    from opsche_daemon.bench.replay import GridError  # noqa: PLC0415
    from opsche_daemon.bench.virtual_grid import run_virtual_grid  # noqa: PLC0415
    from opsche_daemon.cli.config_cmd import checked_config  # noqa: PLC0415
    from opsche_daemon.replay.driver import ReplayError, ReplayOptions  # noqa: PLC0415
    from opsche_daemon.trace.result import SchedulerRun  # noqa: PLC0415

    if args.time_scale != 1.0:
        raise UserError("--time-scale: a virtual replay needs none (its clock costs nothing)")
    checked_config(args.opsche_config)  # every problem of the file before the first run
    options = ReplayOptions(
        scheduler=SchedulerRun(label="", scheduler_name=""),  # per run
        initial_timeout_s=args.initial_timeout,
        duration_s=args.duration,
    )
    _interruptible()
    _say(
        f"{len(runs)} runs in this shard ({len(args.traces)} traces x {len(labels)} schedulers), "
        "virtual time"
    )
    try:
        ran, skipped = run_virtual_grid(
            runs, args.out, options, args.opsche_config, args.jobs, _say, args.solver_time
        )
    except (ReplayError, GridError) as exc:
        raise UserError(str(exc)) from None
    print(f"{ran} runs done, {skipped} already done; results in {args.out}")
    print(f"report: opsche bench report {args.out}")
    return 0


def add_bench_grid_parser(sub: Any) -> None:
    """Add ``grid`` under ``opsche bench``."""
    parser = sub.add_parser(
        "grid",
        help="seed 000's whole grid in virtual time: traces/'s settings x seeds x configurations",
    )
    parser.add_argument("--out", type=Path, required=True, help="results directory (resumable)")
    parser.add_argument(
        "--part",
        choices=["figure3", "tables", "all"],
        default="figure3",
        help="figure3 (default): the baseline and the three triggers, non-blocking; tables: "
        "the paper's 14 variants of Tables 5-14 (blocking, periods and windows of 4/8/16 s); "
        "all: those also with DefaultPreemption off (Tables 15-24)",
    )
    parser.add_argument(
        "--settings",
        default=None,
        help="comma-separated settings, e.g. n16-p1-iat8 (default: all twelve of traces/)",
    )
    parser.add_argument("--seeds", default="1,2,3,4,5", help="comma-separated (default 1,2,3,4,5)")
    parser.add_argument(
        "--hours", type=float, default=2.0, help="length of each trace (default 2, the paper's)"
    )
    parser.add_argument(
        "--configs",
        type=Path,
        default=Path("traces"),
        help="where the settings' YAML files are (default traces)",
    )
    parser.add_argument(
        "--shard", type=_shard, default=(1, 1), help="run only slice I of N of the grid"
    )
    parser.add_argument("--opsche-config", type=Path, default=None, help="config for opsche runs")
    parser.add_argument(
        "--jobs", type=int, default=None, help="replays at once (default: one per core)"
    )
    parser.add_argument(
        "--list", action="store_true", help="print the grid's size and configurations, run nothing"
    )
    _solver_time(parser)
    _common(parser)
    parser.set_defaults(handler=_bench_grid, backend="virtual")


def _bench_grid(args: argparse.Namespace) -> int:
    from opsche_daemon.bench.paper_grid import (  # noqa: PLC0415
        SETTINGS,
        GridSpec,
        PaperGridError,
        prepare_traces,
        schedulers_of,
    )
    from opsche_daemon.bench.replay import GridError, plan_grid  # noqa: PLC0415

    _check_numbers(args)
    settings = SETTINGS if args.settings is None else _names(args.settings, "--settings")
    try:
        seeds = tuple(int(seed) for seed in _names(args.seeds, "--seeds"))
    except ValueError:
        raise UserError(f"--seeds {args.seeds}: expected whole numbers, e.g. 1,2,3") from None
    if args.jobs is not None and args.jobs < 1:
        raise UserError(f"--jobs {args.jobs}: must be positive")
    labels = list(schedulers_of(args.part))
    spec = GridSpec(settings=settings, seeds=seeds, hours=args.hours)
    if args.list:
        print(
            f"{len(settings)} settings x {len(seeds)} seeds x {len(labels)} configurations = "
            f"{len(settings) * len(seeds) * len(labels)} virtual replays of {args.hours:g} h"
        )
        print("configurations: " + ", ".join(labels))
        return 0
    try:
        traces = prepare_traces(spec, args.configs, args.out / "traces", _say)
        runs = plan_grid(traces, labels, args.shard)
    except (PaperGridError, GridError) as exc:
        raise UserError(str(exc)) from None
    args.traces = traces
    return _bench_virtual(args, runs, labels)


def _names(text: str, flag: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    if not names:
        raise UserError(f"{flag}: give at least one")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UserError(f"{flag}: {', '.join(twice)} given twice")
    return names
