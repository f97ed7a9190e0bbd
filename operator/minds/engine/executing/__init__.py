"""The executor's phases, one module each; ``minds.engine.executor`` is the facade.

- ``claiming``: bookkeeping transitions and ready -> executing under a lease;
- ``acting``: running a claimed step, one handler per step kind;
- ``following``: a step waiting on an Approval, and the approved action;
- ``recovery``: an expired lease (its executor died mid-action) and a person's release;
- ``outcome``: writing a step's new state conditionally, then its ledger rows and effects;
- ``effects``: what an outcome means for the ledger (predictions, intentions, notes);
- ``conclusion``: a finished plan's meaning for its intention, and replanning.

Each phase is a set of functions of a ``Deps`` (the ports) and the Plan in hand; none keeps
state between calls, so any executor can pick up where another stopped.
"""
