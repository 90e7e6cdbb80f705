"""`pal`'s global options anywhere on the line (issue 41, item 5): after the command they mean what they mean
before it; `--opt=value` works; the same option twice with different values is an error naming both; nothing
after `--` and no value of the command's own options is taken; a command's own `--actor` is the global one."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def pal(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`pal` as a process; PALIMPSEST_DB names a default file the tests expect to stay unused when --db is given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(PALIMPSEST_CONFIG_DISABLED="1", PALIMPSEST_DB=str(tmp / "default.duckdb"), COLUMNS="100",
               PALIMPSEST__packs__memory__embedder="hashing")
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args],
                          capture_output=True, text=True, env=env, cwd=str(tmp), timeout=120)


def ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, (proc.args, proc.stdout, proc.stderr)
    return proc


def notes(tmp: Path, db: Path, namespace: str) -> list[dict]:
    return json.loads(ok(pal(tmp, "--db", str(db), "-n", namespace, "--json", "memory", "list")).stdout)["notes"]


def test_export_takes_n_after_the_command(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ok(pal(tmp_path, "--db", str(db), "-n", "work", "memory", "remember", "ship the release on Friday"))
    ok(pal(tmp_path, "--db", str(db), "-n", "home", "memory", "remember", "buy oat milk"))
    out = tmp_path / "backup.jsonl"
    ok(pal(tmp_path, "--db", str(db), "export", str(out), "-n", "work"))  # the README's line
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["namespace"] == "work"
    assert [r["data"]["content"] for r in lines if r.get("type") == "note"] == ["ship the release on Friday"]
    same = tmp_path / "same.jsonl"  # and it is the same export as with -n before the command
    ok(pal(tmp_path, "--db", str(db), "-n", "work", "export", str(same)))
    assert [json.loads(x).get("type") for x in same.read_text().splitlines()] == [r.get("type") for r in lines]


def test_db_after_the_command_picks_the_file(tmp_path: Path) -> None:
    db = tmp_path / "other.duckdb"
    ok(pal(tmp_path, "memory", "remember", "Orion uses Postgres", "--db", str(db)))
    found = json.loads(ok(pal(tmp_path, "memory", "recall", "Postgres", "--db", str(db), "--json")).stdout)
    assert [r["note"]["content"] for r in found["results"]] == ["Orion uses Postgres"]
    assert db.exists() and not (tmp_path / "default.duckdb").exists()


def test_opt_equals_value_after_the_command(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ok(pal(tmp_path, "memory", "remember", "a work note", f"--db={db}", "--namespace=work"))
    assert [n["content"] for n in notes(tmp_path, db, "work")] == ["a work note"]
    assert notes(tmp_path, db, "default") == []
    out = tmp_path / "w.jsonl"
    ok(pal(tmp_path, "export", str(out), f"--db={db}", "--namespace=work"))
    assert json.loads(out.read_text().splitlines()[0])["namespace"] == "work"


def test_json_and_actor_after_the_command(tmp_path: Path) -> None:
    """A recall made for bob (--actor after the command) is ranked with bob's profile: feedback on it, given
    without naming an actor, goes to that profile."""
    db = str(tmp_path / "s.duckdb")
    ok(pal(tmp_path, "--db", db, "memory", "remember", "alpha centauri is the nearest star system"))
    ok(pal(tmp_path, "--db", db, "brain", "profile", "bobs", "--actor", "bob"))
    recall = json.loads(ok(pal(tmp_path, "--db", db, "memory", "recall", "alpha", "--actor", "bob", "--json")).stdout)
    note_id = recall["results"][0]["note"]["id"]
    fed = json.loads(ok(pal(tmp_path, "--db", db, "brain", "feedback", recall["recall_id"], str(note_id), "useful",
                            "--json")).stdout)
    assert fed["profile"] == "bobs"


def test_a_commands_own_actor_means_the_global_one(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    before = json.loads(ok(pal(tmp_path, "--db", db, "--actor", "bob", "--json", "brain", "profile", "p1")).stdout)
    after = json.loads(ok(pal(tmp_path, "--db", db, "--json", "brain", "profile", "p2", "--actor", "bob")).stdout)
    assert before["bound_to"] == after["bound_to"] == "bob"
    both = pal(tmp_path, "--db", db, "--actor", "alice", "brain", "profile", "p3", "--actor", "bob")
    assert both.returncode == 2 and "'alice'" in both.stderr and "'bob'" in both.stderr


def test_an_option_given_twice_with_different_values_is_an_error(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    out = tmp_path / "x.jsonl"
    twice = pal(tmp_path, "--db", str(db), "-n", "work", "export", str(out), "-n", "home")
    assert twice.returncode == 2, twice.stderr
    assert "--namespace is given twice" in twice.stderr and "'work'" in twice.stderr and "'home'" in twice.stderr
    assert not out.exists() and not db.exists()
    as_json = pal(tmp_path, "--json", f"--db={db}", "memory", "count", "--db", str(tmp_path / "t.duckdb"))
    assert as_json.returncode == 2
    message = json.loads(as_json.stdout)["error"]["message"]
    assert "--db" in message and str(db) in message and str(tmp_path / "t.duckdb") in message
    ok(pal(tmp_path, "--db", str(db), "-n", "work", "export", str(out), "--namespace", "work"))  # same value: fine


def test_nothing_after_double_dash_or_in_an_options_value_is_taken(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ok(pal(tmp_path, "memory", "remember", "--db", str(db), "-n", "work", "--", "-n"))
    ok(pal(tmp_path, "memory", "remember", "--db", str(db), "-n", "work", "--", "--db"))
    ok(pal(tmp_path, "memory", "remember", "scoped", "--scope", "-n", "-n", "work", "--db", str(db)))
    got = {n["content"]: n["scope"] for n in notes(tmp_path, db, "work")}
    assert got == {"-n": None, "--db": None, "scoped": "-n"}


def test_a_value_after_a_global_option_is_its_value_even_with_a_dash(tmp_path: Path) -> None:
    db = str(tmp_path / "s.duckdb")
    first = json.loads(ok(pal(tmp_path, "memory", "remember", "once", "--idempotency-key", "k1", "--db", db,
                              "--json")).stdout)
    again = json.loads(ok(pal(tmp_path, "memory", "remember", "once", "--idempotency-key", "k1", "--db", db,
                              "--json")).stdout)
    assert first["note"]["id"] == again["note"]["id"]  # a retry with the key: written once
    assert len(notes(tmp_path, tmp_path / "s.duckdb", "default")) == 1
    dashed = pal(tmp_path, "memory", "remember", "twice", "--idempotency-key", "-k2", "--db", db)
    assert dashed.returncode == 2 and "idempotency key '-k2'" in dashed.stderr  # taken as the key, not an option
    missing = pal(tmp_path, "export", "x.jsonl", "-n")
    assert missing.returncode == 2 and "-n needs a value" in missing.stderr
