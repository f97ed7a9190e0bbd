"""What the watch sets going at once when someone else changes an object."""

from __future__ import annotations

from types import SimpleNamespace

from minds.controller.watch import ON_NEWS
from minds.domain.resources.kinds import APPROVAL, PLAN


class _Plans:
    def __init__(self) -> None:
        self.woken: list[tuple[str, str]] = []

    def wake(self, namespace: str, name: str) -> None:
        self.woken.append((namespace, name))


def _memo() -> SimpleNamespace:
    return SimpleNamespace(plans=_Plans())


def test_a_decision_wakes_the_plan_that_asked() -> None:
    memo = _memo()
    approval = {
        "metadata": {"namespace": "shop", "name": "heal-p1-1"},
        "spec": {"origin": {"plan": "heal"}, "decision": "Approved"},
    }
    ON_NEWS[APPROVAL.plural](memo, approval)  # type: ignore[arg-type]
    assert memo.plans.woken == [("shop", "heal")]


def test_an_approval_that_names_no_plan_wakes_nothing() -> None:
    memo = _memo()
    ON_NEWS[APPROVAL.plural](memo, {"metadata": {"namespace": "shop"}, "spec": {}})  # type: ignore[arg-type]
    assert memo.plans.woken == []


def test_a_plan_changed_by_someone_else_looks_again() -> None:
    memo = _memo()
    ON_NEWS[PLAN.plural](memo, {"metadata": {"namespace": "shop", "name": "heal"}})  # type: ignore[arg-type]
    assert memo.plans.woken == [("shop", "heal")]
