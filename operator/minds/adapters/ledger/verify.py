"""Recompute every hash chain of the ledger and say where one breaks.

For each chained table and mind, in chain order, a row is intact when its `prev_hash` is the
`row_hash` of the row before it (NULL for the first) and its `row_hash` is the hash of its own
content after that (`chain.row_hash_sql`, evaluated here in a query of our own, not by any
function stored in the database). An edited row breaks its own seal; a deleted row breaks the
link of the row after it; a row slipped in breaks the link of the row after it, or its own seal.

What the chain cannot show on its own: an owner rewriting a whole chain consistently, or
removing a mind's newest rows. With the keys (`keys`), each row's seal (`ledger_seals`, see
`minds.domain.ledger_seal`) is checked too, which nobody without the key can recompute, and the
chain's switch: unsealed rows are accepted before it only. Removed newest rows are shown by a
head kept outside the database: a `checkpoint` the controller kept (every head it names must
still be that row, and the database must not hold a newer checkpoint of it), or `anchors`
from an earlier run (`Verification.heads`, each still a row of its chain or `lost`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import URL, Connection, text
from sqlalchemy.pool import NullPool

from minds.adapters.ledger.chain import (
    CANONICAL_SETTINGS,
    CHAINED_TABLES,
    ChainedTable,
    row_hash_sql,
)
from minds.adapters.ledger.db import make_engine
from minds.adapters.ledger.keys import LedgerKeys
from minds.domain.ledger_seal import (
    SEAL_ALGORITHM,
    SealedCheckpoint,
    cut_message,
    row_message,
    switch_message,
)

__all__ = [
    "BAD_CUT",
    "BAD_SWITCH",
    "CHANGED",
    "SEAL_MISMATCH",
    "UNLINKED",
    "ChainBreak",
    "ChainHead",
    "ChainSummary",
    "Unverified",
    "Verification",
    "parse_heads",
    "verify_chains",
    "verify_chains_on",
]


@dataclass(frozen=True)
class ChainBreak:
    """The first row of one mind's chain in one table that does not hold."""

    table: str
    namespace: str
    mind: str
    position: int
    previous: int | None
    reason: str

    def describe(self) -> str:
        after = f" (after row {self.previous})" if self.previous is not None else ""
        return (
            f"{self.table}: chain of mind {self.namespace}/{self.mind} breaks at row "
            f"{self.position}{after}: {self.reason}"
        )


@dataclass(frozen=True)
class ChainHead:
    """The newest hash of one mind's chain in one table; `line()` and `parse_heads` are the
    file format of `minds db verify --heads-file`."""

    table: str
    namespace: str
    mind: str
    row_hash: str

    def line(self) -> str:
        return f"head {self.table} {self.namespace}/{self.mind} {self.row_hash}"


