"""Forensic why: walk the ledger from an action back to what started it.

An executed step leads to its plan, the plan to its intention, the intention to the formation
decision that formed it, and that to the want it served, whose derivation names the
observation, prediction error, goal, request or commitment that started it. Each link carries
the decision's own inputs and scores, as recorded when it was made: nothing is reconstructed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from minds.domain.beliefs import PredictionStatus
from minds.domain.intentions import intention_id
from minds.domain.resources.kinds import APPROVAL, MIND, PLAN
from minds.domain.series import SERIES_EVENTS, Series, SeriesKind, latest, tell
from minds.domain.volition.wants import STATUS
from minds.engine.ports import LedgerReading, ResourcePort

#: The ledger rows that say how a plan ended badly, the first with a reason telling why.
_ENDED = ("plan_failed", "plan_reconsidered")


@dataclass
class Link:
    """One step of the answer: what it is, a one-line account, and the recorded detail."""

    kind: str
    name: str
    summary: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "summary": self.summary,
            "detail": self.detail,
        }


class Explainer:
    def __init__(self, *, resources: ResourcePort, ledger: LedgerReading) -> None:
        self._resources = resources
        self._ledger = ledger

    def why(self, namespace: str, kind: str, name: str, step: str | None = None) -> list[Link]:
        kind = kind.lower().rstrip("s")
        if kind == "approval":
            approval = self._resources.get(APPROVAL, namespace, name)
            origin = approval["spec"].get("origin") or {}
            links = [self._approval_link(approval)]
            if origin.get("plan"):
                links += self.why(namespace, "plan", origin["plan"], origin.get("step"))
            return links
        if kind != "plan":
            raise ValueError(f"why explains plans and approvals, not {kind!r}")
        return self._plan_chain(namespace, name, step)

    def _approval_link(self, approval: dict[str, Any]) -> Link:
        spec, status = approval["spec"], approval.get("status") or {}
        who = spec.get("decidedBy")
        summary = f"{spec.get('capability')} on {spec.get('target')}: {status.get('phase')}"
        if who:
            summary += f" ({spec.get('decision')} by {who})"
        return Link(
            "Approval",
            approval["metadata"]["name"],
            summary,
            {"explanation": spec.get("explanation"), "note": spec.get("note")},
        )

    def _plan_chain(self, namespace: str, name: str, step: str | None) -> list[Link]:
        links: list[Link] = []
        plan = self._resources.get(PLAN, namespace, name)
        spec = plan.get("spec") or {}
        status = plan.get("status") or {}
        if step:
            links += self._step_links(namespace, name, step, spec, status)
        links.append(
            Link(
                "Plan",
                name,
                f"{spec.get('strategy')} plan (revision {spec.get('revision')}, origin "
                f"{spec.get('origin')}) for: {spec.get('objective')}; phase {status.get('phase')}",
                {"supersedes": spec.get("supersedes"), "alternatives": spec.get("alternatives")},
            )
        )
        if spec.get("supersedes") and spec.get("mind"):
            links += self._superseded(namespace, spec["mind"], spec["supersedes"])
        found = spec.get("intention")
        if not found and spec.get("origin") == "operator":
            # A person's plan names no intention: the executor gave it an implicit one.
            implicit = intention_id("plan", plan["metadata"]["uid"])
            found = implicit if self._ledger.intention(implicit) else None
        if not found:
            return links
        links += self._intention_chain(namespace, found)
        return links

    def _superseded(self, namespace: str, mind: str, old: str) -> list[Link]:
        """The revision this one replaced: why it failed, and the predictions it made that
        the world refuted (what the mind learnt from it), from the ledger: the old Plan may
        be gone."""
        ended = [
            e
            for e in self._ledger.events(namespace=namespace, mind=mind, type=_ENDED)
            if e.subject.name == old
        ]
        reason = next((str(e.payload["reason"]) for e in ended if e.payload.get("reason")), None)
        links = [
            Link(
                "Plan",
                old,
                "the revision before this one failed"
                + (f": {reason[:300]}" if reason else "")
                + "; this revision replaced it",
                {"ended": [e.type for e in ended]},
            )
        ]
        for prediction in self._ledger.predictions(namespace, mind, PredictionStatus.REFUTED):
            if prediction.plan != old:
                continue
            belief = self._ledger.belief(prediction.belief_id) if prediction.belief_id else None
            expected = belief.statement if belief is not None else "the expected outcome"
            seen = (prediction.observation or {}).get("summary")
            links.append(
                Link(
                    "Prediction",
                    prediction.id,
                    f"refuted: {expected} (step {prediction.step}, confidence "
                    f"{prediction.confidence:.2f})" + (f"; observed: {seen}" if seen else ""),
                    {"criteria": prediction.criteria, "observation": prediction.observation},
                )
            )
        return links

    def _step_links(
        self, namespace: str, plan: str, step: str, spec: dict[str, Any], status: dict[str, Any]
    ) -> list[Link]:
        links: list[Link] = []
        state: dict[str, Any] = next(
            (s for s in status.get("steps") or [] if s.get("key") == step), {}
        )
        definition: dict[str, Any] = next(
            (s for s in spec.get("steps") or [] if s.get("key") == step), {}
        )
        links.append(
            Link(
                "Step",
                f"{plan}/{step}",
                f"{definition.get('title')}: {state.get('status', 'pending')}"
                + (f" ({state['reason']})" if state.get("reason") else ""),
                {"observation": state.get("observation"), "attempts": state.get("attempts")},
            )
        )
        for execution in self._ledger.executions(namespace=namespace):
            if execution.origin.plan != plan or execution.origin.step != step:
                continue
            # Checks made to verify this step carry a suffixed plan uid: they observed the
            # outcome, they are not what caused it.
            is_check = ":" in (execution.origin.plan_uid or "")
            found = self._ledger.execution(execution.origin_key)
            outcome = found[1] if found else None
            authority = execution.authority
            granted = (
                f"approval {authority.get('approval')}"
                if authority.get("approval")
                else f"grant {authority.get('grant')}"
                if authority.get("grant")
                else "policy"
            )
            links.append(
                Link(
                    "Check" if is_check else "Execution",
                    str(execution.id),
                    f"{execution.capability} on {execution.target}, authorised by {granted}: "
                    + (outcome.summary if outcome else "outcome unknown"),
                    {"trail": authority.get("trail"), "attempt": execution.origin.attempt},
                )
            )
        return links

    def _intention_chain(self, namespace: str, intention_id: str) -> list[Link]:
        links: list[Link] = []
        intention = self._ledger.intention(intention_id)
        if intention is None:
            return [Link("Intention", intention_id, "not in the ledger")]
        links.append(
            Link(
                "Intention",
                intention.id,
                f"{intention.objective} ({intention.status.value}"
                + (f": {intention.reason}" if intention.reason else "")
                + ")",
                {"replans": intention.replans, "failedStrategies": intention.failed_strategies},
            )
        )
        for decision in self._ledger.decisions(
            namespace=namespace, subject=("intention", intention.id)
        ):
            links.append(
                Link(
                    "Decision",
                    f"{decision.kind}#{decision.id}",
                    f"{decision.kind}: {decision.outcome}" + _reason(decision.data),
                    decision.data,
                )
            )
            want = decision.subjects.get("want")
            if decision.kind == "formation" and want:
                links += self._want_chain(namespace, want)
        if intention.parent_id:
            links += self._intention_chain(namespace, intention.parent_id)
        return links

    def _want_chain(self, namespace: str, want_id: str) -> list[Link]:
        links: list[Link] = []
        for decision in self._ledger.decisions(namespace=namespace, subject=("want", want_id)):
            if decision.kind == "formation":
                continue
            inputs = decision.data.get("inputs") or {}
            origin = inputs.get("origin")
            links.append(
                Link(
                    "Want",
                    want_id,
                    f"{decision.kind}: {decision.outcome}"
                    + (f" (from {origin})" if origin else "")
                    + _reason(decision.data),
                    decision.data,
                )
            )
            if decision.kind == "derivation":
                links += self._observed(namespace, decision.mind, inputs, decision.decided_at)
        return links

    def _observed(
        self, namespace: str, mind: str, inputs: dict[str, Any], at: datetime
    ) -> list[Link]:
        """The mind's looks at the workload a want was derived from, up to the derivation: the
        look that found what it found (recorded in full), and before it the series of looks
        that found the same thing again and again (see ``minds.domain.series``)."""
        seen = inputs.get("observation") or {}
        if seen.get("capability") != STATUS or not seen.get("subject"):
            return []
        target = str(seen["subject"])
        looks = [
            e
            for e in self._ledger.executions(namespace=namespace, mind=mind, capability=STATUS)
            if e.origin.cycle and e.target == target and e.started_at <= at
        ]
        runs = {
            s.opened_by: s
            for s in series_of(self._ledger, namespace, mind)
            if s.kind is SeriesKind.OBSERVATION
        }
        links = []
        for look, before in zip(reversed(looks[-2:]), ("", "before it, "), strict=False):
            found = self._ledger.execution(look.origin_key)
            summary = found[1].summary if found and found[1] else "outcome unknown"
            series = runs.get(look.origin_key)
            told = (
                tell(series)
                if series is not None
                else f"observed once at {look.started_at.isoformat()}"
            )
            links.append(
                Link(
                    "Observation",
                    str(look.id),
                    f"{before}{look.capability} on {target}: {told}: {summary}",
                    {"series": series.to_k8s() if series is not None else None},
                )
            )
        return links

    def timeline(self, namespace: str, mind: str) -> list[dict[str, Any]]:
        """Everything the mind did and chose, in order: ledger events and decisions merged, and
        each series of routine (``minds.domain.series``) as one item at its start, with a
        ``summary`` ("observed running 1,440 times between T1 and T2"). Raises NotFound for a
        name that is neither a Mind nor in the ledger (a deleted Mind keeps its history)."""
        rows = self._ledger.events(namespace=namespace, mind=mind)
        # A series' cuts and close are one line: the series as it stands last, at its start.
        items: list[dict[str, Any]] = [
            {
                "at": e.occurred_at.isoformat(),
                "what": e.type,
                "about": f"{e.subject.kind}/{e.subject.name}",
                "detail": e.payload,
            }
            for e in rows
            if e.type not in SERIES_EVENTS
        ]
        items += [
            {
                "at": d.decided_at.isoformat(),
                "what": f"decision:{d.kind}",
                "about": ", ".join(f"{k}={v}" for k, v in sorted(d.subjects.items())),
                "detail": {"outcome": d.outcome, **d.data},
            }
            for d in self._ledger.decisions(namespace=namespace, mind=mind)
        ]
        items += [
            {
                "at": s.first_seen.isoformat(),
                "what": f"{s.kind.value}_series",
                "about": s.subject if s.kind is SeriesKind.OBSERVATION else f"{MIND.kind}/{mind}",
                "detail": s.to_k8s(),
                "summary": tell(s),
            }
            for s in latest(rows, self._ledger.series(namespace, mind))
        ]
        if not items:
            self._resources.get(MIND, namespace, mind)
        return sorted(items, key=lambda item: item["at"])


def series_of(ledger: LedgerReading, namespace: str, mind: str) -> list[Series]:
    """Every series of the mind that counted more than its full record, as it stands last (the
    journal's rows of it, or the current one), oldest first."""
    rows = ledger.events(namespace=namespace, mind=mind, type=SERIES_EVENTS)
    return latest(rows, ledger.series(namespace, mind))


def _reason(data: dict[str, Any]) -> str:
    """The decision's own words and score, short enough for one line."""
    parts = []
    scores = data.get("scores") or {}
    if "score" in scores:
        parts.append(f"score {scores['score']:.2f}")
    if data.get("reason"):
        parts.append(str(data["reason"])[:160])
    return f" ({'; '.join(parts)})" if parts else ""
