"""Scorers: what ranks the candidate nodes of one decision, learned or not.

Every scorer answers one question, ``score(pod, candidates)``: a number per candidate, higher is
better; only the order within one decision matters (top-1 accuracy, and the service's 0-10
scale, are both computed within a decision). The baselines of seed 002 and one of opsche's own:

* ``random``: a uniform random score (seeded), the floor;
* ``free-cpu``: the seed's one-line heuristic, the candidate's free cpu;
* ``default``: kube-scheduler's default scoring as opsche's framework computes it
  (NodeResourcesFit LeastAllocated plus NodeResourcesBalancedAllocation, their real plugins);

and two learned ones, stored in a model file (``opsche score train``):

* ``forest``: the seed's Random Forest regression (scikit-learn, 150 trees, depth 10) on the
  100/20 labels of chosen and other candidates;
* ``ranker``: LightGBM's lambdarank, the pairwise/listwise objective the seed proposes next,
  trained on the decisions as query groups.

scikit-learn and LightGBM are the ``learn`` extra: imported only when a learned scorer is trained
or loaded, so the daemon and its image never need them.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from opsche_daemon.framework.interface import CycleState
from opsche_daemon.framework.registry import DEFAULT_PLUGINS, build_framework
from opsche_daemon.model.node import Node, NodeInfo
from opsche_daemon.model.pod import Pod
from opsche_daemon.model.resources import Resources
from opsche_daemon.model.snapshot import Snapshot
from opsche_daemon.scoring.features import FEATURES, Candidate, PodDemand, feature_row

__all__ = [
    "BUILTIN",
    "MODEL_FORMAT",
    "DefaultScorer",
    "FreeCpuScorer",
    "LearnedScorer",
    "ModelFileError",
    "RandomScorer",
    "Scorer",
    "feature_frame",
    "load_scorer",
    "save_model",
]

MODEL_FORMAT = "opsche-scorer/v1"
_GIB = 2**30


class ModelFileError(ValueError):
    """A model file that cannot be used (missing, not a model, other features, no extra)."""


class Scorer(Protocol):
    """Ranks the candidates of one decision."""

    @property
    def name(self) -> str:
        """How reports and logs name it."""
        ...

    def score(self, pod: PodDemand, candidates: Sequence[Candidate]) -> list[float]:
        """One score per candidate, in order; higher is better."""
        ...


class RandomScorer:
    """A uniform random score: what top-1 accuracy is by chance (1 / group size on average)."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)  # noqa: S311 - a baseline, not cryptography

    def score(self, pod: PodDemand, candidates: Sequence[Candidate]) -> list[float]:
        """Random numbers."""
        del pod
        return [self.rng.random() for _ in candidates]


class FreeCpuScorer:
    """Seed 002's heuristic: the more free cpu, the better."""

    name = "free-cpu"

    def score(self, pod: PodDemand, candidates: Sequence[Candidate]) -> list[float]:
        """Free cores per candidate."""
        del pod
        return [c.free_cpu for c in candidates]


class DefaultScorer:
    """kube-scheduler's default resource scoring, computed by opsche's own plugins."""

    name = "default"

    def __init__(self) -> None:
        keep = ("NodeResourcesFit", "NodeResourcesBalancedAllocation")
        self.framework = build_framework(disabled=[p for p in DEFAULT_PLUGINS if p not in keep])

    def score(self, pod: PodDemand, candidates: Sequence[Candidate]) -> list[float]:
        """The weighted sum of the two plugins' 0-100 scores per candidate."""
        demand = Resources(round(pod.cpu * 1000), round(pod.memory * _GIB), 0, 0, {})
        target = Pod("default", "candidate", requests=demand, non_zero_requests=demand)
        infos = []
        for c in candidates:
            used = Resources(round(c.used_cpu * 1000), round(c.used_memory * _GIB), 0, 0, {})
            filler = Pod(
                "default",
                f"used-{c.name}",
                node_name=c.name,
                phase="Running",
                requests=used,
                non_zero_requests=used,
            )
            allocatable = Resources(
                round(c.allocatable_cpu * 1000), round(c.allocatable_memory * _GIB), 0, 1000, {}
            )
            infos.append(NodeInfo.build(Node(c.name, allocatable=allocatable), (filler,)))
        state = CycleState(Snapshot.of(infos))
        scores = self.framework.run_scores(state, target, infos)
        return [float(s.score) for s in scores]


class LearnedScorer:
    """A trained model: ``forest`` (regression) or ``ranker`` (lambdarank) over FEATURES."""

    def __init__(self, kind: str, estimator: Any, meta: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.estimator = estimator
        self.meta = dict(meta or {})

    @property
    def name(self) -> str:
        """``forest`` or ``ranker``."""
        return self.kind

    def score(self, pod: PodDemand, candidates: Sequence[Candidate]) -> list[float]:
        """The model's prediction per candidate."""
        if not candidates:
            return []
        rows = [feature_row(pod, c) for c in candidates]
        return [float(v) for v in self.estimator.predict(feature_frame(rows))]


def feature_frame(rows: Sequence[Sequence[float]]) -> Any:
    """Rows as a DataFrame with the feature names (both libraries then check the columns)."""
    import pandas as pd  # noqa: PLC0415 - the learn extra

    return pd.DataFrame(list(rows), columns=list(FEATURES))


BUILTIN = ("random", "free-cpu", "default")


def save_model(scorer: LearnedScorer, path: Path) -> None:
    """Write a trained scorer with its format, kind and feature names."""
    payload = {
        "format": MODEL_FORMAT,
        "kind": scorer.kind,
        "features": list(FEATURES),
        "meta": scorer.meta,
        "estimator": scorer.estimator,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        pickle.dump(payload, out)


def load_scorer(spec: str, *, seed: int = 0) -> Scorer:
    """A built-in scorer by name (``free-cpu``, ``default``, ``random``) or a model file.

    A model file is a pickle written by ``opsche score train``: load only files you trust (as
    with any scikit-learn model). Raises ``ModelFileError`` with what is wrong.
    """
    if spec == "random":
        return RandomScorer(seed)
    if spec == "free-cpu":
        return FreeCpuScorer()
    if spec == "default":
        return DefaultScorer()
    path = Path(spec)
    if not path.is_file():
        raise ModelFileError(f"{spec}: no such model file (built-in scorers: {', '.join(BUILTIN)})")
    try:
        with path.open("rb") as source:
            payload = pickle.load(source)  # noqa: S301 - a model file the user trained
    except OSError as exc:
        raise ModelFileError(f"{spec}: cannot read: {exc.strerror or exc}") from None
    except ModuleNotFoundError as exc:
        raise ModelFileError(
            f"{spec}: needs {exc.name}, part of the learn extra (pip install 'opsche[learn]')"
        ) from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ValueError) as exc:
        raise ModelFileError(f"{spec}: not an opsche model file ({exc})") from None
    if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
        raise ModelFileError(f"{spec}: not an opsche model file (no {MODEL_FORMAT} header)")
    if payload.get("features") != list(FEATURES):
        raise ModelFileError(
            f"{spec}: trained on features {payload.get('features')}, this opsche computes "
            f"{list(FEATURES)}; train it again"
        )
    if payload.get("kind") not in ("forest", "ranker") or "estimator" not in payload:
        raise ModelFileError(f"{spec}: not an opsche model file (no kind or estimator)")
    return LearnedScorer(str(payload["kind"]), payload["estimator"], payload.get("meta"))
