"""The extenders list reads as kube-scheduler reads it: same fields, defaults and messages."""

from typing import Any

import pytest

from opsche_daemon.config import ConfigError, ExtenderSettings, parse_config
from opsche_daemon.config.extenders import DEFAULT_EXTENDER_TIMEOUT_S, parse_duration


def problems(extenders: Any) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        parse_config({"extenders": extenders})
    return raised.value.problems


def test_a_full_entry_keeps_every_field() -> None:
    config = parse_config(
        {
            "extenders": [
                {
                    "urlPrefix": "http://127.0.0.1:8888/scheduler",
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "weight": 3,
                    "httpTimeout": "1m30s",
                    "nodeCacheCapable": True,
                    "ignorable": True,
                    "managedResources": [
                        {"name": "example.com/gpu", "ignoredByScheduler": True},
                        {"name": "example.com/fpga"},
                    ],
                }
            ]
        }
    )
    assert config.extenders == (
        ExtenderSettings(
            url_prefix="http://127.0.0.1:8888/scheduler",
            filter_verb="filter",
            prioritize_verb="prioritize",
            weight=3,
            http_timeout_s=90.0,
            node_cache_capable=True,
            managed_resources=("example.com/gpu", "example.com/fpga"),
            ignored_resources=("example.com/gpu",),
            ignorable=True,
        ),
    )


def test_defaults_are_upstreams() -> None:
    (extender,) = parse_config({"extenders": [{"urlPrefix": "http://127.0.0.1:1"}]}).extenders
    assert extender.http_timeout_s == DEFAULT_EXTENDER_TIMEOUT_S == 5.0
    assert not extender.ignorable and not extender.node_cache_capable
    assert extender.weight == 0 and extender.filter_verb == extender.prioritize_verb == ""
    assert parse_config({}).extenders == ()


def test_a_zero_timeout_means_the_default() -> None:
    (extender,) = parse_config(
        {"extenders": [{"urlPrefix": "http://127.0.0.1:1", "httpTimeout": "0s"}]}
    ).extenders
    assert extender.http_timeout_s == 5.0


def test_enable_https_is_the_flag_only() -> None:
    # An https URL is still spoken over TLS (and verified); enableHTTPS is what, without a
    # caFile, turns verification off, as upstream. So it must not be implied by the URL.
    (extender,) = parse_config({"extenders": [{"urlPrefix": "https://127.0.0.1:1"}]}).extenders
    assert not extender.enable_https
    (flagged,) = parse_config(
        {"extenders": [{"urlPrefix": "https://127.0.0.1:1", "enableHTTPS": True}]}
    ).extenders
    assert flagged.enable_https


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5s", 5.0), ("250ms", 0.25), ("1m30s", 90.0), ("1.5s", 1.5), ("2h", 7200.0), ("0", 0.0)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "5 s", "s", "-1s", "1x", "1s2"])
def test_bad_durations(text: str) -> None:
    assert parse_duration(text) is None


def test_every_mistake_is_named() -> None:
    found = problems(
        [
            {
                "urlPrefix": "127.0.0.1:8888",
                "prioritizeVerb": "prioritize",
                "httpTimeout": 5,
                "weigth": 2,
                "ignorable": "yes",
            },
            {"filterVerb": "filter"},
        ]
    )
    assert found == [
        "extenders[0].weigth: unknown field, got 2",
        "extenders[0].urlPrefix: expected an http:// or https:// URL, got '127.0.0.1:8888'",
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
        "extenders[0].ignorable: expected true or false, got 'yes'",
        'extenders[0].httpTimeout: expected a duration such as "5s" or "500ms", got 5',
        "extenders[1].urlPrefix: required, the extender's base URL",
    ]


def test_a_negative_weight_has_upstreams_message() -> None:
    found = problems([{"urlPrefix": "http://a", "prioritizeVerb": "p", "weight": -2}])
    assert found == [
        "extenders[0].weight: Invalid value: -2: must have a positive weight applied to it"
    ]


def test_preempt_and_bind_verbs_are_refused_not_ignored() -> None:
    found = problems([{"urlPrefix": "http://a", "preemptVerb": "preempt", "bindVerb": "bind"}])
    assert len(found) == 2
    assert found[0].startswith(
        "extenders[0].preemptVerb: opsche does not call extenders to preempt"
    )
    assert found[1].startswith("extenders[0].bindVerb: opsche does not call extenders to bind")


def test_managed_resources_are_extended_and_unique_across_extenders() -> None:
    found = problems(
        [
            {"urlPrefix": "http://a", "managedResources": [{"name": "cpu"}]},
            {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/gpu"}]},
            {
                "urlPrefix": "http://c",
                "managedResources": [
                    {"name": "example.com/gpu"},
                    {"name": "kubernetes.io/thing"},
                ],
            },
        ]
    )
    assert found == [
        "extenders[0].managedResources[0].name: Invalid value: 'cpu': must be a resource name "
        "qualified by a domain (e.g. example.com/gpu)",
        "extenders[2].managedResources[0].name: Invalid value: 'example.com/gpu': duplicate "
        "extender managed resource name",
        "extenders[2].managedResources[1].name: Invalid value: 'kubernetes.io/thing': must not "
        "be in the kubernetes.io namespace (that is the API's own)",
    ]


def test_tls_data_fields_point_to_the_file_fields() -> None:
    found = problems([{"urlPrefix": "https://a", "tlsConfig": {"caData": "abc", "foo": 1}}])
    assert found == [
        "extenders[0].tlsConfig.caData: not supported by opsche; use caFile (a path to the PEM "
        "file)",
        "extenders[0].tlsConfig.foo: unknown field, got 1",
    ]


def test_not_a_list() -> None:
    assert problems({"urlPrefix": "http://a"}) == [
        "extenders: expected a list of extenders, got {'urlPrefix': 'http://a'}"
    ]
