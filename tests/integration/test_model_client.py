"""The model client against a real HTTP server on loopback that plays scripted answers.

No part of httpx is replaced: every test sends real requests to `ScriptedLLM`, and counts what
the server received. Only the client's waits between retries are recorded instead of slept,
so retry tests are fast and the delays themselves can be checked.
"""

from __future__ import annotations

import gzip
import json
import logging
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from minds.adapters.log_masking import MaskingFilter
from minds.adapters.model_client import (
    MAX_RESPONSE_BYTES,
    EndpointNotConfigured,
    ModelClient,
    ModelErrorKind,
    ModelProposalResult,
    RoleNotAssigned,
    TokenUsage,
    build_messages,
)
from minds.adapters.model_endpoints import ConfiguredEndpoint, ModelEndpoints
from minds.domain.capabilities.registry import REGISTRY
from minds.domain.planning import (
    IntentionKind,
    IntentionView,
    IssueCode,
    MindView,
    PlanningOutcome,
    PlanOrigin,
    PlanStatus,
    Strategy,
    make_plan,
    parse_proposal,
    proposal_vocabulary,
)
from minds.domain.resources.mind import MindSpec, ModelEndpoint
from tests.fixtures.scripted_llm import Reply, ScriptedLLM, scripted_llm

pytestmark = pytest.mark.integration

