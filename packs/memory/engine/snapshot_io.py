"""Where a memory index snapshot's bytes live: in its ``memory.index_snapshot`` row, or in a file beside a DuckDB
store that the row names (snapshot.py decides what a snapshot holds; this module only stores and reads bytes).

DuckDB reads a large BLOB back at ~80-100 MB/s here (measured on this machine: a
64 MB row in 0.55-0.85 s, whatever the row size; the same bytes in memory in 0.08 s), which at 1M notes (~1.7 GB of
BM25, graph and vectors) alone took longer than the reopen goal. So for a DuckDB file the bytes go to a file beside
it (``<store>.index/``), and the row keeps what names them: a marker, a random tag written in the file too, the
size, a CRC-32 of the bytes and the file name. A file that is missing, short, of another write (its tag differs)
or damaged (its CRC-32 differs: issue 46, F6 — zeroed rows of the vectors file took vector-only recall from 25/25
to 0/25 with no error) makes the snapshot unusable, as a stale one is: the damage is logged and the index is
rebuilt from the tables. PostgreSQL (and an in-memory DuckDB) keep the bytes in the row.

A file is ``<folder>/<namespace hash>-<row id>-<tag>.bin``: written to a temporary name and renamed, an earlier
write's file of the same row deleted; the row holds ``MARK + tag + size + CRC-32 + file name``. The CRC-32 is
computed while the file is written (zlib's runs at ~4 GB/s here) and checked the first time this process uses the
file, reading it in blocks into one reusable buffer (no fresh pages: ADR 0025); ADR 0032 gives the cost. A row of
the first format (``LEGACY``, no CRC-32) is used as before and saved again, with one, at close.
"""
from __future__ import annotations

import hashlib
import io
import mmap
import os
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from palimpsest_memory.runtime import Context

MARK = b"PALIMPSEST-SNAPSHOT-FILE-2\n"  # the row holds the file's CRC-32
LEGACY = b"PALIMPSEST-SNAPSHOT-FILE-1\n"  # a row (and file) written before the CRC-32: used, saved again at close
HEAD = len(MARK) + 16  # the marker and the write's tag, at the start of the file and of the row
BLOCK = 8 << 20  # bytes read at a time to check a file's CRC-32
_verified: dict[tuple[str, int, int, int], bool] = {}  # (path, inode, size, mtime) -> CRC-32 matched, this process


def folder(ctx: Context) -> Path | None:
    """The folder beside a DuckDB store file for snapshot bytes, None when the bytes stay in the row."""
    return ctx.db.files_beside(".index")


def _stem(namespace: str) -> str:
    return hashlib.blake2b(namespace.encode("utf-8"), digest_size=8).hexdigest()


