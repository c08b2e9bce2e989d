"""The screens keep their own state in one typed value (``pages.common.state.Session``)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from pages.common.state import SESSION_KEY, LabChoices, Session
from pages.common.text import md
from rr_core.lab.presets import PRESETS

APP = str(Path(__file__).resolve().parent.parent / "app.py")
# The loose keys the screens kept their own state under before: now fields of the session.
MOVED = (
    "sample", "upload", "upload_password", "upload_ocr", "question_prefilled", "scroll_to_results",
    "doc_show_batch", "viewed_batch", "view_citation", "confirm_delete", "delete_message",
    "lab_engine", "lab_preset", "lab_methods_for", "lab_kv_for", "lab_layout", "lab_methods",
    "lab_lengths", "lab_depths", "lab_repeats", "lab_budget",
)  # fmt: skip


def test_the_screens_state_is_one_typed_value_and_widgets_write_into_it() -> None:
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.button(key="run").click().run()
    at.switch_page("pages/lab.py").run()
    assert not at.exception, [e.value for e in at.exception]
    session = at.session_state[SESSION_KEY]
    assert isinstance(session, Session) and isinstance(session.lab, LabChoices)
    assert [key for key in MOVED if key in at.session_state] == []
    # The first visit filled in the sample's question; the Lab filled its grid from the preset.
    assert session.question_prefilled and session.sample
    assert (session.lab.preset, session.lab.grid_for) == ("quick", "quick")
    assert session.lab.methods == ", ".join(PRESETS["quick"].series)
    # A widget writes into its field, and a new preset refills the grid from its own.
    other = next(name for name in PRESETS if name != "quick" and PRESETS[name].task == "planted")
    at.selectbox(key="w.lab_preset").set_value(other).run()
    session = at.session_state[SESSION_KEY]
    assert (session.lab.preset, session.lab.grid_for) == (other, other)
    assert session.lab.methods == ", ".join(PRESETS[other].series)
    at.number_input(key="w.lab_budget").set_value(2.5).run()
    assert at.session_state[SESSION_KEY].lab.budget == 2.5


def test_the_lab_names_each_presets_task_from_the_task_registry() -> None:
    from rr_core.lab import TASKS

    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/lab.py").run()
    for name, preset in PRESETS.items():
        at.selectbox(key="w.lab_preset").set_value(name).run()
        assert not at.exception
        assert f"**Measured on:** {md(TASKS[preset.task].label)}." in [c.value for c in at.caption]
