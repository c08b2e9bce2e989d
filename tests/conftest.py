"""Shared fixtures. No test may spend money: real keys are removed from the environment."""

from __future__ import annotations

import contextlib
import functools
import os
import random
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.browser_kit import PROVIDER_VARIABLES
from tests.stub_server import StubServer

ROOT = Path(__file__).resolve().parent.parent
# The price data's answers (rr_core.costs) are kept for the whole suite in a folder of its own,
# not the user's ~/.cache; the test processes and the commands they start share it.
os.environ.setdefault("RR_STUDIO_CACHE", str(Path(tempfile.gettempdir()) / f"rr-studio-tests-{os.getuid()}"))
SHARED_DATA = Path(os.environ.get("RR_SHARED_DATA") or ROOT.parent / "shared" / "data") / "documents"


# The files that take longest, longest first (seconds of a quiet ``make test``, from its
# ``--junitxml``): 278, 246, 129, 118, 68, 64, 62, 61, 59, 57, 57, 55, 44, 37.
LONGEST_FILES = (
    "test_browser.py", "test_team.py", "test_app_lab.py", "test_queue_parts.py", "test_browser_signin.py",
    "test_queue.py", "test_browser_screens.py", "test_browser_lab.py", "test_batch_e2e.py", "test_browser_fit.py",
    "test_batch_kill_loop.py", "test_browser_triage.py", "test_app_session.py", "test_browser_review.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first, then the other browser tests (a real app and Chromium each),
    then the rest, each file whole and in its order: on several processes (``make test``, whose
    ``--no-loadscope-reorder`` keeps this order instead of xdist's, most tests first) the long
    ones start at once and the short ones fill in around them, instead of the longest starting
    last and running alone."""

    def rank(item: pytest.Item) -> tuple[int, bool]:
        name = item.path.name
        first = LONGEST_FILES.index(name) if name in LONGEST_FILES else len(LONGEST_FILES)
        return first, item.get_closest_marker("browser") is None

    items.sort(key=rank)  # stable: files stay whole


@pytest.fixture(autouse=True)
def _no_real_providers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # Every test gets its own run ledger.
    monkeypatch.setenv("RR_STUDIO_DB", str(tmp_path / "runs.sqlite3"))


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """The loopback provider stub (``tests/stub_server.py``), serving for one test."""
    with StubServer() as server:
        yield server


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port where a connection is refused, for certain, throughout the test.

    The socket stays bound without listening: a connect gets a refusal, and no other process
    can take the port meanwhile (as it could a port found free and then closed).
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


class DroppingServer:
    """A loopback server that takes each connection, reads the request and closes without an
    answer (a request that reached the provider and whose answer was lost: it may be billed).
    ``close()``: the port refuses the next connection."""

    def __init__(self) -> None:
        import threading

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen()
        self.port = int(self._socket.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._socket.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)

    def close(self) -> None:
        # A listening socket closed while another thread waits in accept() is not woken by
        # close() on Linux (and keeps taking connections): shutdown() wakes it first.
        with contextlib.suppress(OSError):  # already shut (closed twice)
            self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        self._thread.join(timeout=60)


@pytest.fixture
def dropping_server() -> Iterator[DroppingServer]:
    """A ``DroppingServer`` for one test."""
    server = DroppingServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def shared_documents() -> Path:
    """The real documents beside the project; tests using them skip when absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (a user's clone has no shared/)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def counter():  # type: ignore[no-untyped-def]
    """The default token counter (tiktoken when its files load, else the estimate)."""
    from rr_core.tokens import counter_for_model

    return counter_for_model("gpt-4.1-mini")


def word_counter():  # type: ignore[no-untyped-def]
    """A tokenizer-free counter: one token per word. Keeps pure tests independent of tiktoken."""
    from rr_core.tokens import TokenCounter

    return TokenCounter("words", approximate=True)


os.environ.setdefault("HYPOTHESIS_PROFILE", "ci")

# Offline tokenizer files beside the project (the Makefile exports the same default).
_SHARED_TIKTOKEN = ROOT.parent / "shared" / "tiktoken"
if _SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED_TIKTOKEN))

# No deadlines: property tests must not fail because a machine is slow.
settings.register_profile("ci", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=50)
settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


# ---- Planted-fact documents -----------------------------------------------------------

PLANTED_FACT = "The termination fee is 4.2 million euros."
PLANTED_QUESTION = "What is the termination fee?"
PLANTED_PAGE = 27

_SUBJECTS = (
    "The river", "A mountain path", "The old ledger", "Each invoice", "The harbor crane",
    "A brass lantern", "The meadow", "Copper wire", "The orchard", "A radio signal",
    "The committee", "Our warehouse", "The bakery", "A passing train", "The library",
)  # fmt: skip
_VERBS = (
    "crosses", "reflects", "records", "covers", "shelters", "lights", "feeds", "conducts",
    "yields", "carries", "welcomes", "stores", "follows", "describes", "measures",
)  # fmt: skip
_OBJECTS = (
    "the quiet valley", "pale morning light", "every account", "the spring shipment",
    "small fishing boats", "the narrow lane", "many grazing sheep", "a warm current",
    "ripe autumn apples", "a coded message", "the weekly agenda", "old furniture",
    "fresh bread", "distant hills", "rare manuscripts",
)  # fmt: skip


def filler_text(rng: random.Random, sentences: int) -> str:
    """Plausible filler: short sentences of varied words that never mention the planted fact."""
    return " ".join(
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)}." for _ in range(sentences)
    )


