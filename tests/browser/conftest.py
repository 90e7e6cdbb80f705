"""Browser tests of the web view (issue 21): a real Chromium driven by Selenium against a real server.

The server is the one `pal serve` runs (``create_app`` + uvicorn on a loopback socket, in a thread of this
process) over the demo data (``demo/data.py``) plus a "big" namespace whose hub has 499 neighbours. Screenshots
go to each test's tmp folder; with ``PALIMPSEST_SCREENSHOTS=DIR`` (``make screenshots``) also to DIR, one per
view, for the README. Skipped, with the reason, when selenium, chromium or chromedriver is missing.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from palimpsest_memory.runtime.testing import backends

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # served.py, the `pal serve` helper
from served import BIG, LOCOMO  # noqa: E402
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
        import uvicorn  # noqa: F401
        import fastapi  # noqa: F401
    except ImportError as exc:
        return f"the browser tests need selenium and the http extra ({exc.name} is missing)"
    if not Path(CHROMIUM).exists() or not Path(DRIVER).exists():
        return "the browser tests need Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
    return None


def load_demo_module() -> Any:
    spec = importlib.util.spec_from_file_location("palimpsest_demo_data", ROOT / "demo" / "data.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def build_store(db: Path) -> None:
    demo = load_demo_module()
    rt, clock = demo.open_demo(db)
    with rt:
        demo.load(rt, clock)
        rt.call("kg.define_predicate", {"name": "knows", "cardinality": "many"}, namespace="big")
        rt.call("kg.assert_facts", {"facts": [{"subject": "Hub", "predicate": "knows", "object": f"Person {i:03d}"}
                                              for i in range(BIG - 1)]}, namespace="big")
        rt.call("memory.remember", {"content": "One note, so the big namespace is listed with its notes."}, namespace="big")


class Server:
    def __init__(self, db: Path, token: str | None = None) -> None:
        import uvicorn

        from palimpsest_memory.runtime import Runtime
        from palimpsest_memory.runtime.adapters.http import create_app
        from palimpsest_memory.runtime.adapters.serving import bind_socket, loopback_hosts, url_of

        self.rt = Runtime.open(db)
        self.sock = bind_socket("127.0.0.1", 0)
        self.url = url_of(self.sock)
        app = create_app(self.rt, token=token, allowed_hosts=loopback_hosts(self.sock.getsockname()[1]))
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
        self.rt.close()


@pytest.fixture(scope="session")
def web_db() -> Iterator[Path]:
    why = _missing()
    if why:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="palimpsest-web-"))
    db = folder / "demo.duckdb"
    build_store(db)
    yield db
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def server(web_db: Path) -> Iterator[Server]:
    srv = Server(web_db)
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    why = _missing()
    if why:
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="palimpsest-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,1100"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser: Any, server: Server, tmp_path: Path) -> Iterator["Page"]:
    p = Page(browser, server, tmp_path)
    yield p


class Page:
    """The driver, the server and helpers: open a view, wait for something, take a screenshot."""

    def __init__(self, driver: Any, server: Server, tmp: Path) -> None:
        self.d, self.server, self.tmp = driver, server, tmp

    def open(self, fragment: str = "", namespace: str | None = None) -> None:
        self.d.get(self.server.url + "/")
        self.d.execute_script("localStorage.clear(); sessionStorage.clear();"
                              + (f"localStorage.setItem('palimpsest.namespace', {namespace!r});" if namespace else ""))
        self.d.get(f"{self.server.url}/#/{fragment}")
        self.d.refresh()

    def wait(self, condition: Any, timeout: float = 15) -> Any:
        from selenium.common.exceptions import StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        return WebDriverWait(self.d, timeout, poll_frequency=0.05, ignored_exceptions=(
            IndexError, StaleElementReferenceException)).until(lambda d: condition(d) or None)

    def css(self, selector: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return self.d.find_elements(By.CSS_SELECTOR, selector)

    def shot(self, name: str) -> Path:
        path = self.tmp / f"{name}.png"
        self.d.save_screenshot(str(path))
        extra = os.environ.get("PALIMPSEST_SCREENSHOTS")
        if extra:
            Path(extra).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(extra) / f"{name}.png")
        return path

    def verbs_called(self) -> list[str]:
        names = self.d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        return [n.split("/v1/verbs/")[1].split("?")[0] for n in names if "/v1/verbs/" in n]

    def hosts_contacted(self) -> set[str]:
        names = self.d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        return {n.split("/")[2] for n in names if n.startswith("http")}


# -- the pages people tidy their memory in (issue 42, item 3): a real `pal serve` on each backend ----------------
@pytest.fixture(scope="module", params=backends())
def tidy(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A `pal serve` process over a store filled by ``served.fill`` (DuckDB file or fresh PostgreSQL database);
    ``tidy.data`` holds the note ids and recall ids the tests look for."""
    pytest.importorskip("uvicorn", reason="the 'http' extra is not installed")
    from served import fill

    yield from served_store(request, tmp_path_factory, "tidy", fill)


def served_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, name: str,
                 fill: Any) -> Iterator[Any]:
    """A store of the fixture's backend, filled by ``fill(target)`` (its result becomes ``.data``), served by a
    `pal serve` process until the module's tests are done; the server must then exit cleanly."""
    from served import PalServe

    folder = tmp_path_factory.mktemp(f"{name}-{request.param}")
    pg = request.getfixturevalue("pal_postgres") if request.param == "postgres" else None
    target = pg.fresh() if pg else str(folder / f"{name}.duckdb")
    data = fill(target)
    srv = PalServe(target)
    srv.data, srv.backend = data, request.param
    yield srv
    err = srv.stop()
    if pg:
        pg.drop(target)
    assert srv.proc.returncode == 0, err


@pytest.fixture
def tidy_page(browser: Any, tidy: Any, tmp_path: Path) -> "Page":
    return Page(browser, tidy, tmp_path)


# -- the graph page on a real import (issue 42, item 3, point 4): a real `pal serve` on each backend -------------
@pytest.fixture(scope="module", params=backends())
def graph_served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A `pal serve` process over a generated conversation import (``conversation_graph.fill_graph``) and, when
    the LoCoMo file is present, its first conversation in the namespace ``locomo``; ``.data`` holds the node ids."""
    pytest.importorskip("uvicorn", reason="the 'http' extra is not installed")
    from conversation_graph import fill_graph
    from served import open_store

    def fill(target: str) -> dict[str, Any]:
        with open_store(target) as rt:
            data = fill_graph(rt)
            if LOCOMO.is_file():
                from palimpsest_memory.packs.memory.commands import import_conversations
                from palimpsest_memory.packs.memory.importers.conversations import parse_locomo

                conv = parse_locomo(LOCOMO)[0]
                import_conversations(rt, [conv], "locomo", "locomo")
                data["locomo_speaker"] = conv.speakers[0]
        return data

    yield from served_store(request, tmp_path_factory, "graph", fill)


@pytest.fixture
def graph_page(browser: Any, graph_served: Any, tmp_path: Path) -> "Page":
    return Page(browser, graph_served, tmp_path)
