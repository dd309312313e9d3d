"""ImageLocality: prefer nodes that already hold the pod's container images.

The score follows upstream: for each container image (init containers and regular containers)
present on the node, add ``int(size * nodes_with_image / all_nodes)``; the spread factor keeps
every pod from piling onto the one node that happens to have an image cached when most nodes have
it anyway. The sum is clamped to ``[23 MiB, 1000 MiB * number of containers]`` and mapped
linearly onto 0..100 with Go integer division. Small images (under the 23 MiB minimum) therefore
score nothing, and a single huge image cannot dominate a many-container pod.

Image names are matched as upstream does, without registry normalisation: a name whose last
``:`` is not after its last ``/`` gets ``:latest`` appended (so ``gcr.io/pause`` matches a node's
``gcr.io/pause:latest`` but ``nginx`` does not match ``docker.io/library/nginx:latest``).

Differences we accept: upstream keeps one size per image name cluster-wide (from the first node
that reported it); we use the size the scored node reports, which is the same unless nodes
disagree. Upstream also counts image *volumes* (``volumes[].image.reference``); ``Pod`` does not
carry them, so they are not counted. The per-image node counts are computed once per cycle from
``state.snapshot`` and cached in the CycleState on first use (upstream has no PreScore for this
plugin, so we keep none either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opsche_daemon.framework.interface import MAX_NODE_SCORE, CycleState, NodeScore, Status
from opsche_daemon.framework.plugins.helpers import go_div
from opsche_daemon.model.node import NodeInfo
from opsche_daemon.model.pod import Pod

__all__ = [
    "MAX_CONTAINER_THRESHOLD",
    "MIN_THRESHOLD",
    "ImageLocality",
    "calculate_priority",
    "normalized_image_name",
]

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB

_STATE_KEY = "ImageLocality/nodesWithImage"


def normalized_image_name(name: str) -> str:
    """Append ``:latest`` when the image reference has no tag (upstream's rule)."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Clamp the summed image scores and map them linearly onto 0..100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    return go_div(MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD)


class ImageLocality:
    """Score: favour nodes that already have large images the pod uses."""

    NAME = "ImageLocality"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        del args  # upstream takes no arguments

    @property
    def name(self) -> str:
        """The registered plugin name."""
        return self.NAME

    def _nodes_with_image(self, state: CycleState, images: tuple[str, ...]) -> dict[str, int]:
        cached: dict[str, int] | None = state.data.get(_STATE_KEY)
        if cached is not None:
            return cached
        counts = dict.fromkeys(images, 0)
        for info in state.snapshot.node_infos():
            for image in counts:
                if image in info.node.images:
                    counts[image] += 1
        state.write(_STATE_KEY, counts)
        return counts

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> tuple[int, Status]:
        """0..100 by how much of the pod's image data the node already holds."""
        images = tuple(normalized_image_name(image) for image in pod.images)
        total_nodes = len(state.snapshot)
        node_images = node.node.images
        total = 0
        if total_nodes:
            counts = self._nodes_with_image(state, images)
            for image in images:
                size = node_images.get(image)
                if size is not None:
                    spread = float(counts.get(image, 0)) / float(total_nodes)
                    total += int(float(size) * spread)
        return calculate_priority(total, len(pod.images)), Status.success()

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status:
        """Scores are already 0..100 (upstream has no ScoreExtensions): nothing to do."""
        return Status.success()
