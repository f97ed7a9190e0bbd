"""Releasing a blocked step is a person's decision: the controller parses the annotation whole
and checks the name against the Mind before it acts (admission holds the same rules; this is
the controller's own hold, for a value admitted without them)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from minds.domain.approvals import releaser_refused
from minds.domain.resources.approval import Approvers
from minds.domain.resources.plan import Release, ReleaseRefused, read_release

STEPS = ("P1", "V1")


def test_a_release_names_a_step_and_a_person() -> None:
    assert read_release("P1:approver", STEPS) == Release("P1", "approver")


def test_the_name_is_everything_after_the_first_colon() -> None:
    """The suffix trick: ``P1:alice:approver`` is not a release by ``approver``."""
    assert read_release("P1:alice:approver", STEPS) == Release("P1", "alice:approver")


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param("P1", "must be STEP:USERNAME", id="no-colon"),
        pytest.param("P1:", "must be STEP:USERNAME", id="no-name"),
        pytest.param(":approver", "must be STEP:USERNAME", id="no-step"),
        pytest.param("X9:approver", "names step 'X9', which this plan does not have", id="unknown"),
        pytest.param("p1:approver", "names step 'p1'", id="case"),
        pytest.param(
            "P1:system:serviceaccount:minds-system:minds-controller",
            "is a service account",
            id="controller",
        ),
        pytest.param("P1:system:serviceaccount:team:deployer", "is a service account", id="sa"),
    ],
)
def test_a_value_that_does_not_parse_is_refused(value: str, said: str) -> None:
    refused = read_release(value, STEPS)
    assert isinstance(refused, ReleaseRefused)
    assert said in refused.reason


@given(st.text(max_size=40))
def test_whatever_is_written_either_parses_whole_or_is_refused(value: str) -> None:
    parsed = read_release(value, STEPS)
    if isinstance(parsed, Release):
        assert f"{parsed.step}:{parsed.by}" == value
        assert parsed.step in STEPS
        assert parsed.by
        assert not parsed.by.startswith("system:serviceaccount:")
    else:
        assert parsed.reason


def test_only_an_approver_of_the_mind_releases() -> None:
    named = Approvers(users=["approver"])
    assert releaser_refused("approver", "keeper", named) is None
    assert releaser_refused("alice", "keeper", named) == (
        "alice is not an approver of mind keeper (spec.approvers)"
    )
    # A Mind that names nobody lets nobody release (as it lets nobody approve).
    assert releaser_refused("approver", "keeper", Approvers()) is not None


def test_group_membership_is_admissions_to_know() -> None:
    """The controller does not know the requester's groups; a Mind that names groups leaves
    that check to admission, which sees them."""
    assert releaser_refused("erin", "keeper", Approvers(groups=["minds:approvers"])) is None


def test_without_a_mind_nobody_releases() -> None:
    assert "is gone" in (releaser_refused("approver", "keeper", None) or "")
    assert "names no mind" in (releaser_refused("approver", None, Approvers(users=["a"])) or "")
