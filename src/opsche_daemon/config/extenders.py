"""The ``extenders:`` list, read as KubeSchedulerConfiguration reads it.

An extender is an HTTP service the scheduler asks to filter and to score nodes for a pod (the
kube-scheduler extender protocol). opsche accepts the same fragment of a config file as
kube-scheduler, with the same field names, defaults and validation messages, so one fragment
behaves the same under both; the verbs opsche does not implement (``preemptVerb``, ``bindVerb``)
are refused by name rather than ignored, because silently skipping an extender's preemption or
binding would change where pods go.

Defaults and rules are upstream's: ``httpTimeout`` 5s when unset (``DefaultExtenderTimeout``), a
``prioritizeVerb`` needs a positive ``weight``, managed resources must be extended resource names
and unique across extenders. ``httpTimeout`` is a Go duration string (``"500ms"``, ``"1m30s"``) as
in kube-scheduler's file; a bare number is refused, because kube-scheduler would refuse it too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opsche_daemon.config.schema import show

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT_S",
    "ExtenderSettings",
    "ExtenderTLS",
    "parse_duration",
    "parse_extenders",
]

# kube-scheduler's DefaultExtenderTimeout (pkg/scheduler/extender.go).
DEFAULT_EXTENDER_TIMEOUT_S = 5.0

_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "bindVerb",
    "weight",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile")
_TLS_DATA_FIELDS = ("certData", "keyData", "caData")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
# An extended resource name: a domain prefix outside kubernetes.io, a slash, a name
# (validateExtendedResourceName: qualified, not in the default namespace, not requests.*).
_QUALIFIED = re.compile(
    r"^(?:[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


@dataclass(frozen=True)
class ExtenderTLS:
    """``tlsConfig``: how to reach an HTTPS extender (file paths, as kube-scheduler's)."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""


@dataclass(frozen=True)
class ExtenderSettings:
    """One entry of ``extenders:``; field names in the file are kube-scheduler's."""

    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls: ExtenderTLS | None = None
    http_timeout_s: float = DEFAULT_EXTENDER_TIMEOUT_S
    node_cache_capable: bool = False
    managed_resources: tuple[str, ...] = ()
    # Managed resources with ignoredByScheduler: NodeResourcesFit does not count them.
    ignored_resources: tuple[str, ...] = ()
    ignorable: bool = False

    @property
    def name(self) -> str:
        """How logs and metrics name it: its URL prefix, as upstream's ``Name()``."""
        return self.url_prefix


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration string (``"1m30s"``, ``"250ms"``, ``"0"``), or None if invalid."""
    if text == "0":
        return 0.0
    pairs = list(_DURATION.finditer(text))
    if not pairs or "".join(m.group(0) for m in pairs) != text:
        return None
    return sum(float(m.group(1)) * _UNITS[m.group(2)] for m in pairs)


def parse_extenders(name: str, raw: Any, problems: list[str]) -> tuple[ExtenderSettings, ...]:
    """The ``extenders`` list; every problem is appended to ``problems`` (bad entries dropped)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(f"{name}: expected a list of extenders, got {show(raw)}")
        return ()
    extenders: list[ExtenderSettings] = []
    managed_seen: set[str] = set()
    for index, entry in enumerate(raw):
        where = f"{name}[{index}]"
        before = len(problems)
        extender = _extender(where, entry, problems, managed_seen)
        if extender is not None and len(problems) == before:
            extenders.append(extender)
    return tuple(extenders)


def _extender(
    where: str, entry: Any, problems: list[str], managed_seen: set[str]
) -> ExtenderSettings | None:
    if not isinstance(entry, Mapping):
        problems.append(f"{where}: expected a mapping with urlPrefix, got {show(entry)}")
        return None
    problems += [
        f"{where}.{key}: unknown field, got {show(value)}"
        for key, value in entry.items()
        if key not in _FIELDS
    ]
    for verb in ("preemptVerb", "bindVerb"):
        if entry.get(verb):
            problems.append(
                f"{where}.{verb}: opsche does not call extenders to "
                f"{'preempt' if verb == 'preemptVerb' else 'bind'}; remove it (kube-scheduler "
                "would use it, so opsche refuses the extender rather than ignore it)"
            )
    url = _text(where, entry, "urlPrefix", problems)
    if url is not None and not url:
        problems.append(f"{where}.urlPrefix: required, the extender's base URL")
    elif url and not re.match(r"^https?://", url):
        problems.append(f"{where}.urlPrefix: expected an http:// or https:// URL, got {show(url)}")
    filter_verb = _text(where, entry, "filterVerb", problems) or ""
    prioritize_verb = _text(where, entry, "prioritizeVerb", problems) or ""
    weight = entry.get("weight", 0)
    if isinstance(weight, bool) or not isinstance(weight, int):
        problems.append(f"{where}.weight: expected an integer, got {show(weight)}")
        weight = 0
    elif prioritize_verb and weight <= 0:
        problems.append(
            f"{where}.weight: Invalid value: {weight}: must have a positive weight applied to it"
        )
    flags = {key: _flag(where, entry, key, problems) for key in _BOOLEANS}
    timeout = _timeout(where, entry.get("httpTimeout"), problems)
    tls = _tls(f"{where}.tlsConfig", entry.get("tlsConfig"), problems)
    managed, ignored = _managed(f"{where}.managedResources", entry, problems, managed_seen)
    if url is None:
        return None
    return ExtenderSettings(
        url_prefix=url,
        filter_verb=filter_verb,
        prioritize_verb=prioritize_verb,
        weight=weight,
        enable_https=flags["enableHTTPS"],
        tls=tls,
        http_timeout_s=timeout,
        node_cache_capable=flags["nodeCacheCapable"],
        managed_resources=managed,
        ignored_resources=ignored,
        ignorable=flags["ignorable"],
    )


_BOOLEANS = ("enableHTTPS", "nodeCacheCapable", "ignorable")


def _text(where: str, entry: Mapping[str, Any], key: str, problems: list[str]) -> str | None:
    value = entry.get(key) or ""  # null reads as "", as Go's decoder reads it
    if not isinstance(value, str):
        problems.append(f"{where}.{key}: expected a string, got {show(value)}")
        return None
    return value


def _flag(where: str, entry: Mapping[str, Any], key: str, problems: list[str]) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        problems.append(f"{where}.{key}: expected true or false, got {show(value)}")
        return False
    return value


def _timeout(where: str, raw: Any, problems: list[str]) -> float:
    if raw is None:
        return DEFAULT_EXTENDER_TIMEOUT_S
    seconds = parse_duration(raw) if isinstance(raw, str) else None
    if seconds is None:
        problems.append(
            f'{where}.httpTimeout: expected a duration such as "5s" or "500ms", got {show(raw)}'
        )
        return DEFAULT_EXTENDER_TIMEOUT_S
    # Upstream: a zero timeout means the default, not "no timeout".
    return seconds or DEFAULT_EXTENDER_TIMEOUT_S


def _tls(where: str, raw: Any, problems: list[str]) -> ExtenderTLS | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected a mapping, got {show(raw)}")
        return None
    for key, value in raw.items():
        if key in _TLS_DATA_FIELDS:
            problems.append(
                f"{where}.{key}: not supported by opsche; use {key.replace('Data', 'File')} "
                "(a path to the PEM file)"
            )
        elif key not in _TLS_FIELDS:
            problems.append(f"{where}.{key}: unknown field, got {show(value)}")
    values = {key: raw.get(key, "") for key in _TLS_FIELDS[1:]}
    for key, value in values.items():
        if not isinstance(value, str):
            problems.append(f"{where}.{key}: expected a string, got {show(value)}")
    insecure = raw.get("insecure", False)
    if not isinstance(insecure, bool):
        problems.append(f"{where}.insecure: expected true or false, got {show(insecure)}")
        insecure = False
    return ExtenderTLS(
        insecure=insecure,
        server_name=str(values["serverName"] or ""),
        cert_file=str(values["certFile"] or ""),
        key_file=str(values["keyFile"] or ""),
        ca_file=str(values["caFile"] or ""),
    )


def _managed(
    where: str, entry: Mapping[str, Any], problems: list[str], seen: set[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    raw = entry.get("managedResources")
    if raw is None:
        return (), ()
    if not isinstance(raw, list):
        problems.append(
            f"{where}: expected a list of {{name, ignoredByScheduler}}, got {show(raw)}"
        )
        return (), ()
    names: list[str] = []
    ignored: list[str] = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            problems.append(
                f"{at}: expected {{name: ..., ignoredByScheduler: ...}}, got {show(item)}"
            )
            continue
        problems += [
            f"{at}.{key}: unknown field, got {show(value)}"
            for key, value in item.items()
            if key not in ("name", "ignoredByScheduler")
        ]
        resource = str(item["name"])
        why = _extended_resource_problem(resource)
        if why:
            problems.append(f"{at}.name: Invalid value: {show(resource)}: {why}")
            continue
        if resource in seen:
            problems.append(
                f"{at}.name: Invalid value: {show(resource)}: duplicate extender managed "
                "resource name"
            )
            continue
        seen.add(resource)
        names.append(resource)
        flag = item.get("ignoredByScheduler", False)
        if not isinstance(flag, bool):
            problems.append(f"{at}.ignoredByScheduler: expected true or false, got {show(flag)}")
        elif flag:
            ignored.append(resource)
    return tuple(names), tuple(ignored)


def _extended_resource_problem(name: str) -> str | None:
    """Why ``name`` is not an extended resource name (upstream's rules), or None."""
    if not _QUALIFIED.match(name) or "/" not in name:
        return "must be a resource name qualified by a domain (e.g. example.com/gpu)"
    domain, short = name.split("/", 1)
    if "kubernetes.io/" in name:
        return "must not be in the kubernetes.io namespace (that is the API's own)"
    if len(domain) > 253 or len(short) > 63:
        return "must have a prefix of at most 253 and a name of at most 63 characters"
    if name.startswith("requests."):
        return "must not start with requests."
    return None
