"""A grant the controller created counts only with the approved request it names behind it:
the engine reads that Approval (``unvouched``) before planning or policy may rely on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from minds.domain.resources.grant import CapabilityGrantSpec
from minds.domain.resources.kinds import APPROVAL
from minds.engine.grant_service import unvouched
from tests.fakes.resources import FakeResources

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
NS = "prod"


def approval(decided: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "kind": "grant",
        "mind": "caretaker",
        "capability": "logs.query",
        "target": "prod/atlas",
        "grant": {
            "targetPattern": "atlas",
            "durationSeconds": 600,
            "operationCap": 3,
            "reason": "diagnose atlas",
        },
        "explanation": {"what": "read logs", "why": "atlas restarts"},
        "origin": {"mind": "caretaker"},
        "expiresAt": (NOW + timedelta(hours=1)).isoformat(),
    }
    if decided:
        spec |= {"decision": "Approved", "decidedBy": "alice"}
    return {"metadata": {"name": "asked"}, "spec": spec}


def grant(created: str | None = NOW.isoformat()) -> tuple[dict[str, Any], CapabilityGrantSpec]:
    spec = CapabilityGrantSpec.model_validate(
        {
            "mind": "caretaker",
            "capability": "logs.query",
            "targetPattern": "atlas",
            "expiresAt": NOW + timedelta(seconds=600),
            "operationCap": 3,
            "reason": "diagnose atlas",
            "grantedBy": "alice",
            "approval": "asked",
        }
    )
    meta: dict[str, Any] = {"name": "asked", "namespace": NS}
    if created is not None:
        meta["creationTimestamp"] = created
    return {"metadata": meta, "spec": spec.to_k8s()}, spec


def test_the_approved_request_vouches_for_its_grant() -> None:
    resources = FakeResources()
    resources.create(APPROVAL, NS, approval(decided=True))
    assert unvouched(resources, *grant()) is None


def test_a_missing_or_undecided_request_vouches_for_nothing() -> None:
    resources = FakeResources()
    assert unvouched(resources, *grant()) == "approval asked does not exist"
    resources.create(APPROVAL, NS, approval(decided=False))
    assert unvouched(resources, *grant()) == "approval asked is not approved"


def test_a_grant_of_unknown_age_vouches_for_nothing() -> None:
    resources = FakeResources()
    resources.create(APPROVAL, NS, approval(decided=True))
    assert unvouched(resources, *grant(created=None)) == "its creation time is unknown"


def test_a_grant_made_by_a_person_reads_nothing() -> None:
    body, spec = grant()
    spec = spec.model_copy(update={"approval": None, "granted_by": "bob"})
    assert unvouched(FakeResources(), body, spec) is None
