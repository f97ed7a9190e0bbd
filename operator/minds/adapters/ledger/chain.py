"""The hash chain over the append-only ledger tables: one rule, written once.

Every row of an append-only table carries `prev_hash` (the `row_hash` of the row before it in
the same mind's chain, NULL for a mind's first row) and `row_hash`:

    row_hash = sha256(prev_hash || utf8(canonical content of the row))

The canonical content is the row as `to_jsonb` renders it, without `prev_hash` and `row_hash`
and without NULL-valued columns (so adding a nullable column later leaves old rows' hashes
valid), rendered under fixed settings (UTC, shortest exact floats) because `to_jsonb` follows
the session's time zone and float precision. jsonb sorts its keys, so the text is canonical.

A chain is one table and one mind (`namespace`, `mind`), ordered by the table's order column,
which, like `recorded_at`, the database assigns inside the insert under a per-mind advisory lock:
the caller cannot choose either, and concurrent appends of one mind take turns. The SQL below is
used both by the trigger that seals each row (migration 0006) and by `verify`, which recomputes
every chain without trusting any function stored in the database. All SQL here is assembled
from the code's own table and column names, never from input (hence the S608 waivers).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CANONICAL_SETTINGS",
    "CHAINED_TABLES",
    "CHAIN_ISOLATION_SQLSTATE",
    "ChainedTable",
    "chain_function_name",
    "chain_trigger_sql",
    "row_hash_sql",
]

# Session settings that `to_jsonb` output depends on, fixed wherever a hash is computed.
CANONICAL_SETTINGS = {"timezone": "UTC", "extra_float_digits": "1"}

# Raised by the sealing trigger outside READ COMMITTED: under a snapshot taken before the
# per-mind lock, an append could miss the row it must chain to and fork the chain.
CHAIN_ISOLATION_SQLSTATE = "ML002"


@dataclass(frozen=True)
class ChainedTable:
    """An append-only table whose rows are chained per mind.

    `order` is the column that orders a chain; the database assigns it from the column's
    sequence. `parent` names (table, foreign key column) for a table whose rows belong to a mind
    through another row; the trigger copies that row's namespace and mind at insert time.
    """

    name: str
    key: str
    keys: str
    order: str = "id"
    parent: tuple[str, str] | None = None

    @property
    def key_columns(self) -> tuple[str, ...]:
        """What the append writes into the keys table besides ``recorded_at``: the key, and for
        executions the id too (the rows that name an execution reference it there)."""
        return (self.key, "id") if self.name == "executions" else (self.key,)


# A table added here needs a migration that installs its trigger (`chain_trigger_sql`) and
# chains the rows it already holds, as 0006 does for these.
#: `key` is the column that makes an append idempotent (a replay adds nothing); since 0011 the
#: tables are partitioned by time and the key's unique index lives in the unpartitioned `keys`
#: table, written by the sealing trigger (see docs/adr/0002-ledger-partitions.md).
CHAINED_TABLES = (
    ChainedTable("events", key="idempotency_key", keys="event_keys"),
    ChainedTable("volition_decisions", key="idempotency_key", keys="volition_decision_keys"),
    ChainedTable("executions", key="origin_key", keys="execution_keys"),
    ChainedTable(
        "execution_outcomes",
        key="execution_id",
        keys="execution_outcome_keys",
        parent=("executions", "execution_id"),
    ),
    ChainedTable(
        "belief_evidence", key="key", keys="belief_evidence_keys", parent=("beliefs", "belief_id")
    ),
    ChainedTable("procedural_memories", key="id", keys="procedural_memory_keys", order="seq"),
)


def journal_lock_sql(table: ChainedTable) -> str:
    """The transaction lock every append to ``table`` takes for one mind (the sealing trigger
    below takes it too): named by the table and ``:namespace``/``:mind``. Taken before reading,
    it makes a read-decide-append sequence the only writer of that mind's chain until commit."""
    return (
        f"SELECT pg_advisory_xact_lock(hashtext('{table.name}'), "
        "hashtext(CAST(:namespace AS text) || '/' || CAST(:mind AS text)))"
    )