def planted_texts(
    pages: int = 40, gold: int = PLANTED_PAGE, fact: str = PLANTED_FACT, seed: int = 7, sentences: int = 40
) -> list[str]:
    """Page texts of filler with ``fact`` stated on page ``gold`` (1-based) only."""
    rng = random.Random(seed)
    texts = [filler_text(rng, sentences) for _ in range(pages)]
    half = sentences // 2
    texts[gold - 1] = f"{filler_text(rng, half)} {fact} {filler_text(rng, half)}"
    return texts


@pytest.fixture
def planted_document():  # type: ignore[no-untyped-def]
    """A 40-page document of filler whose page 27 states the termination fee."""
    from rr_core.documents import document_from_texts

    return document_from_texts("planted.txt", planted_texts(), counter=word_counter())


# Six pages mention the fee; the rest is filler. Two pages disagree on the amount.
FEE_PAGES = {
    3: "The termination fee is 4.2 million euros, payable on notice.",
    7: "Any termination fee is due within thirty days.",
    11: "The termination fee is 4.2 million euros as stated in the schedule.",
    15: "A reduced termination fee applies to early notice.",
    19: "The termination fee is 9 million dollars under the side letter.",
    23: "Fee schedules are annexed; the termination fee is set out there.",
}


@functools.lru_cache(maxsize=4)  # a Document is immutable: one per size is enough
def fee_document(pages: int = 24):  # type: ignore[no-untyped-def]
    """24 pages of filler; six mention the termination fee, two with other amounts."""
    from rr_core.documents import document_from_texts

    rng = random.Random(3)
    texts = [filler_text(rng, 12) for _ in range(pages)]
    for number, sentence in FEE_PAGES.items():
        if number <= pages:
            texts[number - 1] = f"{filler_text(rng, 4)} {sentence} {filler_text(rng, 4)}"
    return document_from_texts("fee.txt", texts, counter=word_counter())


PAPER_METHODS = ("baseline", "reprompt", "icr", "rr", "chunked-icr", "chunked-rr")


def small_settings(method: str, **changes: object):  # type: ignore[no-untyped-def]
    """Small k and c so a 40-page document gets reminders and several chunks; priced as a paid model."""
    from rr_core.settings import RunSettings

    base = RunSettings(method=method, reminder_every=1_000, chunk_size=3_000, price_model="gpt-4.1-mini")
    return base.but(**changes)


def offline_traces(document, *methods, question=PLANTED_QUESTION, **changes):  # type: ignore[no-untyped-def]
    """Runs of the given methods (the paper's six by default) on the offline engine, word-counted."""
    from rr_core.llm import OfflineEngine
    from rr_core.methods import plan_method
    from rr_core.runs import run_plans

    counter = word_counter()
    plans = [
        plan_method(document, question, small_settings(m, **changes), counter)
        for m in (methods or PAPER_METHODS)
    ]
    return run_plans(document, plans, OfflineEngine(counter))


