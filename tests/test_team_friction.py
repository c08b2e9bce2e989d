"""Team friction: ``--user`` takes the email a person signs in with (their owner id is
``<issuer>#<sub>``), and a grid sent again after it finished asks first (the CLI needs
``--again``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rr_core.cli import main
from rr_core.errors import ConfigError
from rr_core.signin import Identity, identity_of
from rr_core.store import open_store
from rr_core.workbench import acting_user
from tests.review_kit import COLUMNS_CSV, write_contracts

ANN = "https://id.example#5f2c"
ANN_ELSEWHERE = "https://other-id.example#ann-7"


def test_a_sign_in_carries_its_email_for_the_store_to_record() -> None:
    claims = {"is_logged_in": True, "exp": 2_000_000_000, "iss": "https://id.example", "sub": "5f2c"}
    found = identity_of({**claims, "email": "ann@example.com"}, now=1_000)
    assert isinstance(found, Identity) and found.owner == ANN and found.email == "ann@example.com"
    bare = identity_of(claims, now=1_000)
    assert isinstance(bare, Identity) and bare.owner == ANN and bare.email == ""


def test_user_takes_an_email_and_finds_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite3"
    open_store(path, owner=ANN).note_email("ann@example.com")
    assert acting_user("ann@example.com", url=path) == ANN
    assert acting_user("ANN@example.com", url=path) == ANN  # case aside
    assert acting_user(ANN, url=path) == ANN  # an owner id is taken as it is
    assert acting_user("bob@example.com", url=path) == "bob@example.com"  # a local file: the name, as given
    open_store(path, owner=ANN_ELSEWHERE).note_email("ann@example.com")
    with pytest.raises(ConfigError) as raised:
        acting_user("ann@example.com", url=path)
    message = str(raised.value)
    assert (
        "2 people signed in with ann@example.com" in message and ANN in message and ANN_ELSEWHERE in message
    )


def test_in_a_teams_store_an_unknown_email_says_what_to_give(pg_url: str) -> None:
    with pytest.raises(ConfigError, match="no one has signed in with ann@example.com.*<issuer>#<sub>"):
        acting_user("ann@example.com", url=pg_url)
    open_store(pg_url, owner=ANN).note_email("ann@example.com")
    assert acting_user("ann@example.com", url=pg_url) == ANN


def test_a_finished_grid_sent_again_needs_again(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_contracts(tmp_path / "contracts")
    (tmp_path / "questions.csv").write_text(COLUMNS_CSV, encoding="utf-8")
    monkeypatch.setenv("RR_STUDIO_DB", pg_url)
    open_store(pg_url, owner=ANN).note_email("ann@example.com")
    argv = [
        "--json", "--user", "ann@example.com", "review", str(tmp_path / "contracts"), "--questions",
        str(tmp_path / "questions.csv"), "--provider", "offline", "--processes", "1", "--submit",
    ]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    first = json.loads(capsys.readouterr().out)["work_id"]
    store = open_store(pg_url, owner=ANN)  # the email's owner holds the work
    record = store.get_work(first)
    assert record is not None and record.state == "queued"
    store.update_work(first, state="done", done=record.total)  # (as a worker would end it)

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"work {first}, finished " in err and "--again" in err and "Nothing was sent" in err
    assert [w.work_id for w in store.list_work()] == [first]  # nothing queued

    assert main([*argv, "--again"]) == 0, capsys.readouterr().err
    second = json.loads(capsys.readouterr().out)["work_id"]
    assert second != first
    assert [w.work_id for w in store.list_work()] == [second, first]
