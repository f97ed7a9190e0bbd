"""Volition: wanting, intending and committing, kept as separate states with separate records.

- `wants`: derivation from evidence, reinforcement, decay, suppression and expiry;
- `conflicts`: first-class conflicts between wants, resolved by explicit scores;
- `commitments`: where each commitment stands (due, overdue, impossible, conflicting, ...);
- `formation`: whether a want becomes an intention (`IntentionRecord`), or the one reason not;
- `reconsideration`: what a trigger does to a live intention;
- `decisions`: the record of every choice, for the append-only `volition_decisions` table.

Everything here is pure: the engine reads the world and the ledger, passes them in with the
clock, and writes what comes back.
"""
