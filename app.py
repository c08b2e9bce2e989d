"""R&R Studio: placeholder until the screens land."""

import streamlit as st

st.set_page_config(page_title="R&R Studio", layout="wide")
st.title("R&R Studio")
st.write("The screens are being built; the engine is usable as `python -m rr_core`.")
