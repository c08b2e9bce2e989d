"""Text from documents, models and servers, made safe to show in Markdown.

Kept apart from the exports so that every screen can use it without loading the run machinery.
"""

from __future__ import annotations

import re

# GitHub-flavoured Markdown (Streamlit's, GitHub's, most previews) turns plain "https://…",
# "www.…" and "name@host.tld" into links even when every punctuation mark is escaped: it finds
# them in the text after escapes are resolved. An invisible word joiner before "://", after
# "www" and after "@" leaves the text as it reads and breaks each pattern (a joiner *after*
# "://" does not: it is taken as part of the host name).
WORD_JOINER = "\u2060"
_AUTOLINKABLE = re.compile(r"(?=://)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)


def unlinked(text: str) -> str:
    """``text`` with every URL or e-mail address that Markdown would make a link broken up by an
    invisible word joiner: untrusted text never becomes a link."""
    return _AUTOLINKABLE.sub(WORD_JOINER, text)
