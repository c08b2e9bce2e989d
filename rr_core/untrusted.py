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


# Bidirectional controls (embeddings, overrides, isolates, marks) reorder what is drawn: a file
# named "invoice\u202efdp.exe" shows as "invoiceexe.pdf". In a name they are shown as their code.
BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_BIDI_CONTROL = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")


def plain_name(name: str) -> str:
    """A file or document name with every bidirectional control written as its code
    (``‹U+202E›``): it reads in the order its characters are stored."""
    return _BIDI_CONTROL.sub(lambda m: f"\u2039U+{ord(m.group()):04X}\u203a", name)
