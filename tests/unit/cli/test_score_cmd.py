"""``opsche score``: the study from the command line, and plain errors for bad input."""

from pathlib import Path

import pytest

from opsche_daemon.cli.main import main

pytest.importorskip("lightgbm", reason="the learn extra (make setup installs it)")

REPO = Path(__file__).resolve().parents[3]
RUNS = REPO / "docs/evaluation/real-16n-15m"
TRAIN = RUNS / "n16-p1-iat8-15m-s1__kube-scheduler.json"
TEST = RUNS / "n16-p1-iat8-15m-s2__kube-scheduler.json"


def test_evaluate_trains_compares_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "study"
    code = main(
        ["score", "evaluate", "--train", str(TRAIN), "--test", str(TEST), "--out", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    for scorer in ("random", "free-cpu", "default", "forest", "ranker"):
        assert f"| {scorer} |" in printed
    assert {p.name for p in out.iterdir()} >= {
        "report.md", "top1.png", "results.json", "forest.model", "ranker.model",
    }  # fmt: skip
    report = (out / "report.md").read_text()
    assert "opsche score evaluate --train" in report and "n16-p1-iat8-15m-s2" in report
    # The saved model evaluates again to the same accuracy.
    code = main(["score", "evaluate", "--test", str(TEST), "--model", str(out / "ranker.model")])
    again = capsys.readouterr().out
    ranker_rows = [line for line in printed.splitlines() if line.startswith("| ranker |")]
    assert code == 0 and ranker_rows[0].split("|")[3] in again


def test_train_and_test_on_the_same_trace_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["score", "evaluate", "--train", str(TRAIN), "--test", str(TRAIN)])
    err = capsys.readouterr().err
    assert code == 1
    assert "share traces (n16-p1-iat8-15m-s1)" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["score", "serve", "--model", "nope.model"], "nope.model: no such model file"),
        (["score", "serve", "--model", "free-cpu", "--port", "70000"], "--port: must be"),
        (["score", "serve", "--model", "free-cpu", "--delay", "-1"], "--delay: must not be"),
        (["score", "train", "missing.json", "--kind", "forest", "--out", "m"], "no such file"),
        (["score", "train", str(TRAIN), "--kind", "forest", "--out", "/"], "cannot write"),
        (
            ["score", "serve", "--model", "free-cpu", "--kubeconfig", str(TRAIN)],
            "not a usable kubeconfig",
        ),
    ],
)
def test_bad_input_is_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