KEY = "sk-test-4f9a1c0d7e2b8a6f5c3d"
OBJECTIVE = "prod/atlas runs normally"
MIND = MindView(name="caretaker", namespace="prod", plan_model=True)
WORKLOAD = {"namespace": "prod", "name": "atlas"}
USAGE = {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
# The SDK's backoff: 0.5 s doubled per retry up to 8 s, each wait up to a quarter shorter.
FIRST_BACKOFF = 0.5
BACKOFF_CAP = 8.0


def restart_step(**over: Any) -> dict[str, Any]:
    return {
        "key": "P1",
        "title": "restart atlas",
        "kind": "capability",
        "capability": "service.restart",
        "parameters": dict(WORKLOAD),
        "target": "prod/atlas",
        "expectation": {
            "description": "atlas runs normally within 60 s",
            "check": {
                "capability": "service.status",
                "parameters": dict(WORKLOAD),
                "field": "state",
                "comparison": "equals",
                "value": "running",
            },
            "confidence": 0.8,
            "windowSeconds": 60,
        },
    } | over


def verify_step(**over: Any) -> dict[str, Any]:
    return {
        "key": "V1",
        "title": "verify atlas runs",
        "kind": "verify",
        "dependsOn": ["P1"],
        "verifies": "P1",
    } | over


GOOD_PROPOSAL = {"steps": [restart_step(), verify_step()], "risk": "a brief interruption"}


class Waits:
    """Stands in for `time.sleep`: records each wait instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with scripted_llm() as server:
        yield server


@pytest.fixture
def waits() -> Waits:
    return Waits()


def endpoint(**over: Any) -> ModelEndpoint:
    return ModelEndpoint.model_validate({"endpoint": "test-llm", "model": "planner-1"} | over)


def target(url: str, allowed: tuple[str, ...] = ("127.0.0.1",)) -> ConfiguredEndpoint:
    """The scripted server listens on loopback, which only the admin's configuration allows."""
    return ConfiguredEndpoint(name="test-llm", url=url, allowed_addresses=list(allowed))


def client_for(
    llm: ScriptedLLM, waits: Waits, key: str | None = KEY, **options: Any
) -> ModelClient:
    defaults: dict[str, Any] = {"timeout": 5.0, "sleep": waits}
    return ModelClient(endpoint(), target(llm.url), key, **(defaults | options))


def propose(client: ModelClient, context: Any = None) -> ModelProposalResult:
    return client.propose_plan(OBJECTIVE, proposal_vocabulary(REGISTRY, MIND), context)


def parse(result: ModelProposalResult) -> Any:
    assert result.text is not None
    return parse_proposal(result.text, objective=OBJECTIVE, registry=REGISTRY, mind=MIND)


# --- a good answer --------------------------------------------------------------------------


def test_a_good_proposal_comes_back_as_text_that_parses_into_a_valid_plan(
    llm: ScriptedLLM, waits: Waits
) -> None:
    llm.play(Reply.completion(GOOD_PROPOSAL, usage=USAGE))
    with client_for(llm, waits) as client:
        result = propose(client, {"observed": "atlas restarts every 5 minutes"})

    assert result.ok
    assert result.error is None
    assert result.usage == TokenUsage(prompt_tokens=100, completion_tokens=50, total_tokens=150)
    assert (result.attempts, result.finish_reason, result.model) == (1, "stop", "planner-1")
    assert result.response_id == "chatcmpl-scripted"
    assert result.latency_seconds >= 0
    plan, validation = parse(result)
    assert validation.errors == []
    assert validation.status is PlanStatus.VALIDATED
    assert plan.origin is PlanOrigin.MODEL
    assert [step.key for step in plan.steps] == ["P1", "V1"]

    (request,) = llm.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["content-type"] == "application/json"
    body = request.json()
    assert body["model"] == "planner-1"
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.0
    system, user = body["messages"]
    assert system["role"] == "system"
    assert user["role"] == "user"
    assert '"service.restart"' in system["content"]  # the vocabulary is in the prompt
    assert '"shapes"' in system["content"]
    assert OBJECTIVE in user["content"]
    assert "atlas restarts every 5 minutes" in user["content"]


def test_the_engine_flow_from_needs_model_proposal_to_a_planned_model_plan(
    llm: ScriptedLLM, waits: Waits
) -> None:
    intention = IntentionView(
        id="int-3",
        objective="find out whether the status page reports an outage",
        kind=IntentionKind.INVESTIGATION,
        subject="status.example.org",
    )
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    first = make_plan(intention, MIND, now=now)
    assert first.outcome is PlanningOutcome.NEEDS_MODEL_PROPOSAL

    proposal = {
        "steps": [
            {
                "key": "B1",
                "title": "read the status page",
                "kind": "capability",
                "capability": "browser.read",
                "parameters": {"url": "https://status.example.org"},
            },
            {
                "key": "S1",
                "title": "summarise",
                "kind": "internal",
                "internalAction": "summarise_findings",
                "dependsOn": ["B1"],
            },
        ]
    }
    llm.play(Reply.completion(proposal, usage=USAGE))
    with client_for(llm, waits) as client:
        result = client.propose_plan(
            intention.objective, proposal_vocabulary(REGISTRY, MIND), {"subject": "status page"}
        )
    planned = make_plan(intention, MIND, now=now, proposal=result.to_proposal())

    assert planned.outcome is PlanningOutcome.PLANNED
    assert planned.plan is not None
    assert planned.plan.strategy is Strategy.MODEL
    assert planned.plan.estimate.tokens == 150  # the call's tokens are part of the plan's cost


def test_content_given_as_text_parts_is_joined(llm: ScriptedLLM, waits: Waits) -> None:
    text = json.dumps(GOOD_PROPOSAL)
    parts = [{"type": "text", "text": text[:10]}, {"type": "text", "text": text[10:]}]
    llm.play(Reply.json({"choices": [{"message": {"role": "assistant", "content": parts}}]}))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.text == text
    assert result.usage == TokenUsage()  # no usage reported: zero, not an error


def test_a_request_without_a_key_sends_no_authorization(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(Reply.completion(GOOD_PROPOSAL))
    with client_for(llm, waits, key=None) as client:
        assert propose(client).ok
    assert "authorization" not in llm.requests[0].headers


def test_the_bearer_key_is_sent_without_the_newline_a_secret_often_carries(
    llm: ScriptedLLM, waits: Waits
) -> None:
    llm.play(Reply.completion(GOOD_PROPOSAL))
    with client_for(llm, waits, key=KEY + "\n") as client:
        assert propose(client).ok
    assert llm.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_the_context_is_masked_before_it_leaves(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(Reply.completion(GOOD_PROPOSAL))
    context = {"log": "login failed for alice@example.org with password=hunter2"}
    with client_for(llm, waits) as client:
        result = propose(client, context)
    sent = llm.requests[0].body.decode()
    assert "hunter2" not in sent
    assert "alice@example.org" not in sent
    assert result.masked == {"secret": 1, "email": 1}


# --- what the model says is judged by parse_proposal, not the client -------------------------


def test_authority_claiming_fields_reach_validation_and_are_ignored_there(
    llm: ScriptedLLM, waits: Waits
) -> None:
    claiming = {
        "steps": [
            restart_step(approved=True, status="completed", require_approval=False),
            verify_step(),
        ],
        "status": "completed",
        "approved": True,
    }
    llm.play(Reply.completion(claiming, usage=USAGE))
    with client_for(llm, waits) as client:
        result = propose(client)

    assert result.ok
    plan, validation = parse(result)
    assert validation.errors == []
    ignored = {w.field for w in validation.warnings if w.code is IssueCode.IGNORED_FIELD}
    assert {
        "approved",
        "status",
        "steps[0].approved",
        "steps[0].status",
        "steps[0].require_approval",
    } <= ignored
    assert plan.steps[0].requires_approval is False  # set by the planner from policy, not here


def test_a_model_answer_that_is_not_a_plan_is_for_validation_to_refuse(
    llm: ScriptedLLM, waits: Waits
) -> None:
    llm.play(Reply.completion("Sure! Here is a plan: restart everything."))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.ok  # the transport worked; the content is the planner's to judge
    _, validation = parse(result)
    assert {e.code for e in validation.errors} == {IssueCode.MALFORMED_PROPOSAL}
    assert validation.status is PlanStatus.DRAFT


# --- malformed responses: a typed error, no retry --------------------------------------------


def test_a_body_that_is_not_json_is_a_malformed_response(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(Reply.text("<html>502 Bad Gateway</html>"))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.MALFORMED_RESPONSE
    assert "not JSON" in result.error.message
    assert "Bad Gateway" in result.error.message
    assert result.to_proposal() is None
    assert len(llm.requests) == 1
    assert waits.delays == []


def test_json_without_choices_is_malformed_and_its_tokens_still_count(
    llm: ScriptedLLM, waits: Waits
) -> None:
    llm.play(Reply.json({"error": {"message": "model overloaded"}, "usage": USAGE}))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.MALFORMED_RESPONSE
    assert "no choices" in result.error.message
    assert "model overloaded" in result.error.message
    assert result.usage.total_tokens == 150
    assert len(llm.requests) == 1


GZIP = (("Content-Type", "application/json"), ("Content-Encoding", "gzip"))


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply.json([1, 2, 3]), "not an object"),
        (Reply.json({"choices": "none"}), "no choices"),
        (Reply.json({"choices": [42]}), "message is not an object"),
        (Reply.json({"choices": [{"message": {"content": 42}}]}), "content is not text"),
        (
            Reply.json({"choices": [{"message": {"content": [{"type": "text", "text": 1}]}}]}),
            "not text",
        ),
        (Reply(body=b"\x1b\x00", headers=(("Content-Encoding", "br"),)), "br-encoded"),
        (Reply(body=b"not gzip at all", headers=GZIP), "cannot be decoded"),
    ],
)
def test_wrong_types_and_undecodable_bodies_are_malformed_responses(
    llm: ScriptedLLM, waits: Waits, reply: Reply, words: str
) -> None:
    """Not retried: a retry would reach the scripted server's unscripted 500 and count."""
    llm.play(reply)
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.MALFORMED_RESPONSE
    assert words in result.error.message
    assert len(llm.requests) == 1


def test_an_empty_answer_or_a_refusal_is_no_content(llm: ScriptedLLM, waits: Waits) -> None:
    refusal = {"role": "assistant", "content": None, "refusal": "I cannot help with that"}
    llm.play(Reply.json({"choices": [{"message": refusal}], "usage": USAGE}))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.NO_CONTENT
    assert "I cannot help with that" in result.error.message
    assert result.usage.total_tokens == 150


# --- size ---------------------------------------------------------------------------------


def test_an_oversized_body_is_refused_from_its_declared_length(
    llm: ScriptedLLM, waits: Waits
) -> None:
    llm.play(Reply.completion("x" * (MAX_RESPONSE_BYTES + 1)))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.TOO_LARGE
    assert "declares" in result.error.message
    assert len(llm.requests) == 1
    assert waits.delays == []


def test_an_oversized_body_of_unknown_length_is_cut_while_reading(
    llm: ScriptedLLM, waits: Waits
) -> None:
    body = json.dumps({"choices": [{"message": {"content": "x" * MAX_RESPONSE_BYTES}}]})
    llm.play(Reply.text(body, close_delimited=True))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.TOO_LARGE
    assert "longer than" in result.error.message
    assert len(llm.requests) == 1


def test_a_body_of_unknown_length_under_the_cap_is_read(llm: ScriptedLLM, waits: Waits) -> None:
    reply = Reply.completion(GOOD_PROPOSAL)
    llm.play(Reply(body=reply.body, close_delimited=True))
    with client_for(llm, waits) as client:
        assert propose(client).ok


def test_a_gzipped_answer_is_read_and_capped_by_its_decoded_size(
    llm: ScriptedLLM, waits: Waits
) -> None:
    bomb = json.dumps({"choices": [{"message": {"content": " " * MAX_RESPONSE_BYTES * 4}}]})
    packed = gzip.compress(bomb.encode())
    assert len(packed) < MAX_RESPONSE_BYTES // 50  # small on the wire, only large decoded
    llm.play(
        Reply(body=gzip.compress(Reply.completion(GOOD_PROPOSAL).body), headers=GZIP),
        Reply(body=packed, headers=GZIP),
    )
    with client_for(llm, waits) as client:
        read, bombed = propose(client), propose(client)
    assert read.text == json.dumps(GOOD_PROPOSAL)
    assert bombed.error is not None
    assert bombed.error.kind is ModelErrorKind.TOO_LARGE
    assert "longer than" in bombed.error.message
    assert llm.requests[0].headers["accept-encoding"] == "gzip"
    assert len(llm.requests) == 2


class Ticks:
    """A clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.mark.parametrize("retries", [0, 1])
def test_a_body_slower_than_the_timeout_is_a_timeout_retried_like_one(
    llm: ScriptedLLM, waits: Waits, retries: int
) -> None:
    """httpx times each read; the client's deadline holds for the whole body (the clock jumps
    10 s between reads here, past the 5 s timeout, so no test waits)."""
    llm.play(*[Reply.completion(GOOD_PROPOSAL)] * 3)
    with client_for(llm, waits, clock=Ticks(10.0), retries=retries) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.TIMEOUT
    assert "reading the answer" in result.error.message
    assert len(llm.requests) == 1 + retries
    assert [a.error for a in result.history] == [ModelErrorKind.TIMEOUT] * (1 + retries)


# --- timeouts and retries -------------------------------------------------------------------


def test_a_server_slower_than_the_timeout_is_a_timeout_after_bounded_retries(
    llm: ScriptedLLM, waits: Waits
) -> None:
    llm.play(*[Reply.completion(GOOD_PROPOSAL, delay=30.0)] * 3)
    with client_for(llm, waits, timeout=0.3, retries=2) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.TIMEOUT
    assert "0.3 s" in result.error.message
    assert result.attempts == 3
    assert len(llm.requests) == 3  # one try and two retries, no more
    assert len(waits.delays) == 2
    assert [a.error for a in result.history] == [ModelErrorKind.TIMEOUT] * 3


def test_the_timeout_comes_from_the_mind_by_default() -> None:
    with ModelClient(endpoint(timeoutSeconds=7), target("http://127.0.0.1:9/v1")) as client:
        assert client._timeout == 7.0


def test_a_500_then_a_200_succeeds_on_retry_and_sums_the_tokens(
    llm: ScriptedLLM, waits: Waits
) -> None:
    spent = {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10}
    llm.play(
        Reply.json({"error": {"message": "upstream failed"}, "usage": spent}, status=500),
        Reply.completion(GOOD_PROPOSAL, usage=USAGE),
    )
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.ok
    assert result.attempts == 2
    assert len(llm.requests) == 2
    assert result.usage == TokenUsage(prompt_tokens=110, completion_tokens=50, total_tokens=160)
    assert [a.status for a in result.history] == [500, 200]
    (delay,) = waits.delays
    assert FIRST_BACKOFF * 0.75 <= delay <= FIRST_BACKOFF
    assert result.to_proposal() is not None
    assert result.to_proposal().tokens == 160  # type: ignore[union-attr]


def test_5xx_retries_are_bounded_and_back_off_exponentially(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(*[Reply.text("busy", status=503)] * 4)
    with client_for(llm, waits, retries=2) as client:
        result = propose(client)
    assert result.error is not None
    assert (result.error.kind, result.error.status) == (ModelErrorKind.HTTP_STATUS, 503)
    assert result.error.retryable
    assert len(llm.requests) == 3
    assert llm.unplayed == 1
    first, second = waits.delays
    assert 0.375 <= first <= 0.5
    assert 0.75 <= second <= 1.0


def test_backoff_doubles_with_jitter_up_to_its_cap(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(*[Reply.text("busy", status=503)] * 7)
    with client_for(llm, waits, retries=6) as client:
        result = propose(client)
    assert result.attempts == 7
    steps = [min(BACKOFF_CAP, FIRST_BACKOFF * 2**retry) for retry in range(6)]
    assert steps[-2:] == [BACKOFF_CAP, BACKOFF_CAP]
    for step, delay in zip(steps, waits.delays, strict=True):
        assert step * 0.75 <= delay <= step


@pytest.mark.parametrize(("status", "says", "requests"), [(503, "false", 1), (400, "true", 2)])
def test_a_server_that_says_whether_to_retry_is_obeyed(
    llm: ScriptedLLM, waits: Waits, status: int, says: str, requests: int
) -> None:
    llm.play(*[Reply.json({}, status=status, headers={"x-should-retry": says})] * 2)
    with client_for(llm, waits, retries=1) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.status == status
    assert len(llm.requests) == requests


def test_a_dropped_connection_is_retried(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(Reply(drop=True), Reply.completion(GOOD_PROPOSAL))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.ok
    assert [a.error for a in result.history] == [ModelErrorKind.CONNECTION, None]
    assert len(llm.requests) == 2


def test_a_refused_connection_is_a_connection_error(waits: Waits) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port any more.
    url = f"http://127.0.0.1:{port}/v1"
    with ModelClient(endpoint(), target(url), KEY, timeout=2.0, sleep=waits, retries=1) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.CONNECTION
    assert result.attempts == 2
    assert len(waits.delays) == 1


@pytest.mark.parametrize(
    ("header", "value", "seconds"), [("Retry-After", "2", 2.0), ("retry-after-ms", "1500", 1.5)]
)
def test_429_with_retry_after_is_waited_out_exactly(
    llm: ScriptedLLM, waits: Waits, header: str, value: str, seconds: float
) -> None:
    llm.play(
        Reply.json({"error": {"message": "slow down"}}, status=429, headers={header: value}),
        Reply.completion(GOOD_PROPOSAL, usage=USAGE),
    )
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.ok
    assert waits.delays == [seconds]
    assert len(llm.requests) == 2
    assert result.history[1].waited_seconds == seconds


@pytest.mark.parametrize("seconds", [60, 3600])
def test_429_asking_for_longer_than_the_cap_ends_the_call(
    llm: ScriptedLLM, waits: Waits, seconds: int
) -> None:
    """60 s is within what the SDK alone would wait: only the client's 30 s cap ends it."""
    llm.play(*[Reply.json({}, status=429, headers={"Retry-After": str(seconds)})] * 2)
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert (result.error.status, result.error.retry_after_seconds) == (429, float(seconds))
    assert result.error.retryable  # later, by the engine: not within this call
    assert f"asks to wait {seconds} s" in result.error.message
    assert waits.delays == []
    assert len(llm.requests) == 1


