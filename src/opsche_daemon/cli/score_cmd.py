"""``opsche score``: the scoring service (an extender), and training and evaluating scorers.

``serve`` needs FastAPI and uvicorn, ``train`` and learned models scikit-learn, LightGBM and
pandas: the ``learn`` extra (``pip install 'opsche[learn]'``), which the daemon never needs.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from opsche_daemon.cli.errors import UserError

__all__ = ["register"]

_DATA_HELP = (
    "replay results under the real kube-scheduler (opsche bench replay JSON), or directories "
    "with the Alibaba cluster-trace v2018 CSVs (machine_meta, batch_task, batch_instance)"
)


def register(commands: Any) -> None:
    """Add ``score`` to the top-level parser."""
    score = commands.add_parser(
        "score", help="the scoring extender service; train and evaluate scorers (seed 002)"
    )
    actions = score.add_subparsers(dest="action", metavar="ACTION", required=True)

    serve = actions.add_parser(
        "serve", help="answer the extender prioritize (and filter) verbs with a scorer"
    )
    serve.add_argument(
        "--model",
        required=True,
        help="a model file from `opsche score train`, or a built-in: free-cpu, default, random",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8888, help="port (0: a free one, printed)")
    serve.add_argument(
        "--delay",
        type=float,
        default=0.0,
        metavar="MS",
        help="added latency per filter and prioritize answer, ms",
    )
    serve.add_argument(
        "--filter",
        action="store_true",
        help="answer /filter too: refuse nodes where the pod does not fit in what is free",
    )
    serve.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        help="watch pods and nodes through this kubeconfig, so free capacity counts the pods "
        "already running (without it every candidate looks idle)",
    )
    serve.set_defaults(handler=_serve)

    train = actions.add_parser("train", help="train a scorer on real placements")
    train.add_argument("data", nargs="+", type=Path, help=_DATA_HELP)
    train.add_argument("--kind", choices=("forest", "ranker"), required=True)
    train.add_argument("--out", type=Path, required=True, help="model file to write")
    train.add_argument("--seed", type=int, default=0)
    train.set_defaults(handler=_train)

    evaluate = actions.add_parser(
        "evaluate", help="top-1 accuracy (and R²) of scorers on held-out placements"
    )
    evaluate.add_argument("--test", nargs="+", type=Path, required=True, help=_DATA_HELP)
    evaluate.add_argument(
        "--train",
        nargs="*",
        type=Path,
        default=[],
        help="train a forest and a ranker on these first (saved in --out)",
    )
    evaluate.add_argument(
        "--model", action="append", default=[], help="a model file to evaluate too (repeatable)"
    )
    evaluate.add_argument(
        "--out", type=Path, default=None, help="write report.md, top1.png, results.json here"
    )
    evaluate.add_argument("--seed", type=int, default=0)
    evaluate.set_defaults(handler=_evaluate)


def _learn_extra(exc: ModuleNotFoundError) -> UserError:
    return UserError(
        f"this needs {exc.name}, part of opsche's learn extra: pip install 'opsche[learn]'"
    )


def _scorer(spec: str, seed: int = 0) -> Any:
    from opsche_daemon.scoring.models import ModelFileError, load_scorer  # noqa: PLC0415

    try:
        return load_scorer(spec, seed=seed)
    except ModelFileError as exc:
        raise UserError(str(exc)) from None


def _decisions(paths: list[Path]) -> Any:
    from opsche_daemon.scoring.dataset import DatasetError, load_decisions  # noqa: PLC0415

    try:
        return load_decisions(paths)
    except DatasetError as exc:
        raise UserError(str(exc)) from None


def _save(model: Any, path: Path) -> None:
    from opsche_daemon.scoring.models import save_model  # noqa: PLC0415

    try:
        save_model(model, path)
    except OSError as exc:
        raise UserError(f"cannot write the model to {path}: {exc.strerror or exc}") from None


def _writable(directory: Path) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"--out {directory}: {exc.strerror or exc}") from None


def _serve(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port: must be between 0 and 65535, got {args.port}")
    if args.delay < 0:
        raise UserError(f"--delay: must not be negative, got {args.delay}")
    if args.kubeconfig is not None and not args.kubeconfig.is_file():
        raise UserError(f"--kubeconfig: {args.kubeconfig}: no such file")
    scorer = _scorer(args.model)
    try:
        from opsche_daemon.scoring.service import check_kubeconfig, serve  # noqa: PLC0415

        if args.kubeconfig is not None:
            problem = check_kubeconfig(args.kubeconfig)
            if problem:
                raise UserError(f"--kubeconfig: {args.kubeconfig}: {problem}")
        return serve(
            scorer,
            host=args.host,
            port=args.port,
            delay_s=args.delay / 1000,
            enable_filter=args.filter,
            kubeconfig=args.kubeconfig,
        )
    except ModuleNotFoundError as exc:
        raise _learn_extra(exc) from None
    except OSError as exc:
        raise UserError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None


def _train(args: argparse.Namespace) -> int:
    decisions = _decisions(args.data)
    if not decisions:
        raise UserError("no decisions in the data (no placement had a feasible rival node)")
    try:
        from opsche_daemon.scoring.learn import train  # noqa: PLC0415

        print(f"training a {args.kind} on {len(decisions)} decisions", flush=True)
        model = train(args.kind, decisions, seed=args.seed)
    except ModuleNotFoundError as exc:
        raise _learn_extra(exc) from None
    _save(model, args.out)
    print(f"wrote {args.out} ({', '.join(f'{k}={v}' for k, v in model.meta.items())})")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    test = _decisions(args.test)
    if not test:
        raise UserError("no test decisions (no placement had a feasible rival node)")
    train_set = _decisions(args.train) if args.train else []
    if args.out is not None:
        _writable(args.out)
    overlap = {d.source for d in test} & {d.source for d in train_set}
    if overlap:
        raise UserError(
            f"training and test data share traces ({', '.join(sorted(overlap))}): split by "
            "trace or time, never by rows of one trace"
        )
    try:
        from opsche_daemon.scoring.learn import evaluate, train  # noqa: PLC0415
        from opsche_daemon.scoring.report import markdown_table, write_report  # noqa: PLC0415

        scorers = [_scorer(name, args.seed) for name in ("random", "free-cpu", "default")]
        for kind in ("forest", "ranker") if train_set else ():
            print(f"training a {kind} on {len(train_set)} decisions", flush=True)
            model = train(kind, train_set, seed=args.seed)
            if args.out is not None:
                _save(model, args.out / f"{kind}.model")
            scorers.append(model)
        scorers += [_scorer(spec) for spec in args.model]
        print(f"evaluating {len(scorers)} scorers on {len(test)} decisions", flush=True)
        results = evaluate(scorers, test)
    except ModuleNotFoundError as exc:
        raise _learn_extra(exc) from None
    print(markdown_table(results))
    if args.out is not None:
        parts = ["opsche score evaluate"]
        if args.train:
            parts.append("--train " + " ".join(shlex.quote(str(p)) for p in args.train))
        parts.append("--test " + " ".join(shlex.quote(str(p)) for p in args.test))
        parts += [f"--model {shlex.quote(m)}" for m in args.model]
        parts.append(f"--out {shlex.quote(str(args.out))}")
        command = " ".join(parts)
        write_report(args.out, results, train_set, test, command=command)
        print(f"wrote {args.out / 'report.md'} and {args.out / 'top1.png'}")
    return 0
