"""What a person does through the API: find out who they are, decide an Approval.

The decision goes through the same API server path as ``kubectl patch``, so the admission
policy judges it the same way: this is a convenience, never a way around the checks.
"""

from __future__ import annotations

from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from minds.adapters.kube.client import server_message
from minds.domain.errors import NotFound
from minds.domain.resources.kinds import APPROVAL
from minds.domain.resources.plan import RELEASE_ANNOTATION


class DecisionRefused(RuntimeError):
    """The API server refused the decision; the message is the server's own reason."""


def whoami(api: client.ApiClient) -> str:
    """The authenticated username, as the API server sees it (SelfSubjectReview)."""
    review = client.AuthenticationV1Api(api).create_self_subject_review(
        client.V1SelfSubjectReview()
    )
    user = review.status.user_info if review.status else None
    if user is None or not user.username:
        raise DecisionRefused("the API server did not say who you are (SelfSubjectReview)")
    return str(user.username)


def decide(
    api: client.ApiClient,
    namespace: str,
    name: str,
    decision: str,
    decided_by: str,
    note: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"decision": decision, "decidedBy": decided_by}
    if note:
        spec["note"] = note
    try:
        return cast(
            dict[str, Any],
            client.CustomObjectsApi(api).patch_namespaced_custom_object(
                APPROVAL.group, APPROVAL.version, namespace, APPROVAL.plural, name, {"spec": spec}
            ),
        )
    except ApiException as exc:
        raise _refusal(exc, f"{APPROVAL.kind} {namespace}/{name}") from exc


def request_release(api: client.ApiClient, namespace: str, plan: str, step: str, by: str) -> None:
    """Ask the controller to release a blocked step: an annotation it acts on and removes."""
    from minds.domain.resources.kinds import PLAN

    body = {"metadata": {"annotations": {RELEASE_ANNOTATION: f"{step}:{by}"}}}
    try:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            PLAN.group, PLAN.version, namespace, PLAN.plural, plan, body
        )
    except ApiException as exc:
        raise _refusal(exc, f"{PLAN.kind} {namespace}/{plan}") from exc


def _refusal(exc: ApiException, what: str) -> Exception:
    """A missing object is not a refusal: the person mistyped a name, nobody said no."""
    if exc.status == 404:
        return NotFound(what)
    return DecisionRefused(server_message(exc))