# ---- AppTest ---------------------------------------------------------------------------


@pytest.fixture
def downloads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str | None, bytes]]:
    """(file name, bytes) of every file an AppTest-driven screen offers for download."""
    import streamlit.testing.v1.app_test as app_test
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    seen: list[tuple[str | None, bytes]] = []

    class Recording(MemoryMediaFileStorage):
        def load_and_get_id(self, path_or_data, mimetype, kind, filename=None):  # type: ignore[no-untyped-def]
            if isinstance(path_or_data, bytes):
                seen.append((filename, path_or_data))
            return super().load_and_get_id(path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", Recording)
    return seen


def markdown_table(node, first_column: str) -> list[dict[str, str]]:  # type: ignore[no-untyped-def]
    """The rows of the Markdown table (``pages.common.text.table``) whose first column is
    ``first_column``, among ``node``'s markdown elements: cells unescaped, as shown."""
    import re

    found = [m.value for m in node.markdown if m.value.startswith(f"| {first_column} |")]
    assert len(found) == 1, f"{len(found)} tables start with {first_column!r}"
    lines = found[0].splitlines()

    def cells(line: str) -> list[str]:
        parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        return [re.sub(r"\\(.)", r"\1", part.strip()) for part in parts]

    header = cells(lines[0])
    return [dict(zip(header, cells(line), strict=True)) for line in lines[2:]]


# ---- PostgreSQL (team mode) ------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """A throwaway PostgreSQL cluster for the session (``tests/pg_kit.py``).

    Skipped, saying why, when PostgreSQL is not installed; failed instead when
    ``RR_REQUIRE_POSTGRES=1`` (``.ci/run`` sets it: there the team-mode tests must run).
    """
    from tests.pg_kit import INSTALL_HINT, REQUIRE_ENV, PostgresServer, find_binaries

    binaries = find_binaries()
    if binaries is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{INSTALL_HINT} ({REQUIRE_ENV}=1: the PostgreSQL tests must run here)")
        pytest.skip(INSTALL_HINT)
    server = PostgresServer(binaries)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres_server: Any) -> Iterator[str]:
    """The URL of a fresh database of this test's own, as the application's (non-superuser) role."""
    restarted = postgres_server.ensure_running()
    if restarted:
        import warnings

        warnings.warn(restarted, stacklevel=1)
    name = postgres_server.new_database()
    yield postgres_server.url(name)
    from rr_core.store.postgres import close_pools

    close_pools()  # a store a test left open does not hold the database
    postgres_server.drop_database(name)


# ---- The browser tests' common fixtures (each browser test module gets its own, module-scoped) ----


def browser_unavailable(reason: str) -> None:
    """Skip a browser test for ``reason`` (fail instead under ``RR_REQUIRE_BROWSER=1``: CI)."""
    if os.environ.get("RR_REQUIRE_BROWSER") == "1":
        pytest.fail(f"RR_REQUIRE_BROWSER=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's chromium, or a skip saying why there is none."""
    from tests import browser_kit as kit

    try:
        return kit.chromium_path()
    except kit.BrowserUnavailable as exc:
        browser_unavailable(str(exc))
        raise AssertionError("unreachable") from exc


@pytest.fixture(scope="module")
def app_url(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real app, served by ``streamlit run`` on a free port, with the offline engine only.
    Asks for ``chromium`` first, so that a machine without a browser skips without starting it.
    (A module that needs another app, a stand-in or a sign-in provider, defines its own.)"""
    from tests import browser_kit as kit

    try:
        with kit.serve_app(tmp_path_factory.mktemp("server")) as server:
            yield server.url
    except kit.ServerFailed as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """One Chromium for the module's tests."""
    from tests import browser_kit as kit

    try:
        with kit.launch_chromium(chromium) as launched:
            yield launched
    except kit.BrowserUnavailable as exc:
        browser_unavailable(str(exc))
