from collections.abc import Iterable, Sequence

import pytest

from opsche_daemon.framework.interface import Code, NodeScore, ScorePlugin
from opsche_daemon.framework.plugins.image_locality import (
    ImageLocality,
    calculate_priority,
    normalized_image_name,
)
from opsche_daemon.model.pod import Pod
from tests.factories import api_node, api_pod, container, node_info, state_of

MB = 1024 * 1024
Images = Iterable[tuple[Iterable[str], int]]

# upstream image_locality_test.go node image lists
NODE_40_300_2000: Images = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10: Images = [
    (["gcr.io/250:latest"], 250 * MB),
    (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB),
]
NODE_600_40_900: Images = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900: Images = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30: Images = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40: Images = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]


def _pod(*images: str, init: Sequence[str] = ()) -> Pod:
    return api_pod(
        containers=[container(f"c{i}", image=img) for i, img in enumerate(images)],
        init_containers=[container(f"i{i}", image=img) for i, img in enumerate(init)],
    )


def _scores(incoming: Pod, node_images: Sequence[Images]) -> list[int]:
    infos = [node_info(api_node(f"node{i + 1}", images=imgs)) for i, imgs in enumerate(node_images)]
    plugin = ImageLocality()
    state = state_of(*infos)
    scores = []
    for i in infos:
        score, status = plugin.score(state, incoming, i)
        assert status.code == Code.SUCCESS
        scores.append(NodeScore(i.name, score))
    assert plugin.normalize_score(state, incoming, scores).ok
    return [s.score for s in scores]


def test_is_a_score_plugin() -> None:
    assert isinstance(ImageLocality(), ScorePlugin)
    assert ImageLocality().name == "ImageLocality"


@pytest.mark.parametrize(
    ("case", "images", "nodes", "expected"),
    [
        (
            "two images spread on two nodes, prefer the larger image one",
            ["gcr.io/40", "gcr.io/250"],
            [NODE_40_300_2000, NODE_250_10],
            [0, 5],
        ),
        (
            "two images on one node, prefer this node",
            ["gcr.io/40", "gcr.io/300"],
            [NODE_40_300_2000, NODE_250_10],
            [7, 0],
        ),
        (
            "if exceed limit, use limit",
            ["gcr.io/10", "gcr.io/4000"],
            [NODE_4000_30, NODE_250_10],
            [100, 0],
        ),
        (
            "if exceed limit, use limit (with node which has no images present)",
            ["gcr.io/10", "gcr.io/4000"],
            [NODE_4000_30, NODE_250_10, []],
            [66, 0, 0],
        ),
        (
            "pod with multiple large images, node2 is preferred",
            ["gcr.io/300", "gcr.io/600", "gcr.io/900"],
            [NODE_600_40_900, NODE_300_600_900, []],
            [32, 36, 0],
        ),
        (
            "pod with multiple small images",
            ["gcr.io/30", "gcr.io/40"],
            [NODE_20_30_40, NODE_4000_30],
            [1, 0],
        ),
    ],
)
def test_upstream_cases(
    case: str, images: list[str], nodes: list[Images], expected: list[int]
) -> None:
    # upstream TestImageLocalityPriority, case named by ``case``
    assert _scores(_pod(*images), nodes) == expected, case


def test_init_container_images_count() -> None:
    # upstream "include InitContainers: two images spread on two nodes, prefer the larger image
    # one": 300 MB on one of two nodes over 2 containers -> 100 * (150M - 23M) / (2000M - 23M)
    assert _scores(_pod("gcr.io/30", init=["gcr.io/300"]), [NODE_40_300_2000, NODE_20_30_40]) == [
        6,
        0,
    ]


def test_tagged_and_digest_images_are_matched_verbatim() -> None:
    tagged = [(["gcr.io/300:v1"], 300 * MB)]
    # one node of one: 300M over 1 container -> 100 * (300 - 23) / (1000 - 23) = 28
    assert _scores(_pod("gcr.io/300:v1"), [tagged]) == [28]
    # no registry normalisation: "nginx" is not "docker.io/library/nginx:latest"
    docker = [(["docker.io/library/nginx:latest"], 300 * MB)]
    assert _scores(_pod("nginx"), [docker]) == [0]


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("gcr.io/40", "gcr.io/40:latest"),
        ("gcr.io/40:v1", "gcr.io/40:v1"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("localhost:5000/app:1.0", "localhost:5000/app:1.0"),
        ("nginx", "nginx:latest"),
    ],
)
def test_normalized_image_name(name: str, normalized: str) -> None:
    assert normalized_image_name(name) == normalized


def test_calculate_priority_clamps() -> None:
    assert calculate_priority(0, 1) == 0
    assert calculate_priority(23 * MB, 1) == 0
    assert calculate_priority(5000 * MB, 2) == 100
    # 100 * (4000M/3 - 23M) / (2000M - 23M) = 66 (Go integer division)
    assert calculate_priority(4000 * MB // 3, 2) == 66
