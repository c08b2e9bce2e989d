"""What the screens share, one module per job. Not screens: ``app.py`` lists the screens.

- ``state``: settings in session state, and the run settings and client they make;
- ``sidebar``: page set-up and the sidebar every screen shows;
- ``docs``: the active document (sample or upload), rendered pages;
- ``results``: a run's card, its errors, calls and cost chart;
- ``text``: showing untrusted text as text, small tables as Markdown;
- ``views``: what the Document screen shows of a prompt, worked out once per prompt.

They import streamlit and rr_core; rr_core never imports them.
"""
