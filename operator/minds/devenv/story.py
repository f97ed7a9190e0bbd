"""The demo's story on a cluster whose world runs (docs/world.md): a workload that runs, breaks,
and a mind that notices and asks a person before it restarts it.

Everything here is what a person would type with kubectl; the demo prints it as it goes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minds.devenv.kubectl import kubectl
from minds.devenv.process import wait_until

#: The label kwok's fault stages select (tests/cluster/kwok-stages.yaml).
FAULT_LABEL = "minds.dev/fault"


@dataclass(frozen=True)
class PendingApproval:
    """A plan of the mind whose step waits for a person's decision."""

    plan: str
    step: str
    approval: str


def deploy(kubeconfig: Path, manifest: Path, name: str, timeout: int) -> str:
    """Apply the workload and wait for its rollout; what kubectl said."""
    applied = kubectl(kubeconfig, "apply", "-f", str(manifest)).stdout.strip()
    rolled = kubectl(
        kubeconfig,
        "rollout",
        "status",
        f"deployment/{name}",
        f"--timeout={timeout}s",
        timeout=timeout + 10,
    ).stdout.strip()
    return f"{applied}\n{rolled}"


def break_pods(kubeconfig: Path, name: str, fault: str = "crashloop") -> str:
    """Break the workload's running Pods (a restart heals them); what kubectl said."""
    return kubectl(
        kubeconfig, "label", "pods", "-l", f"app={name}", f"{FAULT_LABEL}={fault}"
    ).stdout.strip()


def pending_approval(plans: list[dict[str, Any]], mind: str) -> PendingApproval | None:
    """The first step of ``mind``'s plans that waits for an approval, if any."""
    for plan in plans:
        if plan.get("spec", {}).get("mind") != mind:
            continue
        for step in plan.get("status", {}).get("steps", []):
            if step.get("status") == "awaiting_approval" and step.get("approvalRef"):
                return PendingApproval(plan["metadata"]["name"], step["key"], step["approvalRef"])
    return None


def wait_for_approval(kubeconfig: Path, mind: str, timeout: float) -> PendingApproval:
    """Wait until the mind has planned and asks a person (ProcessError at the deadline)."""
    found: list[PendingApproval] = []

    def asked() -> bool:
        listing = kubectl(kubeconfig, "get", "plans", "-o", "json").stdout
        pending = pending_approval(json.loads(listing)["items"], mind)
        found[:] = [pending] if pending else []
        return bool(found)

    wait_until(asked, timeout=timeout, what=f"{mind} asking for an approval", interval=2.0)
    return found[0]


def approve_commands(approval: str) -> tuple[str, str]:
    """What a person types to approve: the plugin, and the ``kubectl patch`` behind it."""
    patch = json.dumps({"spec": {"decision": "Approved", "decidedBy": "approver"}})
    return (
        f"kubectl minds approve {approval} --context approver",
        f"kubectl patch approval {approval} --context approver --type=merge -p '{patch}'",
    )
