"""Lab: measure whether R&R helps your model on your document (being built)."""

from __future__ import annotations

import streamlit as st

from pages.common import sidebar

sidebar.page_setup()
st.title("Lab")
