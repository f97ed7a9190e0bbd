"""What ``kubectl explain`` says of each field of our resources, by model and field.

One table, read by the CRD generator: a model shared by several resources (a budget, a check,
a resource use) is described once, and a field's own ``description=`` in its model wins. The
CRD test fails on any property left without a description, so a new field needs a line here
(or a description in its model).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_WHEN = "RFC 3339 timestamp."

#: Model class name -> field name as the API spells it -> description.
DESCRIPTIONS: Final[Mapping[str, Mapping[str, str]]] = {
    # --- Mind -------------------------------------------------------------------------------
    "MindSpec": {
        "active": "Whether the mind runs its cycle and its plans act. False: it observes "
        "nothing and does nothing; its plans do not start new steps.",
        "cycleIntervalSeconds": "Seconds between two cognition cycles (observe, derive wants, "
        "form intentions, plan).",
        "planTtlSecondsAfterFinished": "How long a finished plan of this mind stays in the "
        "cluster before it is deleted; the ledger keeps it for good.",
        "caution": "0..1: how much risk weighs against forming an intention. Each candidate's "
        "risk level, times this, is subtracted from its score.",
        "drives": "Standing motivations (such as reliability); the strength of a want whose "
        "origin a drive touches is multiplied by the drive's weight.",
        "values": "Configured values; a value's want opposes wants whose means use a "
        "capability the value avoids.",
        "goals": "What the mind keeps true: each goal names a workload and its desired state.",
        "requests": "Questions or requests put to the mind (kubectl minds ask adds one); each "
        "becomes a want in the next cycle.",
        "commitments": "Promises about means: do something by a time, or refrain from "
        "something. They constrain the mind; they never grant authority.",
        "capabilityPolicy": "Rules that allow, ask approval for, or deny a capability on "
        "matching targets. Policy only narrows what the capability layer does.",
        "lockedCapabilities": "Capabilities this mind may never use: plans naming one are "
        "invalid, and policy cannot allow or approve them.",
        "budget": "Resource limits per plan; a plan's own budget never exceeds them.",
        "attention": "How much operator attention the mind may claim at once.",
        "model": "An OpenAI-compatible model endpoint the mind may consult to propose plans. "
        "Absent: only the deterministic strategies plan.",
        "browser": "Read-only browsing and the hosts it may reach.",
        "dreams": "Whether the mind imagines plans for wants it does not act on. Dream plans "
        "are never validated and never run.",
        "approvers": "Who may decide this mind's Approvals. Empty (the default): nobody can.",
    },
    "Drive": {
        "name": "The drive's name, unique in the list.",
        "weight": "0..1: the factor the drive applies to the wants it touches.",
    },
    "Value": {
        "name": "The value's name, unique in the list.",
        "weight": "0..1: the strength of the wants derived from this value.",
        "avoid": "Capability patterns whose use this value argues against.",
    },
    "Goal": {
        "name": "The goal's name, unique in the list.",
        "description": "What the goal is for, in a person's words.",
        "subject": "The workload the goal is about.",
        "desired": "The desired state of the workload: running.",
        "priority": "0..1: added to the strength of wants that serve this goal.",
    },
    "Request": {
        "name": "The request's name, unique in the list (kubectl minds ask derives it from "
        "the text).",
        "text": "The question or request, in plain words.",
        "subject": "The workload it is about, if any.",
    },
    "WorkloadRef": {
        "kind": "Deployment, StatefulSet or DaemonSet.",
        "name": "The workload's name.",
    },
    "Commitment": {
        "name": "The commitment's name, unique in the list.",
        "mode": "do: use the capability by the due time; refrain: do not use matching "
        "capabilities on matching targets.",
        "capability": "Capability name or glob the commitment is about (default: any).",
        "target": "Target glob the commitment is about, such as atlas-* (default: any).",
        "access": "Restrict a refrain commitment to read or write capabilities (default: any).",
        "risk": "Restrict a refrain commitment to capabilities of this risk (default: any).",
        "unlessApproval": "refrain only: the action is allowed when a person approves it.",
        "due": "do only: when the action is due. " + _WHEN,
        "everySeconds": "do only, with due: the commitment recurs every this many seconds "
        "(60 to 31622400), in periods that start at due + k x everySeconds; it acts once per "
        "period, and after a fulfilment it is due again at the next period start.",
        "expiresAt": "When the commitment ends. " + _WHEN,
        "revocable": "Whether the commitment may be revoked.",
        "reason": "Why the commitment was made.",
    },
    "PolicyRule": {
        "capability": "Capability name or glob, such as service.* .",
        "target": "Target glob the rule applies to (default: any).",
        "decision": "allow, approve (a person decides each use) or deny.",
    },
    "Attention": {
        "maxOpenRequests": "How many of the mind's requests (Approvals) may wait for a person "
        "at once; beyond it a step waits before it asks.",
    },
    "ModelEndpoint": {
        "model": "The model name sent to the endpoint.",
        "roles": "What the model is consulted for (plan: propose plans).",
        "apiKeySecretRef": "The Secret key holding the API key, in the Mind's namespace; the "
        'Secret must carry the label minds.dev/model-key: "true".',
        "timeoutSeconds": "How long one model call may take.",
    },
    "SecretKeyRef": {
        "name": "The Secret's name.",
        "key": "The key in the Secret's data.",
    },
    "Browser": {
        "allowedHosts": "Hosts browsing may reach although they are loopback, private or "
        "metadata addresses (refused otherwise).",
    },
    "MindApprovers": {
        "users": "Usernames that may decide, as the API server authenticates them.",
        "groups": "Groups whose members may decide.",
        "planAuthorsMayApprove": "Whether the person who wrote an operator plan may approve "
        "its steps (default false: four eyes).",
    },
    "MindStatus": {
        "observedGeneration": "The spec generation the controller last judged.",
        "conditions": "Ready (the spec is accepted, the ledger answers and a cycle completed "
        "within two intervals), Degraded (why not) and NeedsAttention (what waits for a "
        "person, named).",
        "openWants": "Active wants after the last cycle.",
        "openIntentions": "Intentions not yet fulfilled or abandoned.",
        "openPlans": "Plans of this mind that are validated and not finished.",
        "pendingApprovals": "Approvals of this mind waiting for a decision.",
        "lastCycleAt": "When the last cycle ended. " + _WHEN,
        "lastCycle": "What the last cycle did, in one line.",
    },
    "Condition": {
        "type": "The condition's type (Ready, Degraded, Complete...).",
        "status": "True, False or Unknown.",
        "reason": "A CamelCase word for why.",
        "message": "The reason in words.",
        "lastTransitionTime": "When the status last changed. " + _WHEN,
        "observedGeneration": "The spec generation the condition was computed from.",
    },
    # --- Plan -------------------------------------------------------------------------------
    "Plan": {
        "objective": "What the plan is for, in one line.",
        "origin": "Who or what made the plan: template, model, operator (a person), dream or "
        "replan. No origin carries authority.",
        "strategy": "How the plan was made: direct, diagnose, diagnose_then_escalate, model, "
        "or authored by a person.",
        "mind": "The Mind the plan serves; its policy, budget and approvers apply.",
        "intention": "The intention the plan serves (set by the controller).",
        "revision": "The plan's revision for its intention; a replan is the next revision.",
        "supersedes": "The plan this revision replaces.",
        "supersededBy": "The plan that replaced this one.",
        "steps": "The steps, a dependency graph without cycles.",
        "assumptions": "Beliefs the plan relies on, each with the confidence it needs.",
        "completionCriteria": "When the plan counts as done, in words.",
        "abortConditions": "When the plan should stop, in words.",
        "risk": "The plan's risk, in words.",
        "estimate": "What the plan is expected to use (recomputed at admission).",
        "budget": "What the plan may use; never more than its Mind's budget.",
        "alternatives": "The strategies considered, each with why it was or was not chosen.",
        "author": "Who wrote an operator plan: the requester's own username (admission checks it).",
    },
    "Step": {
        "key": "The step's key, unique in the plan (P1, V1, ...).",
        "title": "What the step does, in one line.",
        "kind": "capability, request_capability, verify, monitor, wait or internal.",
        "dependsOn": "Keys of the steps that must finish first.",
        "capability": "capability steps: the capability to invoke.",
        "parameters": "capability steps: the capability's parameters.",
        "target": "capability steps: the target, as the capability names it.",
        "expectation": "capability steps: the outcome predicted, checked by a verify step.",
        "precondition": "capability steps: checked first; when it already holds the step is "
        "skipped.",
        "requiresApproval": "capability steps: ask a person even when policy allows.",
        "maxAttempts": "capability steps: attempts before the step fails (default 1).",
        "request": "request_capability steps: the temporary authority to ask for.",
        "verifies": "verify steps: the step whose expectation is checked.",
        "check": "monitor steps: the check that must hold.",
        "stableSeconds": "monitor steps: how long the check must hold without interruption.",
        "deadlineSeconds": "monitor steps: when to give up.",
        "intervalSeconds": "verify and monitor steps: seconds between two checks.",
        "waitSeconds": "wait steps: how long to wait.",
        "internalAction": "internal steps: summarise_findings or notify_operator.",
        "note": "internal steps: the note to carry (the escalation's words).",
    },
    "Check": {
        "capability": "A read-only capability that observes.",
        "parameters": "The capability's parameters.",
        "field": "The observed field to compare.",
        "comparison": "equals, not_equals, less_than, less_or_equal, greater_than, "
        "greater_or_equal or contains.",
        "value": "The value to compare with, as text.",
    },
    "Expectation": {
        "description": "The expected outcome, in words.",
        "check": "How the outcome is observed.",
        "confidence": "0..1: how confident the prediction is.",
        "windowSeconds": "How long after the action the outcome may take to show.",
    },
    "Precondition": {
        "description": "What must not already hold, in words.",
        "check": "How it is observed.",
        "fulfilsIntentionOnSkip": "When the precondition already holds, skipping the step "
        "fulfils the intention (the world already is as wanted).",
    },
    "CapabilityRequest": {
        "capability": "The capability asked for.",
        "targetPattern": "The targets the grant would cover.",
        "parameterLimits": "Limits on the parameters the grant would allow.",
        "durationSeconds": "How long the grant would last.",
        "operationCap": "How many operations the grant would allow.",
        "reason": "Why the authority is needed.",
        "risk": "What could go wrong.",
        "mitigation": "How the risk is kept small.",
        "fallback": "What happens if it is refused.",
        "alternatives": "Other ways considered.",
    },
    "Assumption": {
        "belief": "The belief's statement.",
        "minConfidence": "0..1: the confidence the plan needs the belief to have.",
    },
    "Alternative": {
        "strategy": "The strategy considered.",
        "selected": "Whether it was chosen.",
        "reason": "Why it was or was not chosen.",
        "estimate": "What it would use.",
        "expectedConfidence": "0..1: how likely it was expected to succeed.",
        "score": "Its score (higher is better).",
    },
    "PlanResourceStatus": {
        "phase": "draft, validated, waiting, executing, blocked, awaiting_approval, "
        "replanning, completed, failed, abandoned or superseded.",
        "steps": "Each step's state, in the plan's order.",
        "actual": "What the plan used so far.",
        "validation": "The controller's validation of the spec.",
        "reason": "Why the plan is in its phase, when it is not plain.",
        "progress": "Finished steps of all, such as 2/3.",
        "budget": "The budget the executor enforces: the plan's, within its Mind's.",
        "estimate": "What the plan is expected to use, computed at admission.",
        "waitingOn": "What the plan waits for (an Approval, a grant, a time).",
        "observedGeneration": "The spec generation the controller last judged.",
        "conditions": "Validated, Progressing, then Complete and Failed once it finished (like "
        "a Job: kubectl wait --for=condition=Complete).",
    },
    "StepState": {
        "key": "The step's key.",
        "status": "pending, ready, executing, awaiting_approval, awaiting_grant, waiting, "
        "completed, failed, skipped, blocked or cancelled.",
        "attempts": "Attempts made.",
        "lease": "The executor's claim on a running step.",
        "nextRunAt": "When the step is looked at next. " + _WHEN,
        "startedAt": "When it started. " + _WHEN,
        "finishedAt": "When it finished. " + _WHEN,
        "observation": "What was observed of its outcome.",
        "reason": "Why it is in its status.",
        "approvalRef": "The Approval it waits for or acted under.",
        "grantRef": "The CapabilityGrant it acted under.",
        "executionRef": "The ledger execution of its action.",
        "predictionRef": "The ledger prediction its expectation opened.",
        "holdsSince": "monitor steps: since when the check has held. " + _WHEN,
    },
    "Lease": {
        "holder": "The controller replica that holds the claim.",
        "expiresAt": "When the claim lapses unless renewed. " + _WHEN,
    },
    "Observation": {
        "summary": "What was seen, in words.",
        "fields": "The observed fields.",
        "holds": "Whether the check held.",
        "observedAt": "When. " + _WHEN,
    },
    "ValidationResult": {
        "errors": "What makes the plan invalid; it stays a draft and never runs.",
        "warnings": "What is worth a look but does not stop the plan.",
        "order": "An order the steps can run in, when the graph has one.",
    },
    "ValidationIssue": {
        "code": "What kind of issue, as a stable code.",
        "message": "The issue in words.",
        "step": "The step it is about.",
        "field": "The field it is about, as spelled in the spec (steps[2].parameters.name).",
        "steps": "Every step involved, when several are (a dependency cycle).",
    },
    # --- Approval ---------------------------------------------------------------------------
    "ApprovalSpec": {
        "kind": "action (run one step) or grant (give temporary authority).",
        "mind": "The mind that asks.",
        "capability": "The capability it would use.",
        "target": "The target it would act on.",
        "parameters": "The parameters it would use.",
        "grant": "kind grant only: the authority asked for.",
        "explanation": "What a person needs to decide.",
        "origin": "Which step of which plan asks.",
        "batchKey": "A key shared by related requests, kept as a label of the Approval.",
        "expiresAt": "After this time a decision no longer counts. " + _WHEN,
        "approvers": "Who may decide, copied from the Mind when the request was raised.",
        "author": "The author of the asking operator plan, who may not decide (four eyes).",
        "decision": "Set by a person: Approved or Denied. Once set it cannot change.",
        "decidedBy": "Set with decision: your own username (admission checks it).",
        "note": "Set with decision, optional: why. The ledger keeps it.",
    },
    "Explanation": {
        "what": "What would be done.",
        "why": "Why.",
        "expectedOutcome": "What should follow.",
        "sideEffects": "What else it may change.",
        "alternatives": "Other ways considered.",
    },
    "ApprovalOrigin": {
        "mind": "The mind.",
        "intention": "The intention served.",
        "plan": "The asking Plan.",
        "planUid": "The asking Plan's uid: a Plan re-created under the same name asks anew.",
        "step": "The asking step.",
        "attempt": "The step's attempt.",
    },
    "Approvers": {
        "users": "Usernames that may decide.",
        "groups": "Groups whose members may decide.",
    },
    "GrantRequest": {
        "targetPattern": "The targets the grant would cover.",
        "parameterLimits": "Limits on the parameters it would allow.",
        "durationSeconds": "How long it would last.",
        "operationCap": "How many operations it would allow.",
        "reason": "Why the authority is needed.",
        "risk": "What could go wrong.",
        "mitigation": "How the risk is kept small.",
        "fallback": "What happens if it is refused.",
        "alternatives": "Other ways considered.",
    },
    "ApprovalStatus": {
        "phase": "Pending, Approved, Denied, Expired, Withdrawn or Executed.",
        "decidedAt": "When the decision was recorded. " + _WHEN,
        "executedAt": "When the approved action ran. " + _WHEN,
        "execution": "The ledger execution of the approved action.",
        "message": "Why the Approval is in its phase.",
        "observedGeneration": "The spec generation the controller last judged.",
        "conditions": "Decided (a person's decision is recorded) and Executed (the approved "
        "action ran), from the ledger.",
    },
    # --- CapabilityGrant --------------------------------------------------------------------
    "CapabilityGrantSpec": {
        "capability": "The capability granted.",
        "targetPattern": "The targets covered (a glob).",
        "parameterLimits": "Limits on the parameters allowed.",
        "notBefore": "When the grant starts (default: at once). " + _WHEN,
        "expiresAt": "When the grant ends. " + _WHEN,
        "operationCap": "How many operations it allows.",
        "reason": "Why it was granted.",
        "risk": "What could go wrong.",
        "mitigation": "How the risk is kept small.",
        "fallback": "What to do if it goes wrong.",
        "revoked": "Set true to revoke the grant; it stays revoked.",
    },
    "CapabilityGrantStatus": {
        "phase": "Pending, Active, Expired, Exhausted or Revoked.",
        "operationsUsed": "Operations counted against the cap.",
        "grantedBy": "Who granted it, as admission vouched for it.",
        "approval": "The Approval it came from, if any.",
        "message": "Why it grants nothing, when it does not.",
        "conditions": "Active, Exhausted and Expired: True while the grant is in that phase.",
    },
}

#: The object's frame, the same for every kind (``metadata`` is ObjectMeta, which the API
#: server describes itself and forbids a CRD to describe).
FRAME: Final[Mapping[str, str]] = {
    "apiVersion": "The versioned schema of this object: minds.dev/v1alpha1.",
    "kind": "The kind of this object.",
}
