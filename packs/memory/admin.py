"""memory.get, memory.reembed and memory.save_index: read notes by id; rebuild vectors after a model change;
snapshot the full-text index (the index mirror's close calls it, see snapshot.py)."""
from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from palimpsest_memory.packs.memory import duplicates
from palimpsest_memory.packs.memory.engine import snapshot
from palimpsest_memory.packs.memory.mirrors.changes import SnapshotSaved, VectorsReplaced, record
from palimpsest_memory.packs.memory.core import pack
from palimpsest_memory.packs.memory.engine.index_writes import index_text
from palimpsest_memory.packs.memory.models.notes import GetParams, GetResult, ReembedParams, ReembedResult
from palimpsest_memory.packs.memory.note_store import fetch_notes
from palimpsest_memory.packs.memory.settings import MemorySettings
from palimpsest_memory.runtime import Act, Context, Visibility, errors
from palimpsest_memory.runtime.params import Params


@pack.verb("get", act=Act.ASSERTIVE)
def get(params: GetParams, ctx: Context) -> GetResult:
    """Read notes by id (archived and superseded ones too); ids from another namespace count as missing."""
    found = fetch_notes(ctx, list(dict.fromkeys(params.ids)))
    duplicates.attach(ctx, list(found.values()))
    return GetResult(notes=[found[i] for i in dict.fromkeys(params.ids) if i in found],
                     missing=[i for i in dict.fromkeys(params.ids) if i not in found])


@pack.verb("reembed", act=Act.COMMISSIVE, bulk=True)
def reembed(params: ReembedParams, ctx: Context) -> ReembedResult:
    """(Re)compute every note's vector with a model (default: the configured one), e.g. after changing it."""
    model = params.model or ctx.settings.embedder
    embedders = ctx.state.embedders
    # the caller named a model nobody registered: their mistake, not config's
    if params.model is not None and model not in embedders.specs:
        raise errors.InvalidParams(f"no embedder named {model!r}; registered: {sorted(embedders.specs)}",
                                   details={"errors": [{"loc": ["model"], "msg": "unknown embedder",
                                                        "type": "value_error"}], "known": sorted(embedders.specs)})
    embedders.get(model)  # fail early, with the reason, if the model is unavailable (a missing extra)
    rows = ctx.db.query("SELECT id, content, occurred_at, namespace FROM memory.notes ORDER BY id")
    ctx.db.execute("DELETE FROM memory.vectors WHERE model = ?", [model])
    snapshot.drop_graphs(ctx)  # the saved HNSW graphs were built from the vectors this replaces
    if not rows:
        return ReembedResult(model=model, embedded=0)
    matrix = embedders.embed(model, [index_text(c, t) for _, c, t, _ in rows])
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    ctx.db.execute("INSERT INTO memory.vectors (note_id, model, dim, vec, namespace) "
                   "SELECT unnest($1), $2, $3, unnest($4::BLOB[]), unnest($5::VARCHAR[])",
                   [ids.tolist(), model, int(matrix.shape[1]), [v.tobytes() for v in matrix], [r[3] for r in rows]])
    spaces = np.array([r[3] for r in rows], dtype=object)
    for ns in sorted(set(spaces.tolist())):  # the index is held per namespace: one change for each
        mine = spaces == ns
        record(ctx, VectorsReplaced(model, ids[mine], matrix[mine]), namespace=ns)
    return ReembedResult(model=model, embedded=len(rows))


class SaveIndexParams(Params):
    pass


class SaveIndexResult(BaseModel):
    saved: bool
    notes: int
    bytes: int


@pack.verb("save_index", act=Act.COMMISSIVE, visibility=Visibility.SUBHANDLER)
def save_index(params: SaveIndexParams, ctx: Context) -> SaveIndexResult:
    """Write the full-text index snapshot, and the vector graphs that changed, if the index changed since it was
    loaded (the runtime's close calls it)."""
    s: MemorySettings = ctx.settings
    index = ctx.state.index.of(ctx.namespace)
    if not index.dirty or len(index.rows) < s.index_snapshot_min_notes:
        return SaveIndexResult(saved=False, notes=len(index.rows), bytes=0)
    size = snapshot.write(ctx, index) + snapshot.write_graphs(ctx, index) + snapshot.write_vectors(ctx, index)
    record(ctx, SnapshotSaved())
    return SaveIndexResult(saved=True, notes=len(index.rows), bytes=size)
