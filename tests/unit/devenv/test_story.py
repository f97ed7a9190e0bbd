"""The demo's story: which plan step waits for a person, and what the person types."""

from __future__ import annotations

import json
import shlex
from typing import Any

from minds.devenv.story import PendingApproval, approve_commands, pending_approval


def plan(name: str, mind: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"mind": mind}, "status": {"steps": list(steps)}}


def test_the_step_awaiting_an_approval_of_the_mind_is_found() -> None:
    plans = [
        plan("other-r1", "other", {"key": "P1", "status": "awaiting_approval", "approvalRef": "x"}),
        plan("keeper-r1", "keeper", {"key": "D1", "status": "completed"}),
        plan(
            "keeper-r2",
            "keeper",
            {"key": "D1", "status": "completed"},
            {"key": "P1", "status": "awaiting_approval", "approvalRef": "keeper-p1-abc"},
        ),
    ]
    assert pending_approval(plans, "keeper") == PendingApproval("keeper-r2", "P1", "keeper-p1-abc")


def test_no_step_is_pending_until_an_approval_is_named() -> None:
    waiting_without_ref = plan("keeper-r1", "keeper", {"key": "P1", "status": "awaiting_approval"})
    assert pending_approval([waiting_without_ref], "keeper") is None
    assert pending_approval([{"metadata": {"name": "bare"}}], "keeper") is None


def test_the_patch_behind_the_plugin_decides_as_the_approver() -> None:
    plugin, patch = approve_commands("keeper-p1-abc")
    assert plugin == "kubectl minds approve keeper-p1-abc --context approver"
    words = shlex.split(patch)
    assert words[:3] == ["kubectl", "patch", "approval"]
    assert words[3] == "keeper-p1-abc"
    body = json.loads(words[words.index("-p") + 1])
    assert body == {"spec": {"decision": "Approved", "decidedBy": "approver"}}
