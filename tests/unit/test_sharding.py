"""Which namespaces a controller shard serves, and which of its replicas acts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from minds.cli.main import app
from minds.domain.sharding import (
    NAMESPACES_ANNOTATION,
    ShardError,
    replica_priority,
    shard_to_serve,
)


def peering(name: str, namespaces: str | None) -> dict[str, Any]:
    annotations = {} if namespaces is None else {NAMESPACES_ANNOTATION: namespaces}
    return {"metadata": {"name": name, "annotations": annotations}, "status": {}}


def test_a_shard_serves_the_namespaces_its_peering_object_declares() -> None:
    objects = [peering("team-a", " payments, checkout ,"), peering("team-b", "search")]
    served = shard_to_serve("team-a", objects)
    assert served.namespaces == {"payments", "checkout"}


def test_other_operators_peerings_are_not_shards() -> None:
    """kopf peerings of other operators carry no annotation: never an overlap, never ours."""
    objects = [peering("team-a", "payments"), peering("default", None)]
    assert shard_to_serve("team-a", objects).namespaces == {"payments"}
    with pytest.raises(ShardError, match="no ClusterKopfPeering named 'default'"):
        shard_to_serve("default", objects)


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ([], "no ClusterKopfPeering named 'team-a' declares its namespaces"),
        ([peering("team-a", " , ")], f"{NAMESPACES_ANNOTATION} names no namespace"),
        ([peering("team-a", "payments,Team B")], "holds 'Team B', which is not a namespace"),
        (
            [peering("team-a", "payments,search"), peering("team-b", "search,payments")],
            "shard 'team-a' overlaps shard 'team-b' on namespace(s) payments, search",
        ),
        # Another shard's broken declaration stops this one too: overlap cannot be ruled out.
        (
            [peering("team-a", "payments"), peering("team-b", "Search")],
            "shard 'team-b': minds.dev/namespaces holds 'Search'",
        ),
    ],
)
def test_unsound_declarations_are_refused_with_the_reason(
    objects: list[dict[str, Any]], message: str
) -> None:
    with pytest.raises(ShardError) as refused:
        shard_to_serve("team-a", objects)
    assert message in str(refused.value)


def test_the_longest_running_replica_has_the_highest_priority() -> None:
    started = datetime(2026, 12, 3, 11, 0, tzinfo=UTC)
    older = replica_priority(started, jitter=999)
    younger = replica_priority(started + timedelta(milliseconds=1), jitter=0)
    assert older > younger
    same_moment = {replica_priority(started, jitter=j) for j in range(1000)}
    assert len(same_moment) == 1000  # equal priorities would pause every replica
    assert abs(older) < 2**53  # exact in JSON, where kopf keeps it
    with pytest.raises(ValueError, match="jitter"):
        replica_priority(started, jitter=1000)


def test_a_shard_takes_no_namespace_from_the_command_line() -> None:
    result = CliRunner().invoke(
        app, ["controller", "run", "--shard", "team-a", "--namespace", "payments"]
    )
    assert result.exit_code == 2
    assert "--namespace and --shard" in result.output
