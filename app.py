"""R&R Studio: ask long documents, and see why the answers are right.

Run with ``streamlit run app.py``. This file lists the screens for ``st.navigation`` and
runs the one the user chose. Screens live in ``pages/``; each starts with
``sidebar.page_setup()``, which sets the page up and draws the sidebar every screen shares
(provider, model, key, method parameters). The sidebar is drawn by the screen rather than
here because Streamlit runs a file in ``pages/`` on its own (without this file) until
``st.navigation`` has run once in the process, and AppTest does so on every page switch.
Shared UI code lives in ``pages/common/``; the engine in ``rr_core`` (never imports streamlit).
Sign-in (team mode, when the secrets configure ``[auth]``) is ``pages/common/user.py``.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:  # `streamlit run` adds it; AppTest and other launchers may not
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from pages.common import user  # noqa: E402

# No page icons: a page's icon becomes the tab's icon, a ":material/…:" one is fetched from a font
# server (nothing here may leave the machine), and an emoji one shows as a box where no emoji
# font is installed.
screens = [
    st.Page(ROOT / "pages" / "ask.py", title="Ask", default=True),
    st.Page(ROOT / "pages" / "document.py", title="Document"),
    st.Page(ROOT / "pages" / "lab.py", title="Lab"),
    st.Page(ROOT / "pages" / "review.py", title="Review"),
    st.Page(ROOT / "pages" / "history.py", title="History"),
]
# With sign-in configured ([auth] in the secrets), nothing but the sign-in screen is drawn until
# a user is signed in: not even the screens' links (without st.navigation, Streamlit would list
# the files in pages/ itself). Each screen checks again (see above).
# .streamlit/config.toml hides sidebar navigation so that the legacy discovery of pages/, which
# Streamlit runs before this file on a process's first run, never paints the file names; the
# screens' own navigation is shown (st.navigation reads the option when called).
st.set_option("client.showSidebarNavigation", True)
# One sign-in check time for the whole run: a token expiring between the links' check and the
# screen's would have left the screens' links beside the sign-in screen.
with user.checked_once():
    navigation = st.navigation(screens, position="sidebar" if user.may_enter() else "hidden")
    user.require()
    navigation.run()
