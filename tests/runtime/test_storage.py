"""Storage: one file, a schema per pack, numbered migrations recorded, forward-only, newer schema refused."""
import pytest
from runtime_fakes import store_pack

from palimpsest_memory.runtime import Runtime, errors
from palimpsest_memory.runtime.storage import discover_migrations

ENV = {"PALIMPSEST_CONFIG_DISABLED": "1"}


def test_migrations_applied_in_order_and_recorded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    pack = store_pack(tmp_path)
    (pack.migrations / "002_more.sql").write_text("ALTER TABLE store.rows ADD COLUMN n INTEGER DEFAULT 0;")
    with Runtime.open(":memory:", packs=[pack], env=ENV) as rt:
        assert rt.schema_versions() == {"store": 2}
        cols = [r[0] for r in rt.store.con.execute("DESCRIBE store.rows").fetchall()]
        assert cols == ["text", "n"]


def test_reopening_a_file_keeps_data_and_migrates_forward(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "pal.duckdb"
    pack = store_pack(tmp_path)
    with Runtime.open(db, packs=[pack], env=ENV) as rt:
        rt.call("store.add", {"text": "persisted"})
    (pack.migrations / "002_more.sql").write_text("CREATE TABLE store.extra (x INTEGER);")
    with Runtime.open(db, packs=[pack], env=ENV) as rt:
        assert rt.schema_versions() == {"store": 2}
        assert rt.call("store.count").n == 1


def test_newer_schema_than_known_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "pal.duckdb"
    pack = store_pack(tmp_path)
    (pack.migrations / "002_more.sql").write_text("CREATE TABLE store.extra (x INTEGER);")
    Runtime.open(db, packs=[pack], env=ENV).close()
    (pack.migrations / "002_more.sql").unlink()
    with pytest.raises(errors.StorageError, match="schema version 2.*knows only up to 1.*newer palimpsest"):
        Runtime.open(db, packs=[pack], env=ENV)


def test_edited_migration_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "pal.duckdb"
    pack = store_pack(tmp_path)
    Runtime.open(db, packs=[pack], env=ENV).close()
    (pack.migrations / "001_rows.sql").write_text("CREATE TABLE store.rows (text VARCHAR, other INT);")
    with pytest.raises(errors.StorageError, match="changed after it was applied"):
        Runtime.open(db, packs=[pack], env=ENV)


def test_failing_migration_is_rolled_back_and_named(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "pal.duckdb"
    pack = store_pack(tmp_path)
    (pack.migrations / "002_broken.sql").write_text("CREATE TABLE store.ok (x INT); SELEC nonsense;")
    with pytest.raises(errors.StorageError, match="store/002_broken.sql failed"):
        Runtime.open(db, packs=[pack], env=ENV)
    (pack.migrations / "002_broken.sql").unlink()
    with Runtime.open(db, packs=[pack], env=ENV) as rt:
        assert rt.schema_versions() == {"store": 1}
        tables = {r[0] for r in rt.store.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'store'").fetchall()}
        assert tables == {"rows"}


def test_migration_names_and_gaps_are_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "001_a.sql").write_text("SELECT 1;")
    (tmp_path / "003_c.sql").write_text("SELECT 1;")
    with pytest.raises(errors.StorageError, match="without gaps"):
        discover_migrations(tmp_path)
    (tmp_path / "003_c.sql").unlink()
    (tmp_path / "2-bad.sql").write_text("SELECT 1;")
    with pytest.raises(errors.StorageError, match="NNN_title.sql"):
        discover_migrations(tmp_path)


def test_schema_per_pack(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with Runtime.open(":memory:", packs=[store_pack(tmp_path, "one"), store_pack(tmp_path, "two")], env=ENV) as rt:
        rt.call("one.add", {"text": "a"})
        assert (rt.call("one.count").n, rt.call("two.count").n) == (1, 0)
        schemas = {r[0] for r in rt.store.con.execute("SELECT schema_name FROM information_schema.schemata").fetchall()}
        assert {"one", "two", "_palimpsest"} <= schemas


@pytest.mark.parametrize("stem", ["store", "memory", "palimpsest"])
def test_a_file_named_like_a_pack_schema_still_opens(tmp_path, stem) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / f"{stem}.duckdb"
    pack = store_pack(tmp_path)
    with Runtime.open(db, packs=[pack], env=ENV) as rt:
        rt.call("store.add", {"text": "kept"})
    with Runtime.open(db, packs=[pack], env=ENV) as rt:
        assert rt.call("store.count").n == 1
