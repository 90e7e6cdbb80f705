"""Shared pieces for the adapter tests: runtimes over test packs, and bounded, self-stopping server processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
EXAMPLE_DIR = REPO / "tests" / "fixtures" / "example_pack"
for p in (str(EXAMPLE_DIR), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import fake_packs  # noqa: E402
import palimpsest_example  # noqa: E402

from palimpsest_memory.runtime import Runtime  # noqa: E402

ISOLATED = {"PALIMPSEST_CONFIG_DISABLED": "1"}
STARTUP_LIMIT = 90.0  # seconds a server process may take to publish its URL before the test gives up


def open_runtime(*packs: Any, path: str | Path, env: dict[str, str] | None = None) -> Runtime:
    # a file, not ":memory:": DuckDB names an in-memory database's catalog "memory", which makes the schema of a
    # pack called memory ambiguous
    return Runtime.open(path, packs=list(packs), discover_packs=False, env={**ISOLATED, **(env or {})})


@pytest.fixture
def fake_rt(tmp_path: Path) -> Iterator[Runtime]:
    rt = open_runtime(palimpsest_example, fake_packs.memory, fake_packs.kg, fake_packs.zeta, path=tmp_path / "pal.db")
    yield rt
    rt.close()


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: no user config, no stray PALIMPSEST_* settings, our paths importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST")}
    env.update(ISOLATED)
    from palimpsest_memory.runtime.testing import ISOLATED_ENV  # the session's packs: an unrelated installed pack stays out

    env.update({k: v for k, v in ISOLATED_ENV.items() if k == "PALIMPSEST_DISABLE_PACKS"})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(EXAMPLE_DIR), str(HERE)])
    env.update(extra)
    return env


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``pal ARGS`` in a child process (the same code path as the console script)."""
    return subprocess.run([sys.executable, "-m", "palimpsest_memory.runtime.adapters.cli", *args], cwd=REPO, env=env or child_env(),
                          capture_output=True, text=True, timeout=timeout)


class ServerProcess:
    """A server process (the test launcher, or ``argv``) holding ``db``; ``url`` comes from the info file it writes."""

    def __init__(self, db: Path, mode: str, *, fakes: bool = False, env: dict[str, str] | None = None,
                 argv: list[str] | None = None) -> None:
        self.db = db
        self.stderr = ""
        self.info_file = Path(str(db) + ".server.json")
        args = argv or [sys.executable, str(HERE / "launch.py"), str(db), mode] + (["--fakes"] if fakes else [])
        self.proc = subprocess.Popen(args, cwd=REPO, env=env or child_env(), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.info = self._wait_for_info()
        self.url = self.info["url"]

    def _wait_for_info(self) -> dict[str, Any]:
        deadline = time.monotonic() + STARTUP_LIMIT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                raise AssertionError(f"server exited with {self.proc.returncode} before serving:\n{err}\n{out}")
            try:
                info = json.loads(self.info_file.read_text())
                if info.get("pid") == self.proc.pid:
                    return info
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"server did not publish {self.info_file} within {STARTUP_LIMIT}s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        # what the server printed, kept so a test can show why it did not exit cleanly
        if self.proc.stderr and not self.proc.stderr.closed:
            self.stderr += self.proc.stderr.read()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream:
                stream.close()
