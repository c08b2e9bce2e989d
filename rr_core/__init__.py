"""R&R Studio's engine: documents, plans, runs, costs. Never imports streamlit.

Layers: ``documents`` (the only pymupdf user) → ``prompts``/``chunking``/``methods`` (pure
plans) → ``runs`` (the only place that calls a client) → ``ledger``/``exports``.
Only ``rr_core.llm.openai_client`` and ``rr_core.llm.anthropic_client`` import the SDKs.
"""

__version__ = "0.1.0"