def test_a_retry_after_given_as_a_date_is_honoured(llm: ScriptedLLM, waits: Waits) -> None:
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    later = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    llm.play(
        Reply.json({}, status=429, headers={"Retry-After": soon}),
        Reply.completion(GOOD_PROPOSAL),
        Reply.json({}, status=429, headers={"Retry-After": later}),
    )
    with client_for(llm, waits) as client:
        first = propose(client)
        second = propose(client)
    assert first.ok
    (waited,) = waits.delays  # HTTP dates have whole seconds
    assert 3.0 <= waited <= 5.0
    assert second.error is not None
    assert 3590 <= (second.error.retry_after_seconds or 0) <= 3600
    assert len(llm.requests) == 3


def test_401_is_not_retried_and_says_to_check_the_key(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(Reply.json({"error": {"message": "invalid api key"}}, status=401))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert (result.error.kind, result.error.status) == (ModelErrorKind.HTTP_STATUS, 401)
    assert not result.error.retryable
    assert "401" in result.error.message
    assert "API key" in result.error.message
    assert len(llm.requests) == 1
    assert waits.delays == []


@pytest.mark.parametrize("status", [400, 403, 404, 422])
def test_other_4xx_are_never_retried(llm: ScriptedLLM, waits: Waits, status: int) -> None:
    llm.play(*[Reply.json({"error": {"message": "no"}}, status=status)] * 2)
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.status == status
    assert not result.error.retryable
    assert len(llm.requests) == 1


@pytest.mark.parametrize("status", [408, 409])
def test_request_timeout_and_conflict_are_retried(
    llm: ScriptedLLM, waits: Waits, status: int
) -> None:
    llm.play(Reply.json({"error": {"message": "again"}}, status=status), Reply.completion({}))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.ok
    assert [a.status for a in result.history] == [status, 200]


def test_a_server_without_json_mode_is_asked_again_without_it(
    llm: ScriptedLLM, waits: Waits
) -> None:
    unsupported = {"error": {"message": "response_format is not supported"}}
    llm.play(
        Reply.json(unsupported, status=400),
        Reply.completion(GOOD_PROPOSAL),
        Reply.completion(GOOD_PROPOSAL),
    )
    with client_for(llm, waits) as client:
        first = propose(client)
        second = propose(client)
    assert first.ok
    assert second.ok
    assert [a.json_mode for a in first.history] == [True, False]
    bodies = [r.json() for r in llm.requests]
    assert ["response_format" in b for b in bodies] == [True, False, False]
    assert waits.delays == []


def test_redirects_are_not_followed(llm: ScriptedLLM, waits: Waits) -> None:
    llm.play(Reply(status=307, headers=(("Location", "http://127.0.0.1:9/steal"),)))
    with client_for(llm, waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.status == 307
    assert len(llm.requests) == 1


# --- the key never shows --------------------------------------------------------------------


def test_the_key_never_appears_in_logs_errors_results_or_reprs(
    llm: ScriptedLLM, waits: Waits, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    echoed = {"error": {"message": f"Incorrect API key provided: {KEY}"}}
    llm.play(
        Reply.json(echoed, status=401),
        Reply.text(f"garbage mentioning Bearer {KEY}"),
        Reply.json(echoed, status=503),
        Reply.json(echoed, status=503),
        Reply.json(echoed, status=503),
    )
    with client_for(llm, waits) as client:
        results = [propose(client), propose(client), propose(client)]
        shown = [repr(client), str(vars(client))]

    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in llm.requests)
    for result in results:
        assert result.error is not None
        shown += [result.error.message, repr(result), str(result), result.model_dump_json()]
    assert "[redacted]" in results[0].error.message  # type: ignore[union-attr]
    shown.append(caplog.text)
    for text in shown:
        assert KEY not in text


class RawLines(logging.Handler):
    """Lines as logged: a handler on the logger itself runs before the root's filter."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def test_what_the_sdk_carries_from_an_error_answer_is_masked(
    llm: ScriptedLLM,
    waits: Waits,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK's exceptions hold the server's body and headers, and its own text quotes the
    body's message; an endpoint echoing the key and a person's address must show neither.

    The client's and the SDK's own log lines must be clean as they are logged; httpcore's
    debug lines quote response headers, so the whole log is read as the controller writes it,
    through the masking filter on its handlers."""
    caplog.set_level(logging.DEBUG)
    caplog.handler.addFilter(MaskingFilter())
    raw = RawLines()
    for name in ("minds", "openai"):
        monkeypatch.setattr(logging.getLogger(name), "handlers", [raw])
    person = "alice@example.org"
    said = f"key {KEY} of {person} was refused"
    echo = {"X-Echo": f"Bearer {KEY} {person}"}
    llm.play(
        Reply.json(
            {"error": {"message": said, "code": "invalid_api_key"}}, status=401, headers=echo
        ),
        *[Reply.json({"message": said}, status=500, headers=echo)] * 3,
        Reply(status=400, body=said.encode(), headers=(("X-Echo", f"{KEY} {person}"),)),
    )
    with client_for(llm, waits, retries=2) as client:
        results = [propose(client), propose(client), propose(client)]

    assert [r.error.status for r in results] == [401, 500, 400]  # type: ignore[union-attr]
    assert any("gave no proposal" in line for line in raw.lines)
    shown = [caplog.text, *raw.lines]
    for result in results:
        assert result.error is not None
        assert "[redacted]" in result.error.message  # the server's words came through, masked
        assert "[email]" in result.error.message
        shown += [result.error.message, result.model_dump_json(), repr(result)]
    for text in shown:
        assert KEY not in text
        assert person not in text


def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it() -> None:
    bad = "sk-abc\r\nX-Injected: 1"
    with pytest.raises(ValueError, match="cannot be sent") as raised:
        ModelClient(endpoint(), target("http://127.0.0.1:9/v1"), bad)
    assert "sk-abc" not in str(raised.value)


# --- the plan role only ---------------------------------------------------------------------


def test_an_endpoint_without_the_plan_role_is_refused() -> None:
    with pytest.raises(RoleNotAssigned, match="plan role"):
        ModelClient(endpoint(roles=[]), target("http://127.0.0.1:9/v1"))


def test_a_mind_without_a_model_is_refused() -> None:
    configured = ModelEndpoints(endpoints=[target("http://127.0.0.1:9/v1")])
    with pytest.raises(RoleNotAssigned, match="no model endpoint"):
        ModelClient.for_mind(MindSpec(), configured)
    spec = MindSpec.model_validate({"model": {"endpoint": "test-llm", "model": "m"}})
    with ModelClient.for_mind(spec, configured) as client:
        assert client.url == "http://127.0.0.1:9/v1/chat/completions"


# --- the admin's endpoints and the address guard -----------------------------------------------


def test_a_mind_naming_an_endpoint_not_configured_is_refused() -> None:
    configured = ModelEndpoints(endpoints=[target("http://127.0.0.1:9/v1")])
    spec = MindSpec.model_validate({"model": {"endpoint": "elsewhere", "model": "m"}})
    with pytest.raises(EndpointNotConfigured, match=r"spec\.model\.endpoint.*configured: test-llm"):
        ModelClient.for_mind(spec, configured)
    with pytest.raises(EndpointNotConfigured, match="none is configured"):
        ModelClient.for_mind(spec, ModelEndpoints())


def test_a_mind_cannot_name_a_url() -> None:
    with pytest.raises(ValueError, match="endpoint"):
        MindSpec.model_validate({"model": {"endpoint": "http://127.0.0.1:9/v1", "model": "m"}})


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/v1",
        "http://localhost:{port}/v1",
        "http://[::ffff:127.0.0.1]:{port}/v1",
        "http://2130706433:{port}/v1",
    ],
)
def test_loopback_not_allowed_by_the_configuration_is_never_connected(
    llm: ScriptedLLM, waits: Waits, url: str
) -> None:
    """The scripted server is real and listening: only the guard stands between it and us."""
    llm.play(Reply.completion(GOOD_PROPOSAL, usage=USAGE))
    port = llm.url.split(":")[2].split("/")[0]
    configured = target(url.format(port=port), allowed=())
    with ModelClient(endpoint(), configured, KEY, sleep=waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.REFUSED
    assert "loopback" in result.error.message
    assert not result.error.retryable
    assert llm.requests == []


def test_a_metadata_address_is_refused_even_when_a_name_is_allowed(waits: Waits) -> None:
    configured = target("http://169.254.169.254/v1", allowed=("169.254.169.254.nip.invalid",))
    with ModelClient(endpoint(), configured, KEY, sleep=waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.REFUSED
    assert "metadata" in result.error.message


def test_every_retry_passes_the_guard_again_and_a_rebound_name_is_refused(
    llm: ScriptedLLM, waits: Waits
) -> None:
    """DNS rebinding between two attempts: the first resolves to the allowed loopback, the
    retry to a private address nobody listed. The dropped connection makes the retry open a
    new one, which the guard checks like the first."""
    port = int(llm.url.split(":")[2].split("/")[0])
    answers = iter(["127.0.0.1", "10.1.2.3"])
    lookups: list[str] = []

    def resolver(host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        lookups.append(host)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    llm.play(Reply(drop=True), Reply.completion(GOOD_PROPOSAL))
    configured = target(f"http://llm.example.test:{port}/v1", allowed=("127.0.0.1",))
    with ModelClient(endpoint(), configured, KEY, sleep=waits, resolver=resolver) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.REFUSED
    assert "10.1.2.3" in result.error.message
    assert [a.error for a in result.history] == [
        ModelErrorKind.CONNECTION,
        ModelErrorKind.REFUSED,
    ]
    assert len(waits.delays) == 1  # the SDK did retry; the guard stopped the retry
    assert lookups == ["llm.example.test"] * 2
    assert len(llm.requests) == 1


def test_a_proxy_in_the_environment_does_not_carry_a_call_past_the_guard(
    llm: ScriptedLLM, waits: Waits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy would open the connection without the guard. httpx takes none from the
    environment for a client given its own transport; this pins it (the scripted server would
    accept proxied requests: none reaches it)."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, llm.url.removesuffix("/v1"))
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    llm.play(Reply.completion(GOOD_PROPOSAL))
    with ModelClient(endpoint(), target("http://10.1.2.3/v1", allowed=()), sleep=waits) as client:
        result = propose(client)
    assert result.error is not None
    assert result.error.kind is ModelErrorKind.REFUSED
    assert llm.requests == []


def test_nothing_from_the_controllers_environment_reaches_the_endpoint(
    llm: ScriptedLLM, waits: Waits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK reads keys, an organization, a project, extra headers and a base URL from the
    environment; none of them may go to an endpoint a Mind names."""
    for name, value in {
        "OPENAI_API_KEY": "sk-from-the-environment",
        "OPENAI_ADMIN_KEY": "sk-admin-from-the-environment",
        "OPENAI_ORG_ID": "org-from-the-environment",
        "OPENAI_PROJECT_ID": "proj-from-the-environment",
        "OPENAI_CUSTOM_HEADERS": "X-Team: from-the-environment\nAuthorization: Bearer sk-env",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/from-the-environment",
    }.items():
        monkeypatch.setenv(name, value)
    llm.play(Reply.completion(GOOD_PROPOSAL), Reply.completion(GOOD_PROPOSAL))
    with client_for(llm, waits, key=None) as keyless, client_for(llm, waits) as keyed:
        assert propose(keyless).ok
        assert propose(keyed).ok

    without, with_key = llm.requests
    assert "authorization" not in without.headers
    assert with_key.headers["authorization"] == f"Bearer {KEY}"
    for request in llm.requests:
        assert request.path == "/v1/chat/completions"
        assert set(request.headers) <= {
            "host",
            "content-type",
            "content-length",
            "user-agent",
            "accept",
            "accept-encoding",
            "authorization",
        }
        assert request.headers["user-agent"] == "minds-operator/0.1 (plan role)"
        assert "environment" not in " ".join(request.headers.values())


# --- pure helpers ---------------------------------------------------------------------------


def test_the_sdk_is_loaded_by_the_first_client_not_by_the_controller() -> None:
    """A controller that calls no model does not pay the SDK's memory and start-up time."""
    script = """
import sys
import minds.controller.wiring
from minds.adapters.model_client import ModelClient
from minds.adapters.model_endpoints import ConfiguredEndpoint
from minds.domain.resources.mind import ModelEndpoint
print("openai" in sys.modules)
ModelClient(
    ModelEndpoint(endpoint="test-llm", model="m"),
    ConfiguredEndpoint(name="test-llm", url="http://127.0.0.1:9/v1"),
).close()
print("openai" in sys.modules)
"""
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert run.stdout.split() == ["False", "True"]


def test_long_context_is_cut() -> None:
    messages, _ = build_messages(OBJECTIVE, {}, "y" * 100_000)
    assert len(messages[1]["content"]) < 40_000
    assert "context cut" in messages[1]["content"]
