"""A provider configuration (provider, model, key, server) and the key rule, one for the CLI
and the app.

Two kinds of settings meet here. *Configured* ones belong to the deployment or the shell:
``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``,
``RR_COMPAT_API_KEY`` (the environment, or the app's secrets). *Given* ones come with the
run: a key or server URL typed in the app's sidebar, ``--base-url`` and ``--api-key-env VAR``
on the command line. The rule:

- a configured OpenAI or Anthropic key goes only to its provider's official URL or to the
  URL configured beside it; a server URL given for the run gets only a key given with it
  (otherwise the run is refused before anything is sent);
- an OpenAI-compatible server gets a key only when one is given for it, or
  ``RR_COMPAT_API_KEY`` when it is the configured server (``OPENAI_BASE_URL``); without one
  no ``Authorization`` header is sent. ``OPENAI_API_KEY`` never goes to it. On the command
  line ``RR_COMPAT_API_KEY`` is the default given key, for ``--base-url``, unless
  ``OPENAI_BASE_URL`` names another server (``command_line_compat_key``).

Keys are never printed: ``ProviderConfig``'s repr leaves the key out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from rr_core.errors import ConfigError, MissingKeyError
from rr_core.llm.errors_map import safe_url
from rr_core.llm.providers import APP_PROVIDERS, COMPATIBLE, REGISTRY

# Looks a configured setting up by its variable name: the environment, or the app's secrets.
Lookup = Callable[[str], str | None]

# Derived from the registry (``rr_core.llm.providers``): the engines a run may choose.
PROVIDERS = APP_PROVIDERS
OFFICIAL_URLS = {p.name: url for p in REGISTRY.values() if (url := p.official_url)}
KEY_VARIABLES = {p.name: var for p in REGISTRY.values() if (var := p.key_variable)}
BASE_URL_VARIABLES = {p.name: var for p in REGISTRY.values() if (var := p.base_url_variable)}
COMPAT_KEY_VAR = "RR_COMPAT_API_KEY"


def environment(name: str) -> str | None:
    """The default ``Lookup``: the environment variable, blank counted as unset."""
    return (os.environ.get(name) or "").strip() or None


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    """What a client is made for. ``api_key`` and ``base_url`` are those *given* for the run
    (typed, or named on the command line); ``resolve`` fills in the configured ones the key
    rule allows."""

    provider: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None

    def resolve(self, configured: Lookup = environment) -> ProviderConfig:
        """This configuration with the key and server URL the client will use.

        Raises ``ConfigError`` for an unknown provider or a compatible server without a URL,
        and ``MissingKeyError`` when a given server URL would need the configured key.
        """
        provider = self.provider
        if provider not in PROVIDERS:
            raise ConfigError(f"unknown provider {provider!r}; choose one of: {', '.join(PROVIDERS)}")
        info = REGISTRY[provider]
        if not info.is_llm:
            return replace(self, api_key=None, base_url=None)
        given_key = (self.api_key or "").strip() or None
        given_url = (self.base_url or "").strip() or None
        configured_url = configured(BASE_URL_VARIABLES[provider])
        if info.optional_key:
            url = given_url or configured_url
            if not url:
                raise ConfigError(
                    "An OpenAI-compatible server needs its URL: --base-url URL or OPENAI_BASE_URL "
                    "(e.g. http://localhost:11434/v1 for Ollama)."
                )
            own_server = given_url is None or same_server(given_url, configured_url)
            key = given_key or (configured(COMPAT_KEY_VAR) if own_server else None)
            return replace(self, api_key=key, base_url=url)
        variable = KEY_VARIABLES[provider]
        if given_key:
            return replace(self, api_key=given_key, base_url=given_url or configured_url)
        if given_url and not (
            same_server(given_url, OFFICIAL_URLS[provider]) or same_server(given_url, configured_url)
        ):
            raise MissingKeyError(
                f"The server URL {safe_url(given_url)} was given for this run, so it needs a key "
                f"given with it (in the app: typed in the sidebar; on the command line: "
                f"--api-key-env VAR): the configured {variable} is never sent to another server.",
                provider=provider,
            )
        key = configured(variable)
        if not key:
            raise MissingKeyError(
                f"No {info.label} API key: set {variable} (in the app, or enter a key in the sidebar).",
                provider=provider,
            )
        return replace(self, api_key=key, base_url=given_url or configured_url)


def command_line_compat_key(base_url: str | None, configured: Lookup = environment) -> str | None:
    """``RR_COMPAT_API_KEY`` as the command line's default key for a compatible server at
    ``base_url`` (``--base-url``): only when no ``OPENAI_BASE_URL`` is configured or it names
    the same server. A key configured beside a server's URL is for that server alone."""
    key = configured(COMPAT_KEY_VAR)
    configured_url = configured(BASE_URL_VARIABLES[COMPATIBLE.name])
    if key and base_url and configured_url and not same_server(base_url, configured_url):
        return None
    return key


def same_server(a: str | None, b: str | None) -> bool:
    """Whether two base URLs name the same server and path (scheme, host, port, path)."""
    if not a or not b:
        return False
    try:
        x, y = urlsplit(a.strip()), urlsplit(b.strip())
        ports = (x.port or _default_port(x.scheme), y.port or _default_port(y.scheme))
    except ValueError:
        return False
    return (
        x.scheme.lower() == y.scheme.lower()
        and (x.hostname or "") == (y.hostname or "")
        and ports[0] == ports[1]
        and x.path.rstrip("/") == y.path.rstrip("/")
    )


def _default_port(scheme: str) -> int | None:
    return {"http": 80, "https": 443}.get(scheme.lower())


def normalise_url(url: str) -> str:
    """A server URL as the call cache names it: scheme and host lower-cased, the default port
    and a trailing slash dropped, no user name or password. Two spellings of one server give
    one string (``same_server`` agrees); an unreadable URL is kept as given, stripped."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    where = host if port is None or port == _default_port(scheme) else f"{host}:{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{where}{parts.path.rstrip('/')}{query}"