def parse_heads(text_: str) -> list[ChainHead]:
    """Heads written by `ChainHead.line`; any other line is refused, naming it."""
    heads = []
    for number, line in enumerate(text_.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        mind = parts[2].split("/") if len(parts) == 4 else []
        if parts[0] != "head" or len(mind) != 2 or not _is_hex(parts[3]):
            raise ValueError(f"line {number} is not `head TABLE NAMESPACE/MIND HASH`: {line!r}")
        heads.append(ChainHead(parts[1], mind[0], mind[1], parts[3]))
    return heads


def _is_hex(value: str) -> bool:
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return bool(value)


@dataclass(frozen=True)
class ChainSummary:
    """What one chain holds: its rows, how many are sealed, and where it switched."""

    table: str
    namespace: str
    mind: str
    rows: int
    sealed: int
    switch: int | None

    def describe(self) -> str:
        switched = f"sealed from row {self.switch}" if self.switch is not None else "not switched"
        return (
            f"{self.table} {self.namespace}/{self.mind}: {self.rows} rows, "
            f"{self.sealed} sealed, {switched}"
        )


@dataclass(frozen=True)
class Unverified:
    """Sealed rows whose key the verifier was not given: neither good nor bad."""

    table: str
    namespace: str
    mind: str
    key: str
    rows: int

    def describe(self) -> str:
        return (
            f"{self.table}: {self.rows} rows of mind {self.namespace}/{self.mind} are sealed "
            f"under key {self.key!r}, which the keys given do not hold"
        )


@dataclass(frozen=True)
class Verification:
    rows: int
    chains: int
    breaks: tuple[ChainBreak, ...]
    heads: tuple[ChainHead, ...]
    lost: tuple[ChainHead, ...] = ()
    summaries: tuple[ChainSummary, ...] = ()
    #: None: no key was given, the seals were not checked (the plain chain and the switch
    #: rule were).
    keys: tuple[str, ...] | None = None
    unverified: tuple[Unverified, ...] = ()
    #: What a checkpoint kept outside the database showed, if one was given.
    checkpoint: tuple[str, ...] = ()

    @property
    def sealed(self) -> int:
        return sum(summary.sealed for summary in self.summaries)

    @property
    def intact(self) -> bool:
        return not (self.breaks or self.lost or self.unverified or self.checkpoint)


def _rows_sql(table: ChainedTable, cuts: bool = False) -> str:
    """Every row of ``table`` in chain order: the plain chain's two checks (computed here, by
    no stored function), and the row's seal, if any. With ``cuts`` (the ledger has
    `ledger_cuts`), a chain's first row may follow a recorded cut's head: the rows before it
    were archived, not lost."""
    linked = "t.prev_hash IS NOT DISTINCT FROM lag(t.row_hash) OVER w"
    if cuts:
        linked = (
            f"CASE WHEN lag(t.row_hash) OVER w IS NULL AND t.prev_hash IS NOT NULL THEN EXISTS "  # noqa: S608
            f"(SELECT 1 FROM ledger_cuts AS c WHERE c.table_name = '{table.name}' AND "
            "c.namespace = t.namespace AND c.mind = t.mind AND c.head = t.prev_hash) "
            f"ELSE {linked} END"
        )
    return f"""
SELECT t.namespace, t.mind, t.{table.order} AS position,
       lag(t.{table.order}) OVER w AS previous,
       {linked} AS linked,
       t.row_hash IS NOT DISTINCT FROM {row_hash_sql("t.prev_hash", "t")} AS hashed,
       t.row_hash, s.seal, s.seal_key, s.seal_alg
FROM {table.name} AS t
LEFT JOIN ledger_seals AS s ON s.table_name = '{table.name}' AND s.row_order = t.{table.order}
WINDOW w AS (PARTITION BY t.namespace, t.mind ORDER BY t.{table.order})
ORDER BY t.namespace, t.mind, t.{table.order}
"""  # noqa: S608


_SWITCHES_SQL = """
SELECT table_name, namespace, mind, first_sealed_order, seal, seal_key, seal_alg
FROM chain_switches
"""


UNLINKED = "its prev_hash is not the row_hash of the row before it (a row was removed or added)"
CHANGED = "its row_hash does not match its content (the row was changed)"
SEAL_MISMATCH = (
    "its seal does not match (the row, its position or its hash was changed, or someone "
    "without the key sealed it)"
)
BAD_SWITCH = "its chain's switch does not match its seal (the switch was changed)"


def unsealed_after(switch: int) -> str:
    return f"it is not sealed, but its chain switched to sealing at row {switch}"


def sealed_before(switch: int | None) -> str:
    if switch is None:
        return "it is sealed, but its chain has no recorded switch (the switch was removed)"
    return f"it is sealed, but its chain's switch says sealing began at row {switch}"


def _reason(linked: bool) -> str:
    return CHANGED if linked else UNLINKED


@dataclass
class _Chain:
    table: str
    namespace: str
    mind: str
    switch: int | None
    rows: int = 0
    sealed: int = 0
    head: bytes = b""
    broken: bool = False
    unverified: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Switch:
    first: int
    holds: bool | None  # None: its key was not given


def _switches(
    connection: Connection, keys: LedgerKeys | None
) -> dict[tuple[str, str, str], _Switch]:
    found = {}
    for table, namespace, mind, first, seal, key_id, alg in connection.execute(text(_SWITCHES_SQL)):
        key = keys.get(key_id) if keys is not None else None
        holds = None
        if key is not None:
            holds = alg == SEAL_ALGORITHM and key.holds(
                switch_message(table, namespace, mind, int(first)), bytes(seal)
            )
        found[(table, namespace, mind)] = _Switch(int(first), holds)
    return found


def _check_row(
    chain: _Chain,
    switch: _Switch | None,
    keys: LedgerKeys | None,
    position: int,
    row_hash: bytes,
    seal: bytes | None,
    key_id: str | None,
    alg: str | None,
) -> str | None:
    """Why a row that holds in the plain chain fails the keyed rules, if it does."""
    first = switch.first if switch is not None else None
    if seal is None:
        return unsealed_after(first) if first is not None and position >= first else None
    chain.sealed += 1
    if first is None or position < first:
        return sealed_before(first)
    if switch is not None and switch.holds is False:
        return BAD_SWITCH
    if keys is None or key_id is None:
        return None
    key = keys.get(key_id)
    if key is None:
        chain.unverified[key_id] = chain.unverified.get(key_id, 0) + 1
        return None
    message = row_message(chain.table, chain.namespace, chain.mind, position, row_hash)
    if alg != SEAL_ALGORITHM or not key.holds(message, seal):
        return SEAL_MISMATCH
    return None


def _verify_table(
    connection: Connection,
    table: ChainedTable,
    keys: LedgerKeys | None,
    switches: dict[tuple[str, str, str], _Switch],
    breaks: list[ChainBreak],
) -> list[_Chain]:
    chains: list[_Chain] = []
    chain: _Chain | None = None
    for (
        namespace,
        mind,
        position,
        previous,
        linked,
        hashed,
        row_hash,
        seal,
        key_id,
        alg,
    ) in connection.execute(text(_rows_sql(table, _has_cuts(connection)))):
        if chain is None or (chain.namespace, chain.mind) != (namespace, mind):
            switch = switches.get((table.name, namespace, mind))
            chain = _Chain(table.name, namespace, mind, switch.first if switch else None)
            chains.append(chain)
        chain.rows += 1
        chain.head = bytes(row_hash)
        reason = None if (linked and hashed) else _reason(bool(linked))
        keyed = _check_row(
            chain,
            switches.get((table.name, namespace, mind)),
            keys,
            int(position),
            bytes(row_hash),
            None if seal is None else bytes(seal),
            key_id,
            alg,
        )
        reason = reason or keyed
        if reason is not None and not chain.broken:
            chain.broken = True  # after its first break a chain says nothing more
            breaks.append(ChainBreak(table.name, namespace, mind, position, previous, reason))
    return chains


def _has_cuts(connection: Connection) -> bool:
    found = connection.execute(text("SELECT to_regclass('ledger_cuts') IS NOT NULL")).scalar()
    return bool(found)


BAD_CUT = "its chain's cut does not match its seal (a cut was written without the key)"

_CUTS_SQL = """
SELECT table_name, namespace, mind, last_order, head, manifest_sha256, seal, seal_key, seal_alg
FROM ledger_cuts ORDER BY table_name, namespace, mind, last_order
"""


def _cut_breaks(connection: Connection, keys: LedgerKeys | None) -> list[ChainBreak]:
    """A cut whose seal does not hold under its key: someone without the key recorded one, to
    pass off rows dropped without an archive as archived."""
    if keys is None or not _has_cuts(connection):
        return []
    breaks = []
    for table, namespace, mind, last, head, manifest, seal, key_id, alg in connection.execute(
        text(_CUTS_SQL)
    ):
        key = keys.get(key_id)
        if key is None:
            continue
        message = cut_message(table, namespace, mind, int(last), bytes(head), manifest)
        if alg != SEAL_ALGORITHM or not key.holds(message, bytes(seal)):
            breaks.append(ChainBreak(table, namespace, mind, int(last), None, BAD_CUT))
    return breaks


def _lost(connection: Connection, anchors: Sequence[ChainHead]) -> list[ChainHead]:
    """The anchors that are no longer a row of their chain."""
    tables = {t.name: t for t in CHAINED_TABLES}
    lost = []
    for anchor in anchors:
        table = tables.get(anchor.table)
        found = (
            table is not None
            and connection.execute(
                text(
                    f"SELECT 1 FROM {table.name} WHERE namespace = :ns AND mind = :mind "  # noqa: S608
                    "AND row_hash = decode(:hash, 'hex')"
                ),
                {"ns": anchor.namespace, "mind": anchor.mind, "hash": anchor.row_hash},
            ).first()
        )
        if not found:
            lost.append(anchor)
    return lost


def _checkpoint_problems(
    connection: Connection, sealed: SealedCheckpoint, keys: LedgerKeys
) -> list[str]:
    """What a checkpoint kept outside the database shows: every head it names must still be
    that row of its chain (same hash, same seal), and the database must not have recorded a
    newer checkpoint of the same object than the one given (an old one put back)."""
    checkpoint = sealed.checkpoint
    key = keys.get(sealed.key)
    if key is None:
        return [
            f"the checkpoint is sealed under key {sealed.key!r}, which the keys given do not hold"
        ]
    if not sealed.holds(key):
        return [
            "the checkpoint does not match its seal (it was changed, or forged without the key)"
        ]
    problems = []
    tables = {t.name: t for t in CHAINED_TABLES}
    for head in checkpoint.heads:
        table = tables.get(head.table)
        row = (
            connection.execute(
                text(
                    f"SELECT encode(t.row_hash, 'hex'), encode(s.seal, 'hex') FROM {table.name} "  # noqa: S608
                    f"AS t LEFT JOIN ledger_seals AS s ON s.table_name = '{table.name}' AND "
                    f"s.row_order = t.{table.order} WHERE t.namespace = :ns AND t.mind = :mind "
                    f"AND t.{table.order} = :order"
                ),
                {"ns": head.namespace, "mind": head.mind, "order": head.order},
            ).first()
            if table is not None
            else None
        )
        if row is None or (row[0], row[1] if head.seal is not None else None) != (
            head.row_hash,
            head.seal,
        ):
            problems.append(
                f"{head.table} {head.namespace}/{head.mind}: row {head.order}, its head at "
                f"checkpoint {checkpoint.sequence}, is no longer in its chain as it was "
                "(the chain was truncated or rewritten)"
            )
    newest = connection.execute(
        text("SELECT max(sequence) FROM ledger_checkpoints WHERE name = :name"),
        {"name": checkpoint.name},
    ).scalar()
    if newest is not None and int(newest) > checkpoint.sequence:
        problems.append(
            f"the database recorded checkpoint {newest} of {checkpoint.name}, newer than the "
            f"{checkpoint.sequence} given (an old checkpoint was put back)"
        )
    return problems


def verify_chains_on(
    connection: Connection,
    anchors: Sequence[ChainHead] = (),
    keys: LedgerKeys | None = None,
    checkpoint: SealedCheckpoint | None = None,
) -> Verification:
    """Verify every chain, its seals (with ``keys``; without, the seals are not checked) and
    switch, that every anchor (a head kept from an earlier run) is still in its chain, and
    what ``checkpoint`` shows, in one snapshot (so appends racing the check are wholly in it
    or not at all)."""
    for name, value in CANONICAL_SETTINGS.items():
        connection.execute(text("SELECT set_config(:n, :v, true)"), {"n": name, "v": value})
    breaks: list[ChainBreak] = []
    chains: list[_Chain] = []
    switches = _switches(connection, keys)
    for table in CHAINED_TABLES:
        chains += _verify_table(connection, table, keys, switches, breaks)
    for (table_name, namespace, mind), switch in switches.items():
        if switch.holds is False and not any(
            (c.table, c.namespace, c.mind) == (table_name, namespace, mind) for c in chains
        ):
            breaks.append(ChainBreak(table_name, namespace, mind, switch.first, None, BAD_SWITCH))
    breaks += _cut_breaks(connection, keys)
    return Verification(
        rows=sum(c.rows for c in chains),
        chains=len(chains),
        breaks=tuple(breaks),
        heads=tuple(ChainHead(c.table, c.namespace, c.mind, c.head.hex()) for c in chains),
        lost=tuple(_lost(connection, anchors)),
        summaries=tuple(
            ChainSummary(c.table, c.namespace, c.mind, c.rows, c.sealed, c.switch) for c in chains
        ),
        keys=None if keys is None else tuple(keys.keys),
        unverified=tuple(
            Unverified(c.table, c.namespace, c.mind, key_id, count)
            for c in chains
            for key_id, count in c.unverified.items()
        ),
        checkpoint=tuple(
            _checkpoint_problems(connection, checkpoint, keys)
            if checkpoint is not None and keys is not None
            else ()
        ),
    )


def verify_chains(
    url: str | URL,
    anchors: Sequence[ChainHead] = (),
    keys: LedgerKeys | None = None,
    checkpoint: SealedCheckpoint | None = None,
) -> Verification:
    engine = make_engine(url, read_only=True, poolclass=NullPool, isolation_level="REPEATABLE READ")
    try:
        with engine.begin() as connection:
            return verify_chains_on(connection, anchors, keys, checkpoint)
    finally:
        engine.dispose()
