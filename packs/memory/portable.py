"""memory.export_records and memory.import_records: the memory pack's part of `pal export` / `pal import
palimpsest` (runtime/portable.py registers them, ADR 0018). The full-text snapshot is derived data and is not exported:
the index is rebuilt from the imported notes."""
from __future__ import annotations

from pydantic import BaseModel, Field

from palimpsest_memory.packs.memory import duplicates
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.runtime import Act, Context
from palimpsest_memory.runtime.params import Params
from palimpsest_memory.runtime.portable import Table, register_portable

TABLES = [
    # text_hash is derived from the content: not exported; the import's after-import step hashes the notes
    Table("note", "memory.notes", ("id",), unique=("id",), sequences=(("memory.note_ids", "id"),),
          generated=("text_hash",)),
    Table("vector", "memory.vectors", ("note_id", "model"), unique=("note_id",)),
    Table("belief_version", "memory.belief_versions", ("fact_key", "version")),
    Table("centrality", "memory.centrality", ("note_id",)),
    Table("audit", "memory.note_audit", ("seq",), sequences=(("memory.audit_seq", "seq"),)),
    Table("tombstone", "memory.tombstones", ("note_id", "forgotten_at")),
    Table("seen", "memory.note_seen", ("note_id",)),
    Table("seen_key", "memory.seen_keys", ("key",)),
]


def _after_import(ctx: Context) -> None:
    """The imported notes changed under the index snapshot: drop it (the index is rebuilt, and saved at close);
    and hash them, so that a later remember finds them as duplicates without looking for unhashed notes."""
    ctx.db.execute("DELETE FROM memory.index_snapshot WHERE namespace = ?", [ctx.namespace])
    duplicates.backfill(ctx)


register_portable(pack, TABLES, after_import=_after_import)


class BackupParams(Params):
    name: str = Field(min_length=1, max_length=121, description="File name of the copy, written to "
                                                                   "<database>.backups/ beside the store.")


class BackupResult(BaseModel):
    path: str = Field(description="Where the copy is (on the host of the process that holds the store).")


@pack.verb("backup", act=Act.COMMISSIVE)
def backup(params: BackupParams, ctx: Context) -> BackupResult:
    """Copy the whole store (every pack and namespace) consistently, also while a server holds it: once this
    call commits, the runtime checkpoints and copies the file under its lock (`pal backup DEST`)."""
    return BackupResult(path=ctx.backup_after_commit(params.name))
