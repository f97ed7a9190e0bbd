"""The catalogue follows Prometheus' conventions and keeps its labels bounded."""

from __future__ import annotations

import re

import pytest

from minds.domain.metrics.catalogue import CATALOGUE, LABELS, STANDARD, MetricSpec, MetricType

NAME = re.compile(r"^minds_[a-z][a-z0-9_]*$")


@pytest.mark.parametrize("spec", CATALOGUE, ids=lambda s: s.name)
def test_names_and_labels(spec: MetricSpec) -> None:
    assert NAME.match(spec.name)
    assert set(spec.labels) <= LABELS, "a label outside the bounded set"
    assert spec.help.endswith(".")
    if spec.type is MetricType.COUNTER:
        assert spec.name.endswith("_total")
    else:
        assert not spec.name.endswith("_total")
    if spec.type is MetricType.HISTOGRAM:
        assert spec.name.endswith("_seconds")
        assert spec.buckets
        assert list(spec.buckets) == sorted(spec.buckets)


def test_names_are_unique() -> None:
    names = [spec.name for spec in CATALOGUE]
    assert len(names) == len(set(names))


def test_the_standard_series_are_named_apart_from_ours() -> None:
    names = [metric.name for metric in STANDARD]
    assert len(names) == len(set(names))
    for metric in STANDARD:
        assert not metric.name.startswith("minds_")
        assert metric.name.endswith("_total") == (metric.type is MetricType.COUNTER)
