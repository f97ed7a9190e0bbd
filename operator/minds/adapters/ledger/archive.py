"""Archiving a closed partition of the chained tables, then cutting it away (the owner's
`minds db archive`, docs/adr/0002-ledger-partitions.md).

For each partition of a chained table that ends on or before ``before`` (a month wholly before
it, or the legacy partition), `archive_before` writes, into ``out``:

- ``<partition>.jsonl.gz``: every row, in chain order (namespace, mind, order), one JSON object
  a line, as `to_jsonb` renders it under the chain's canonical settings (so the content the
  row's hash covers), `prev_hash` and `row_hash` included as hex;
- ``<partition>.manifest.json``: the table, the partition and its range, the row count, the
  file's sha256, per chain its first and last order, the first row's `prev_hash` and the last
  row's `row_hash`, and the manifest's seal under the ledger's active key.

Then, in one transaction, it records a cut per chain in `ledger_cuts` (its last order and head,
the manifest's sha256, sealed with the key), detaches the partition and drops it. `minds db
verify` accepts a chain's first live row when its `prev_hash` is a recorded cut's head; any
other missing start is a gap. The keys of archived rows stay in the keys tables (a later
outcome or prediction may still reference an archived execution), as do their seals.
All SQL is assembled from the code's own names and the catalog's, never from input.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import URL, Connection, text
from sqlalchemy.pool import NullPool

from minds.adapters.ledger.chain import CANONICAL_SETTINGS, CHAINED_TABLES, ChainedTable
from minds.adapters.ledger.db import make_engine
from minds.adapters.ledger.partitions import closed_partitions
from minds.domain.ledger_seal import SEAL_ALGORITHM, SealingKey, cut_message, manifest_message

__all__ = ["Archived", "archive_before"]


@dataclass(frozen=True)
class Archived:
    """One partition written out and cut away."""

    table: str
    partition: str
    rows: int
    chains: int
    manifest: Path


def _canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _write_rows(
    connection: Connection, table: ChainedTable, partition: str, path: Path
) -> tuple[int, list[dict[str, Any]]]:
    rows = connection.execute(
        text(
            f"SELECT (to_jsonb(t) - 'prev_hash' - 'row_hash')::text, t.namespace, t.mind, "  # noqa: S608
            f"t.{table.order}, t.prev_hash, t.row_hash FROM {partition} AS t "
            f"ORDER BY t.namespace, t.mind, t.{table.order}"
        )
    )
    chains: dict[tuple[str, str], dict[str, Any]] = {}
    count = 0
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for content, namespace, mind, order, prev, head in rows:
            row = json.loads(content)
            row["prev_hash"] = None if prev is None else bytes(prev).hex()
            row["row_hash"] = bytes(head).hex()
            out.write(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n")
            count += 1
            chain = chains.setdefault(
                (namespace, mind),
                {
                    "namespace": namespace,
                    "mind": mind,
                    "first_order": int(order),
                    "first_prev_hash": row["prev_hash"],
                    "rows": 0,
                },
            )
            chain["rows"] += 1
            chain["last_order"] = int(order)
            chain["last_row_hash"] = row["row_hash"]
    return count, list(chains.values())


def _archive_one(
    connection: Connection,
    table: ChainedTable,
    partition: str,
    bounds: tuple[str | None, str],
    out: Path,
    key: SealingKey,
) -> Archived:
    data = out / f"{partition}.jsonl.gz"
    count, chains = _write_rows(connection, table, partition, data)
    manifest: dict[str, Any] = {
        "table": table.name,
        "partition": partition,
        "from": bounds[0],
        "to": bounds[1],
        "rows": count,
        "file": data.name,
        "sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
        "chains": chains,
    }
    document = _canonical(manifest)
    digest = hashlib.sha256(document).hexdigest()
    sealed = {
        **manifest,
        "seal": key.seal(manifest_message(document)).hex(),
        "seal_key": key.id,
        "seal_alg": SEAL_ALGORITHM,
    }
    path = out / f"{partition}.manifest.json"
    path.write_text(json.dumps(sealed, indent=2, sort_keys=True) + "\n")
    for chain in chains:
        head = bytes.fromhex(chain["last_row_hash"])
        message = cut_message(
            table.name, chain["namespace"], chain["mind"], chain["last_order"], head, digest
        )
        connection.execute(
            text(
                "INSERT INTO ledger_cuts (table_name, namespace, mind, last_order, head, "
                "partition, manifest_sha256, seal, seal_key, seal_alg) VALUES (:t, :n, :m, "
                ":o, :h, :p, :d, :s, :k, :a)"
            ),
            {
                "t": table.name,
                "n": chain["namespace"],
                "m": chain["mind"],
                "o": chain["last_order"],
                "h": head,
                "p": partition,
                "d": digest,
                "s": key.seal(message),
                "k": key.id,
                "a": SEAL_ALGORITHM,
            },
        )
    connection.execute(text(f"ALTER TABLE {table.name} DETACH PARTITION {partition}"))
    connection.execute(text(f"DROP TABLE {partition}"))
    return Archived(table.name, partition, count, len(chains), path)


def archive_before(url: str | URL, before: datetime, out: Path, key: SealingKey) -> list[Archived]:
    """Archive and cut every partition of the chained tables that ends on or before
    ``before``, as the owner, each in its own transaction (its files written first)."""
    out.mkdir(parents=True, exist_ok=True)
    before = before.astimezone(UTC)
    done: list[Archived] = []
    engine = make_engine(url, poolclass=NullPool)
    try:
        for table in CHAINED_TABLES:
            with engine.connect() as connection:
                closed = closed_partitions(connection, table.name, before)
            for partition, bounds in closed:
                with engine.begin() as connection:
                    for name, value in CANONICAL_SETTINGS.items():
                        connection.execute(
                            text("SELECT set_config(:n, :v, true)"), {"n": name, "v": value}
                        )
                    # No append lands in a closed range, but a reader's snapshot must not
                    # see the rows gone before the cut is recorded: one transaction, locked.
                    connection.execute(text(f"LOCK TABLE {partition} IN ACCESS EXCLUSIVE MODE"))
                    done.append(_archive_one(connection, table, partition, bounds, out, key))
    finally:
        engine.dispose()
    return done