def put(ctx: Context, row_id: int, sig: str, notes: int, max_id: int, data: "bytes | list") -> int:
    """Store one snapshot row (``data``: its bytes, or a list of buffers written one after the other); returns its
    size."""
    parts = data if isinstance(data, list) else [data]
    size = sum(memoryview(p).nbytes for p in parts)
    where = folder(ctx)
    if where is None:
        data = b"".join(parts)
    else:
        where.mkdir(exist_ok=True)
        tag = os.urandom(16)
        stem = _stem(ctx.namespace) + f"-{row_id}"
        name = f"{stem}-{tag.hex()}.bin"
        tmp = where / (name + ".tmp")
        crc = 0
        try:
            with open(tmp, "wb") as f:
                f.write(MARK + tag)
                for p in parts:
                    f.write(p)
                    crc = zlib.crc32(p, crc)
            os.replace(tmp, where / name)
        except BaseException:  # a full disk: no half-written file left behind (~1 GB at 1M notes)
            tmp.unlink(missing_ok=True)
            raise
        for old in where.glob(stem + "-*.bin"):  # an earlier write's (its row is replaced below)
            if old.name != name:
                try:
                    old.unlink(missing_ok=True)
                except OSError:  # still mapped by this process, on a system that refuses that: left for later
                    pass
        data = MARK + tag + size.to_bytes(8, "little") + crc.to_bytes(4, "little") + name.encode()
    # delete + insert: DuckDB's upsert of a large BLOB took ~9x longer (2.7 s against 0.3 s for 40 MB here)
    ctx.db.execute("DELETE FROM memory.index_snapshot WHERE namespace = ? AND id = ?", [ctx.namespace, row_id])
    ctx.db.execute("INSERT INTO memory.index_snapshot VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [ctx.namespace, row_id, sig, notes, max_id, ctx.now(), data])
    return size


def file_of(ctx: Context, data: bytes) -> tuple[Path, int, int] | None:
    """(path, offset of its bytes, their size) of the file a row names, when it is that write's file (its tag),
    whole (its size) and undamaged (its CRC-32); None for a row that holds its bytes itself, or names a file that is
    not that (a damaged one is logged)."""
    data = bytes(data)
    where = folder(ctx)
    if where is None or not names_a_file(data):
        return None
    legacy = data.startswith(LEGACY)
    tag, size = data[len(MARK):HEAD], int.from_bytes(data[HEAD:HEAD + 8], "little")
    crc, name = (None, data[HEAD + 8:]) if legacy else (int.from_bytes(data[HEAD + 8:HEAD + 12], "little"),
                                                        data[HEAD + 12:])
    try:
        path = where / name.decode()
        with open(path, "rb") as f:
            if f.read(HEAD) != data[:len(MARK)] + tag or os.fstat(f.fileno()).st_size != HEAD + size:
                return None
            if crc is not None and not _crc_matches(f, size, crc):
                ctx.log.warning("index snapshot file %s is damaged (its CRC-32 differs from the one written): not "
                                "used, the index is rebuilt from the tables", path)
                return None
    except (OSError, UnicodeDecodeError):
        return None
    return path, HEAD, size


def _crc_matches(f: Any, size: int, crc: int) -> bool:
    """Whether the ``size`` bytes after the head of the open file ``f`` have the CRC-32 ``crc``; a file checked
    before by this process and not changed since (same inode, size and time) is not read again."""
    st = os.fstat(f.fileno())
    key = (f.name, st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _verified:
        return _verified[key]
    buf = bytearray(min(BLOCK, max(size, 1)))
    view, got, done = memoryview(buf), 0, 0
    while done < size:
        n = f.readinto(view[:min(len(buf), size - done)])
        if not n:
            break
        got = zlib.crc32(view[:n], got)
        done += n
    view.release()
    ok = done == size and got == crc
    if len(_verified) > 1024:
        _verified.clear()
    _verified[key] = ok
    return ok


def names_a_file(data: bytes) -> bool:
    return bytes(data[:len(MARK)]) in (MARK, LEGACY)


def legacy(data: bytes) -> bool:
    """A row of the first file format (no CRC-32): its snapshot is saved again at close."""
    return bytes(data[:len(MARK)]) == LEGACY


def held_inline(ctx: Context, data: bytes) -> bool:
    """Whether a row holds its bytes itself where they would now go to a file (a store saved before files were
    used), or names a file of the first format (no CRC-32): the caller then saves it again at close."""
    return folder(ctx) is not None and (legacy(data) or len(data) > (1 << 20) and not names_a_file(data))


@contextmanager
def opened(ctx: Context, data: bytes) -> Iterator[memoryview | None]:
    """A snapshot row's bytes as a read-only buffer while the block runs: its own, or its file's, mapped rather
    than read (None when that file is not the one it names). At 1M notes the BM25 and graph files hold ~770 MB;
    reading them first copied every byte into fresh pages, which the restore then copied again — and on this
    machine a fresh page's first touch is what a slow reopen spends its time on (ADR 0025). The mapping is closed
    when the block ends: a caller copies what it keeps."""
    data = bytes(data)
    if not names_a_file(data):
        yield memoryview(data)
        return
    found = _map(ctx, data)
    if found is None:
        yield None
        return
    mapping, view = found
    try:
        yield view
    finally:
        view.release()
        mapping.close()


def held(ctx: Context, data: bytes) -> memoryview | None:
    """A snapshot row's bytes for as long as the returned view (or any view of it) is held: its own, or its file's
    mapped read-only (None when that file is not the one it names). ``opened``, but for a caller that keeps views."""
    data = bytes(data)
    if not names_a_file(data):
        return memoryview(data)
    found = _map(ctx, data)
    return None if found is None else found[1]


def _map(ctx: Context, data: bytes) -> tuple[mmap.mmap, memoryview] | None:
    found = file_of(ctx, data)
    if found is None:
        return None
    path, offset, size = found
    try:
        with open(path, "rb") as f:
            mapping = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    view = memoryview(mapping)[offset:offset + size]
    if len(view) != size:
        view.release()
        mapping.close()
        return None
    return mapping, view


def npz_arrays(buf: memoryview) -> dict[str, np.ndarray]:
    """The arrays of an ``np.savez`` archive (members stored, not compressed) as read-only views of ``buf``, each
    member's CRC-32 checked first as ``np.load`` checks it (``zipfile.BadZipFile`` when it differs). ``np.load`` read
    every member into fresh memory before the restore copied it again: at 1M notes ~370 MB of first touches (ADR
    0025). The views hold ``buf`` (a mapping stays mapped while one lives): a caller copies what it keeps, or keeps
    the views on purpose (the BM25 postings)."""
    out: dict[str, np.ndarray] = {}
    with zipfile.ZipFile(BufferReader(buf)) as archive:
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise zipfile.BadZipFile(f"{info.filename}: not a stored .npy member")
            head = bytes(buf[info.header_offset:info.header_offset + 30])
            if len(head) < 30 or head[:4] != b"PK\x03\x04":
                raise zipfile.BadZipFile(f"{info.filename}: bad local header")
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            start = info.header_offset + 30 + name_len + extra_len
            member = buf[start:start + info.compress_size]
            if len(member) != info.compress_size or zlib.crc32(member) != info.CRC:
                raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")
            reader = BufferReader(member)
            version = np.lib.format.read_magic(reader)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read_header(reader)
            if dtype.hasobject:
                raise ValueError(f"{info.filename}: object arrays are not read")
            count = int(np.prod(shape, dtype=np.int64))
            arr = np.frombuffer(member, dtype=dtype, count=count, offset=reader.tell())
            out[info.filename[:-4]] = arr.reshape(shape, order="F" if fortran else "C")
    return out


class BufferReader(io.RawIOBase):
    """A seekable, read-only file over a buffer without copying it (``io.BytesIO`` copies anything but ``bytes``):
    ``npz_arrays`` reads a snapshot's ``.npz`` directory and headers through it."""

    def __init__(self, buf: memoryview) -> None:
        super().__init__()
        self._buf, self._pos = buf, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        n = max(0, min(len(b), len(self._buf) - self._pos))
        b[:n] = self._buf[self._pos:self._pos + n]
        self._pos += n
        return n

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._buf)}[whence]
        if base + pos < 0:
            raise ValueError("negative seek position")
        self._pos = base + pos
        return self._pos

    def tell(self) -> int:
        return self._pos


def drop_files(ctx: Context, lo: int = 0, hi: int | None = None, *, every_namespace: bool = False,
               mapped_ok: bool = False) -> None:
    """Delete the snapshot files of rows ``lo``..``hi`` (of the call's namespace, or of every one). ``mapped_ok``:
    a file this process still maps, on a system that refuses to delete it, is left for a later write; otherwise
    that is an error (memory.forget must not leave erased text behind)."""
    where = folder(ctx)
    if where is None:
        return
    for f in where.glob("*" if every_namespace else _stem(ctx.namespace) + "-*"):
        parts = f.name.split("-")
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        row = int(parts[1])
        if row < lo or (hi is not None and row > hi):
            continue
        try:
            f.unlink(missing_ok=True)
        except OSError:
            if not mapped_ok:
                raise
