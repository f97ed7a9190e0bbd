"""Who is told about ledger transactions: the metrics adapter, in the controller.

The ledger calls an observer after each transaction, never inside one, so an observer that is
slow or fails cannot hold a lock or undo a write. Events are reported only when their row was
new: a replayed append (same idempotency key) reports nothing, so a count derived from this
stream counts each fact once, whichever code path or controller recorded it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session, sessionmaker

from minds.domain.ledger import EventRecord

__all__ = ["NO_OBSERVER", "LedgerObserver", "NoObserver", "note_appended", "track_writes"]

#: Keys in ``Session.info``, which lives exactly as long as the transaction.
_APPENDED: Final = "minds.appended"
_WROTE: Final = "minds.wrote"


class LedgerObserver(Protocol):
    def committed(self, appended: Sequence[EventRecord], seconds: float, wrote: bool) -> None:
        """A transaction committed; ``appended``: the events it added, ``wrote``: whether it
        changed anything at all."""
        ...

    def failed(self) -> None:
        """A transaction failed in the database (not a refusal such as NotFound)."""
        ...


class NoObserver:
    def committed(self, appended: Sequence[EventRecord], seconds: float, wrote: bool) -> None:
        return None

    def failed(self) -> None:
        return None


NO_OBSERVER: Final = NoObserver()


def note_appended(session: Session, record: EventRecord) -> None:
    session.info.setdefault(_APPENDED, []).append(record)


def appended(session: Session) -> list[EventRecord]:
    return list(session.info.get(_APPENDED, ()))


def wrote(session: Session) -> bool:
    return bool(session.info.get(_WROTE))


def _statement_writes(state: ORMExecuteState) -> None:
    if state.is_insert or state.is_update or state.is_delete:
        state.session.info[_WROTE] = True


def _flush_writes(session: Session, _context: object, _instances: object) -> None:
    if session.new or session.dirty or session.deleted:
        session.info[_WROTE] = True


def track_writes(sessions: sessionmaker[Session]) -> None:
    """Mark a session's transaction as writing when it runs an INSERT, UPDATE or DELETE
    statement or flushes changed rows."""
    event.listen(sessions, "do_orm_execute", _statement_writes)
    event.listen(sessions, "before_flush", _flush_writes)
