"""The chart's controller RBAC and workload policy agree with the code that installs them."""

from __future__ import annotations

import yaml

from minds.adapters.drivers.kubernetes import RBAC_RULES
from minds.adapters.kube.workload_watch import RBAC_RULES as WATCH_RULES
from minds.devenv.install import (
    WORKLOAD_POLICY,
    WORKLOADS_ROLE,
    chart_files,
    controller_username,
    repo_root,
)

FILES = chart_files(repo_root())


def test_the_workloads_role_is_exactly_what_the_drivers_and_the_goal_watches_need() -> None:
    role = yaml.safe_load((FILES / "controller-workloads-clusterrole.yaml").read_text())

    assert role["metadata"]["name"] == WORKLOADS_ROLE
    assert role["rules"] == [dict(rule) for rule in (*RBAC_RULES, *WATCH_RULES)]


def test_the_controllers_cluster_role_reads_no_pods_logs_or_workloads() -> None:
    role = yaml.safe_load((FILES / "controller-clusterrole.yaml").read_text())
    resources = {r for rule in role["rules"] for r in rule["resources"]}

    assert not resources & {"pods", "pods/log", "deployments", "statefulsets", "daemonsets"}
    assert not any(r.endswith("/scale") or r == "*" for r in resources)


def test_the_policy_matches_the_controllers_service_account() -> None:
    policy = next(yaml.safe_load_all((FILES / WORKLOAD_POLICY).read_text()))
    (condition,) = policy["spec"]["matchConditions"]

    assert condition["expression"] == f"request.userInfo.username == '{controller_username()}'"