def _content_sql(row: str) -> str:
    return (
        "convert_to(coalesce((SELECT jsonb_object_agg(c.key, c.value)::text "  # noqa: S608
        f"FROM jsonb_each(to_jsonb({row}) - 'prev_hash' - 'row_hash') AS c "
        "WHERE jsonb_typeof(c.value) <> 'null'), ''), 'UTF8')"
    )


def row_hash_sql(prev: str, row: str) -> str:
    """SQL for the hash of `row` (a row or record expression) chained after `prev` (bytea).

    Valid only under `CANONICAL_SETTINGS`."""
    return f"sha256(coalesce({prev}, ''::bytea) || {_content_sql(row)})"


def chain_function_name(table: ChainedTable) -> str:
    return f"minds_chain_{table.name}"


def chain_trigger_sql(
    table: ChainedTable, *, schema: str, sequence: str, partitioned: bool = False
) -> list[str]:
    """The statements that create the sealing function and BEFORE INSERT trigger of `table`.

    `schema` and `sequence` (schema-qualified) are resolved at migration time and written into
    the function, whose search_path is pinned: a caller's search_path cannot redirect a name.

    ``partitioned`` (migration 0011 on): `recorded_at` is `statement_timestamp()`, the value its
    column default already routed the row by (a BEFORE trigger runs after routing and may not
    move a row to another partition), and the row's key goes into the table's keys table first:
    a key already there skips the row, as ON CONFLICT DO NOTHING did with the unique index the
    partitioned table can no longer have.
    """
    qualified = f'"{schema}"."{table.name}"'
    settings = "\n".join(f"SET {name} = '{value}'" for name, value in CANONICAL_SETTINGS.items())
    parent = ""
    if table.parent is not None:
        parent_table, fk = table.parent
        parent = (
            f'SELECT p.namespace, p.mind INTO NEW.namespace, NEW.mind FROM "{schema}".'  # noqa: S608
            f'"{parent_table}" AS p WHERE p.id = NEW.{fk};\n    '
        )
    recorded = "now()"
    keyed = ""
    if partitioned:
        recorded = "statement_timestamp()"
        columns = ", ".join(table.key_columns)
        values = ", ".join(f"NEW.{c}" for c in table.key_columns)
        keyed = (
            f'INSERT INTO "{schema}"."{table.keys}" ({columns}, recorded_at)\n'  # noqa: S608
            f"        VALUES ({values}, NEW.recorded_at) ON CONFLICT DO NOTHING;\n"
            "    IF NOT FOUND THEN\n        RETURN NULL;\n    END IF;\n    "
        )
    function = f"""
CREATE OR REPLACE FUNCTION "{schema}".{chain_function_name(table)}() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
{settings}
AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'minds ledger: appends to "{table.name}" need READ COMMITTED isolation'
            USING ERRCODE = '{CHAIN_ISOLATION_SQLSTATE}';
    END IF;
    {parent}PERFORM pg_advisory_xact_lock(hashtext('{table.name}'),
                                 hashtext(NEW.namespace || '/' || NEW.mind));
    NEW.{table.order} := nextval('{sequence}'::regclass);
    NEW.recorded_at := {recorded};
    {keyed}SELECT t.row_hash INTO NEW.prev_hash FROM {qualified} AS t
        WHERE t.namespace = NEW.namespace AND t.mind = NEW.mind
        ORDER BY t.{table.order} DESC LIMIT 1;
    NEW.row_hash := {row_hash_sql("NEW.prev_hash", "NEW")};
    RETURN NEW;
END;
$$
"""  # noqa: S608
    trigger = (
        f"CREATE TRIGGER {table.name}_chain BEFORE INSERT ON {qualified} "
        f'FOR EACH ROW EXECUTE FUNCTION "{schema}".{chain_function_name(table)}()'
    )
    return [function, trigger]
