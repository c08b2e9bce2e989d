"""A loopback HTTP server that speaks the OpenAI, Anthropic and Gemini wire formats.

The real SDKs talk to it through ``base_url``: point ``OpenAIClient`` at ``stub.url``
(``http://127.0.0.1:PORT/v1``; the SDK posts to ``/v1/responses`` and
``/v1/chat/completions``), ``AnthropicClient`` at ``stub.anthropic_url`` (the root; the SDK
posts to ``/v1/messages``) and ``GeminiClient`` at ``stub.root`` (the SDK posts to
``/v1beta/models/{model}:generateContent``). Every request is recorded in ``stub.requests``. Replies come from
a queue (``stub.enqueue``), else from ``stub.responder``, else a well-formed default reply in
the wire format of the path. Usable from tests and benchmarks alike: no pytest here.

    with StubServer() as stub:
        stub.enqueue(rate_limited(retry_after=20), Reply(text='{"answer": "x"}'))
        client = OpenAIClient(model="gpt-x", api_key="sk-test", base_url=stub.url)
        ...
        assert stub.requests[-1].body["store"] is False

It also speaks both providers' batch APIs (OpenAI ``/v1/files`` and ``/v1/batches``,
Anthropic ``/v1/messages/batches``): each submitted line is answered as a sync request to its
endpoint would be (the queue, the responder, else the default reply, usage included), but
only when released (``release_batch_items``; ``batch_auto_complete`` answers a batch as it is
created). ``expire_batches`` ends batches with only the released items done;
``fail_batch_item`` forces one call's reply, ``corrupt_batch_item`` its result line;
``batch_submissions`` counts how often each custom_id was ever submitted; result lines are
written in shuffled order; ``enqueue_batch_api`` scripts faults of the batch calls
themselves (an upload, a status...), which never take replies meant for the calls.

    with StubServer() as stub:
        batch_id = client.batch.submit(lines, label="sweep")
        stub.release_batch_items(3)
        stub.expire_batches()
        results = list(client.batch.results(batch_id))
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

UsageSpec = dict[str, Any] | Literal["default", "bare"] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One scripted answer.

    ``body`` set: sent verbatim (a dict or list as JSON, a str as text). Otherwise a status
    below 400 gets the path's success format wrapping ``text`` (None: a sensible JSON answer
    for the request) with ``usage`` ("default": plausible counts with details; "bare": counts
    without any details or cache fields; None: ``null``; a dict: that usage object verbatim),
    and a status of 400 or more gets the path's error format carrying ``error_message``.
    """

    status: int = 200
    text: str | None = None
    usage: UsageSpec = "default"
    model: str | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # > 0: the body goes out one byte at a time, this many seconds apart (headers at once).
    drip_s: float = 0.0
    error_message: str = "stub error"
    error_type: str | None = None
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What a client sent: method, path, headers (lower-cased names) and the parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


ResponderResult = Reply | tuple[int, Any, dict[str, str], float]
Responder = Callable[[str, Any], ResponderResult]


# -- fault and reply helpers -------------------------------------------------------------


def rate_limited(retry_after: float | None = 20, message: str = "Rate limit reached.") -> Reply:
    """A 429, with a ``retry-after`` header unless ``retry_after`` is None."""
    headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
    return Reply(
        status=429,
        headers=headers,
        error_message=message,
        error_type="rate_limit_error",
    )


def server_error(status: int = 500, message: str = "The server had an error.") -> Reply:
    """A 5xx in the path's error format."""
    return Reply(status=status, error_message=message, error_type="api_error")


def unauthorized(message: str = "Incorrect API key provided.") -> Reply:
    """A 401 in the path's error format."""
    return Reply(status=401, error_message=message, error_type="authentication_error")


def context_too_long(path_kind: Literal["openai", "anthropic"] = "openai") -> Reply:
    """A 400 saying the prompt does not fit, worded as the provider words it."""
    if path_kind == "anthropic":
        return Reply(
            status=400,
            error_message="prompt is too long: 250000 tokens > 200000 maximum",
            error_type="invalid_request_error",
        )
    return Reply(
        status=400,
        error_message="This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 250000 tokens.",
        error_type="invalid_request_error",
        error_code="context_length_exceeded",
    )


def rejects_structured(
    message: str = "response_format 'json_schema' is not supported",
) -> Reply:
    """A 400 from a server that cannot do structured output."""
    return Reply(status=400, error_message=message, error_type="invalid_request_error")


def slow(delay_s: float, reply: Reply | None = None) -> Reply:
    """``reply`` (default: a normal answer) sent after ``delay_s`` seconds."""
    return replace(reply or Reply(), delay_s=delay_s)


def dripping(every_s: float, reply: Reply | None = None) -> Reply:
    """``reply`` (default: a normal answer) whose body trickles out a byte every ``every_s``."""
    return replace(reply or Reply(), drip_s=every_s)


def hanging() -> Reply:
    """A server that reads the request and never answers (until the stub closes)."""
    return Reply(delay_s=3_600)


def malformed(text: str = "Sure! The answer is on page three, I think.") -> Reply:
    """A well-formed HTTP reply whose model output is not JSON."""
    return Reply(text=text)


def not_json(body: str = '{"id": "resp_1", "output": [') -> Reply:
    """A 200 reply that says it is JSON and is not (a proxy's cut-off or garbled body)."""
    return Reply(body=body, headers={"content-type": "application/json"})


def bare_usage(text: str | None = None) -> Reply:
    """A normal reply whose usage has no details or cache fields."""
    return Reply(text=text, usage="bare")


def json_output(obj: Any, **kwargs: Any) -> Reply:
    """A normal reply whose model output is ``obj`` as JSON."""
    return Reply(text=json.dumps(obj), **kwargs)


# -- the wire formats ----------------------------------------------------------------------


def kind_of(path: str) -> Literal["responses", "chat", "messages", "gemini", "unknown"]:
    """Which API a request path belongs to."""
    path = path.split("?", 1)[0].rstrip("/")
    if _GEMINI_PATH.search(path):
        return "gemini"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/messages"):
        return "messages"
    return "unknown"


# Gemini's generateContent: POST /v1beta/models/{model}:generateContent
_GEMINI_PATH = re.compile(r"/models/([^/:]+):generateContent$")


def gemini_model_of(path: str) -> str | None:
    """The model a Gemini request path names, or None."""
    found = _GEMINI_PATH.search(path.split("?", 1)[0].rstrip("/"))
    return found.group(1) if found else None


def prompt_of(body: Any) -> str:
    """The text of the last user message in a Responses, Chat, Messages or generateContent
    request body."""
    if not isinstance(body, dict):
        return ""
    if isinstance(body.get("contents"), list) and body["contents"]:
        last = body["contents"][-1]
        parts = last.get("parts", []) if isinstance(last, dict) else []
        return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))
    if isinstance(body.get("input"), str):
        return str(body["input"])
    items = body.get("messages") or body.get("input") or []
    if not isinstance(items, list) or not items:
        return ""
    content = items[-1].get("content", "") if isinstance(items[-1], dict) else ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def schema_name_of(body: Any) -> str | None:
    """The structured-output shape a request asked for, if any: ``answer``, ``retrieval``,
    ``retrieval_per_question``, ``extraction`` or ``verification`` (OpenAI sends the name; for
    Anthropic's nameless schema it is told from the schema's properties)."""
    if not isinstance(body, dict):
        return None
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("name"):
        return str(fmt["name"])
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    if schema.get("name"):
        return str(schema["name"])
    anthropic_schema = ((body.get("output_config") or {}).get("format") or {}).get("schema") or {}
    gemini_schema = (body.get("generationConfig") or {}).get("responseJsonSchema") or {}
    if anthropic_schema or gemini_schema:
        properties = (anthropic_schema or gemini_schema).get("properties") or {}
        if "results" in properties:
            return "retrieval_per_question"
        if "relevant" in properties:
            return "extraction"
        if "verdict" in properties:
            return "verification"
        return "retrieval" if "pages" in properties else "answer"
    return None


_PAGE_TAG = re.compile(r"^<PAGE (\d+)>$", re.MULTILINE)
_QUESTION = re.compile(r"(?im)^\s*question(?:\s+(\d+))?\s*:\s*(.+?)\s*$")


def pages_in(prompt: str) -> list[int]:
    """The page numbers tagged in a prompt, in order, each once."""
    return list(dict.fromkeys(int(n) for n in _PAGE_TAG.findall(prompt)))


def questions_in(prompt: str) -> list[str]:
    """The question(s) a prompt asks, each once, in order (``Question:`` or ``Question n:``)."""
    return list(dict.fromkeys(text for _, text in _QUESTION.findall(prompt)))


# Batch ids are never reused, as a provider's are not: unique across the stubs a process starts
# (a test that runs a grid twice against one store, each time on a new stub, must not see one id
# named twice).
_BATCH_NUMBERS = itertools.count(1)


def default_text(body: Any) -> str:
    """A sensible model output for the shape asked: the first pages of the prompt for a
    retrieval (else 1 and 2), a first-page citation for an answer, an extract of the first
    page for an extraction, "supported" for a verification."""
    prompt = prompt_of(body)
    questions = questions_in(prompt)
    question = questions[-1] if questions else ""
    pages = pages_in(prompt)
    name = schema_name_of(body)
    if name == "retrieval_per_question":
        found = pages[:2] or [1, 2]
        return json.dumps(
            {"results": [{"question": i, "pages": found} for i in range(1, len(questions) + 1)]}
        )
    if name is None and "Reply in plain text" in prompt:  # the paper's protocol: no JSON
        tail = prompt.rsplit("<INSTRUCTIONS>", 1)[-1]
        if "Pages:" in tail:
            return "Pages: " + ", ".join(str(p) for p in (pages[:2] or [1, 2]))
        return f"Answer: stub answer\nPage: {pages[0] if pages else 1}"
    if name == "retrieval" or (name is None and '"pages"' in prompt):
        return json.dumps({"question": question, "pages": pages[:2] or [1, 2]})
    if name == "verification":
        return json.dumps({"verdict": "supported", "reason": "stub: the quotes state the answer"})
    if name == "extraction":
        first = str(pages[0]) if pages else "n/a"
        return json.dumps(
            {"relevant": True, "extracts": [{"page": first, "text": "stub extract"}], "answer": "stub answer"}
        )
    return json.dumps(
        {"question": question, "answer": "stub answer", "page": str(pages[0]) if pages else "1"}
    )


# Counts a text's tokens in replies' usage (None: four characters a token); a benchmark sets a
# real tokenizer here to compare estimates with bills in the same tokens.
TOKENIZER: Callable[[str], int] | None = None


# How many times the tokens it read and wrote a server bills (a provider billing more than it
# should; a test or benchmark sets it).
BILLING_FACTOR = 1.0


def _tokens(text: str) -> int:
    counted = TOKENIZER(text) if TOKENIZER is not None else len(text) // 4
    return max(1, round(counted * BILLING_FACTOR))


def usage_for(kind: str, spec: UsageSpec, prompt: str, text: str) -> Any:
    """The usage object for a wire format, from a ``Reply.usage`` spec."""
    if spec is None or isinstance(spec, dict):
        return spec
    n_in, n_out = _tokens(prompt), _tokens(text)
    bare = spec == "bare"
    if kind == "responses":
        usage: dict[str, Any] = {
            "input_tokens": n_in,
            "output_tokens": n_out,
            "total_tokens": n_in + n_out,
        }
        if not bare:
            usage["input_tokens_details"] = {
                "cached_tokens": 0,
                "cache_write_tokens": 0,
            }
            usage["output_tokens_details"] = {"reasoning_tokens": 0}
        return usage
    if kind == "chat":
        usage = {
            "prompt_tokens": n_in,
            "completion_tokens": n_out,
            "total_tokens": n_in + n_out,
        }
        if not bare:
            usage["prompt_tokens_details"] = {"cached_tokens": 0}
            usage["completion_tokens_details"] = {"reasoning_tokens": 0}
        return usage
    if kind == "gemini":
        usage = {"promptTokenCount": n_in, "candidatesTokenCount": n_out, "totalTokenCount": n_in + n_out}
        if not bare:
            usage["cachedContentTokenCount"] = 0
        return usage
    usage = {"input_tokens": n_in, "output_tokens": n_out}
    if not bare:
        usage.update(cache_read_input_tokens=0, cache_creation_input_tokens=0)
    return usage


def success_body(kind: str, reply: Reply, request_body: Any, counter: int, path: str = "") -> dict[str, Any]:
    """A success reply in the wire format of ``kind`` (Gemini's model is named in ``path``)."""
    text = reply.text if reply.text is not None else default_text(request_body)
    asked = request_body.get("model") if isinstance(request_body, dict) else None
    model = reply.model or str(asked or gemini_model_of(path) or "stub-model")
    usage = usage_for(kind, reply.usage, prompt_of(request_body), text)
    if kind == "gemini":
        return {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": f"gemini_stub{counter}",
        }
    if kind == "responses":
        return {
            "id": f"resp_stub{counter}",
            "object": "response",
            "created_at": time.time(),
            "status": "completed",
            "model": model,
            "error": None,
            "incomplete_details": None,
            "output": [
                {
                    "id": f"msg_stub{counter}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage,
        }
    if kind == "chat":
        return {
            "id": f"chatcmpl-stub{counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text},
                }
            ],
            "usage": usage,
        }
    return {
        "id": f"msg_stub{counter}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": usage,
    }


# Anthropic's error type for a status (a Reply that names none; a batch result has no status).
_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


# Google's status word for an HTTP status (a Reply that names none).
_GOOGLE_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def error_body(kind: str, reply: Reply) -> dict[str, Any]:
    """An error reply in the wire format of ``kind``."""
    if kind == "gemini":
        status = reply.error_type if reply.error_type and reply.error_type.isupper() else None
        return {
            "error": {
                "code": reply.status,
                "message": reply.error_message,
                "status": status or _GOOGLE_STATUSES.get(reply.status, "UNKNOWN"),
            }
        }
    if kind == "messages":
        return {
            "type": "error",
            "error": {
                "type": reply.error_type or _ANTHROPIC_ERROR_TYPES.get(reply.status, "api_error"),
                "message": reply.error_message,
            },
        }
    return {
        "error": {
            "message": reply.error_message,
            "type": reply.error_type or "server_error",
            "param": None,
            "code": reply.error_code,
        }
    }


# -- batches -------------------------------------------------------------------------------

_CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_OPENAI_ENDPOINTS = {"/v1/responses": "responses", "/v1/chat/completions": "chat"}
Route = tuple[str, str, str | None]  # (what, provider, id)


def batch_route(method: str, path: str) -> Route | None:
    """Which batch or file call a request is, or None: ("upload" | "file" | "content" |
    "create" | "retrieve" | "results" | "cancel", "openai" | "anthropic", an id)."""
    path = path.split("?", 1)[0].rstrip("/")
    parts = path.split("/")[1:]  # "v1", ...
    if len(parts) < 2 or parts[0] != "v1":
        return None
    rest = parts[1:]
    if rest[:2] == ["messages", "batches"]:
        tail, provider = rest[2:], "anthropic"
    elif rest[0] == "batches":
        tail, provider = rest[1:], "openai"
    elif rest[0] == "files":
        if method == "POST" and len(rest) == 1:
            return ("upload", "openai", None)
        if method == "GET" and len(rest) == 2:
            return ("file", "openai", rest[1])
        if method == "GET" and len(rest) == 3 and rest[2] == "content":
            return ("content", "openai", rest[1])
        return None
    else:
        return None
    if method == "POST" and not tail:
        return ("create", provider, None)
    if method == "GET" and not tail:
        return ("list", provider, None)
    if method == "GET" and len(tail) == 1:
        return ("retrieve", provider, tail[0])
    if method == "POST" and len(tail) == 2 and tail[1] == "cancel":
        return ("cancel", provider, tail[0])
    if method == "GET" and len(tail) == 2 and tail[1] == "results" and provider == "anthropic":
        return ("results", provider, tail[0])
    return None


def multipart_fields(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (filename, bytes)."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
    )
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            data = part.get_payload(decode=True) or b""
            fields[str(name)] = (part.get_filename(), data if isinstance(data, bytes) else b"")
    return fields


@dataclass(slots=True)
class StubBatch:
    """One batch the stub holds: its calls in submission order and their answers so far.

    ``state``: "validating" (OpenAI, until first read), "in_progress", "cancelling",
    "completed", "expired", "cancelled" or "failed".
    """

    id: str
    provider: Literal["openai", "anthropic"]
    kind: str  # the wire format of its calls: responses, chat or messages
    endpoint: str
    items: list[tuple[str, Any]]  # (custom_id, request body)
    created_at: float
    input_file_id: str | None = None
    metadata: Any = None
    state: str = "in_progress"
    answers: dict[str, tuple[int, Any]] = field(default_factory=dict)  # custom_id -> (status, body)
    errors: list[dict[str, Any]] = field(default_factory=list)  # why a batch failed validation
    output_file_id: str | None = None
    error_file_id: str | None = None
    results: bytes | None = None  # Anthropic's results file, once ended
    ended_at: float | None = None
    cancel_at: float | None = None

    @property
    def open(self) -> bool:
        """Whether calls may still be answered."""
        return self.state in ("validating", "in_progress")

    @property
    def ended(self) -> bool:
        """Whether the batch is over (results written)."""
        return self.state in ("completed", "expired", "cancelled", "failed")

    def pending(self) -> list[str]:
        """The custom_ids not answered yet, in submission order."""
        return [cid for cid, _ in self.items if cid not in self.answers]


def _iso(moment: float | None) -> str | None:
    return None if moment is None else datetime.fromtimestamp(moment, UTC).isoformat().replace("+00:00", "Z")


# -- the server ----------------------------------------------------------------------------


class StubServer:
    """A ``ThreadingHTTPServer`` on 127.0.0.1 in a daemon thread; use as a context manager."""

    def __init__(self, responder: Responder | None = None, *, prompt_cache: bool = False) -> None:
        self.responder = responder
        # Simulates the providers' prompt caches in default replies (``PromptCache``).
        self.prompt_cache: PromptCache | None = PromptCache() if prompt_cache else None
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        # Body bytes sent slowly (``drip_s``), and clients that hung up in the middle.
        self.dripped = 0
        self.hangups = 0
        self._queue: deque[ResponderResult] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._counter = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # Batches (see the module doc). All under ``_lock``; ``_changed`` wakes waiters.
        self.files: dict[str, tuple[str, bytes]] = {}  # file id -> (purpose, bytes)
        self.batches: dict[str, StubBatch] = {}
        self.batch_submissions: Counter[str] = Counter()
        self.batch_auto_complete = False
        self.batch_shuffle = True
        self._batch_faults: deque[Reply] = deque()
        # Batches created whose reply is then lost (answered 502): the provider has them.
        self.lose_create_replies = 0
        self._item_replies: dict[str, Reply] = {}
        self._item_lines: dict[str, str | None] = {}
        self._rng = random.Random(20261101)
        self._changed = threading.Condition(self._lock)
        # ``hold_after(n)``: calls after the first n wait here until ``release_calls()``.
        self._hold_after: int | None = None
        self._released = threading.Event()

    # lifecycle
    def start(self) -> Self:
        """Bind a free port and serve in the background."""
        handler = type("_BoundHandler", (_Handler,), {"stub": self})
        self._httpd = _QuietServer(("127.0.0.1", 0), handler)
        # A short poll interval keeps `close` (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True, name="stub-server"
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; delayed replies still waiting are abandoned."""
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # addresses
    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("StubServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"{self.root}/v1"

    openai_url = url

    @property
    def anthropic_url(self) -> str:
        """The Anthropic base URL: the root (the SDK adds ``/v1/messages``)."""
        return self.root

    # scripting
    def enqueue(self, *replies: ResponderResult) -> None:
        """Queue replies; each request takes the next, then falls back to the responder."""
        with self._lock:
            self._queue.extend(replies)

    def hold_after(self, n: int) -> None:
        """Answer the next ``n`` calls (not batch or file calls), then hold every later one,
        unanswered, until ``release_calls()`` (or the stub closes): a test sees work part done,
        for as long as it needs, whatever the machine's speed."""
        with self._lock:
            self._hold_after = self._counter + n
            self._released.clear()

    def release_calls(self) -> None:
        """Answer the calls held by ``hold_after`` and every later one."""
        with self._lock:
            self._hold_after = None
        self._released.set()

    def clear(self) -> None:
        """Forget recorded requests and queued replies."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.max_in_flight = 0

    @property
    def last(self) -> RecordedRequest:
        """The most recent request."""
        with self._lock:
            return self.requests[-1]

    def bodies(self, kind: str | None = None) -> list[Any]:
        """Recorded JSON bodies, optionally only those for ``responses``/``chat``/``messages``."""
        with self._lock:
            return [r.body for r in self.requests if kind is None or kind_of(r.path) == kind]

    # batches: controls for tests
    def enqueue_batch_api(self, *replies: Reply) -> None:
        """Queue replies for the batch and file calls themselves (an error status answers the
        call with the provider's error; any other lets it through). Calls' replies are not
        taken from here, nor these from the calls' queue."""
        with self._lock:
            self._batch_faults.extend(replies)

    def fail_batch_item(self, custom_id: str, reply: Reply | None = None) -> None:
        """Answer the call ``custom_id``, whenever released, with ``reply`` (default: a 400)."""
        with self._lock:
            self._item_replies[custom_id] = reply or Reply(
                status=400, error_message="stub: this call was refused", error_type="invalid_request_error"
            )

    def corrupt_batch_item(self, custom_id: str, line: str | None = None) -> None:
        """Write ``line`` verbatim as the result line of ``custom_id`` once it is answered
        (default: JSON that names the call, in the provider's shape, with no reply in it)."""
        with self._lock:
            self._item_lines[custom_id] = line

    def release_batch_items(self, n: int | None = None, batch_id: str | None = None) -> int:
        """Answer the next ``n`` waiting calls (all: None), oldest batch first, or only those
        of ``batch_id``; a batch whose calls are all answered ends. Returns how many."""
        with self._lock:
            released = self._release(n, batch_id)
            self._changed.notify_all()
            return released

    def expire_batches(self, batch_id: str | None = None) -> None:
        """End open batches (or ``batch_id``) as expired: only the calls released are done."""
        with self._lock:
            for batch in self.batches.values():
                if batch.open and batch_id in (None, batch.id):
                    self._end(batch, "expired")
            self._changed.notify_all()

    def wait_for_batches(self, count: int = 1, timeout_s: float = 30.0) -> bool:
        """Wait until ``count`` batches were created; False if not within ``timeout_s``."""
        return self.wait_until(lambda: len(self.batches) >= count, timeout_s)

    def wait_until(self, condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
        """Wait until ``condition()`` (read under the stub's lock) holds after a batch change."""
        with self._changed:
            return self._changed.wait_for(condition, timeout=timeout_s)

    def batch_lines(self, kind: str | None = None) -> list[tuple[str, Any]]:
        """Every submitted call, (custom_id, body), optionally only ``responses``/``chat``/``messages``."""
        with self._lock:
            return [item for b in self.batches.values() if kind in (None, b.kind) for item in b.items]

    def pending_batch_items(self) -> int:
        """Calls submitted and not answered yet, in open batches."""
        with self._lock:
            return sum(len(b.pending()) for b in self.batches.values() if b.open)

    # batches: the provider side (called from handler threads, under the lock)
    def _release(self, n: int | None, batch_id: str | None) -> int:
        released = 0
        for batch in list(self.batches.values()):
            if (batch_id is not None and batch.id != batch_id) or not batch.open:
                continue
            for custom_id, body in batch.items:
                if n is not None and released >= n:
                    break
                if custom_id not in batch.answers:
                    batch.answers[custom_id] = self._answer_item(batch, custom_id, body)
                    released += 1
            if not batch.pending():
                self._end(batch, "completed")
        return released

    def _line_override(self, batch: StubBatch, custom_id: str) -> str | None:
        """The result line a test forced for ``custom_id`` (``corrupt_batch_item``), if any."""
        if custom_id not in self._item_lines or custom_id not in batch.answers:
            return None
        line = self._item_lines[custom_id]
        if line is not None:
            return line
        if batch.provider == "openai":
            return json.dumps(
                {"custom_id": custom_id, "response": {"status_code": 200, "body": {"garbled": True}}}
            )
        return json.dumps(
            {"custom_id": custom_id, "result": {"type": "succeeded", "message": {"garbled": True}}}
        )

    def _answer_item(self, batch: StubBatch, custom_id: str, body: Any) -> tuple[int, Any]:
        forced = self._item_replies.get(custom_id)
        if forced is not None:
            reply = forced
        else:
            self._counter += 1
            scripted = self._queue.popleft() if self._queue else None
            if scripted is None and self.responder is not None:
                scripted = self.responder(batch.endpoint, body)
            reply = _as_reply(scripted)
        if reply.body is not None:
            return reply.status, reply.body
        if reply.status >= 400:
            return reply.status, error_body(batch.kind, reply)
        payload = success_body(batch.kind, reply, body, self._counter)
        if self.prompt_cache is not None and reply.usage == "default":
            # A batch's items read and write the same simulated cache as synchronous calls
            # (in the order they are answered).
            payload["usage"] = self.prompt_cache.usage(batch.kind, body, payload["usage"])
            self.prompt_cache.replied(batch.kind, body)
        return reply.status, payload

    def _end(self, batch: StubBatch, state: str) -> None:
        """Close a batch in ``state`` and write its results."""
        batch.state, batch.ended_at = state, time.time()
        order = list(batch.answers)
        if self.batch_shuffle:
            self._rng.shuffle(order)
        if batch.provider == "openai":
            out, err = [], []
            for n, custom_id in enumerate(order):
                status, body = batch.answers[custom_id]
                forced = self._line_override(batch, custom_id)
                line = forced or json.dumps(
                    {
                        "id": f"batch_req_{batch.id}_{n}",
                        "custom_id": custom_id,
                        "response": {"status_code": status, "request_id": f"req_{n}", "body": body},
                        "error": None,
                    }
                )
                (out if status == 200 or forced else err).append(line)
            if out:
                batch.output_file_id = self._store_file("batch_output", out)
            if err:
                batch.error_file_id = self._store_file("batch_output", err)
            return
        lines = []
        unanswered = [cid for cid, _ in batch.items if cid not in batch.answers]
        for custom_id in order + unanswered:
            forced = self._line_override(batch, custom_id)
            if forced:
                lines.append(forced)
                continue
            if custom_id not in batch.answers:
                result: dict[str, Any] = {"type": "canceled" if state == "cancelled" else "expired"}
            else:
                status, body = batch.answers[custom_id]
                result = (
                    {"type": "succeeded", "message": body}
                    if status < 400
                    else {"type": "errored", "error": body}
                )
            lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        batch.results = ("\n".join(lines) + "\n").encode()

    def _store_file(self, purpose: str, lines: list[str]) -> str:
        file_id = f"file-stub{len(self.files) + 1}"
        self.files[file_id] = (purpose, ("\n".join(lines) + "\n").encode())
        return file_id

    def _batch_call(
        self, route: Route, headers: dict[str, str], raw: bytes
    ) -> tuple[int, Any, dict[str, str]]:
        """Answer a batch or file call: (status, payload, headers)."""
        what, provider, ident = route
        with self._lock:
            fault = self._batch_faults.popleft() if self._batch_faults else None
            if fault is not None and fault.status >= 400:
                kind = "messages" if provider == "anthropic" else "responses"
                return fault.status, fault.body or error_body(kind, fault), dict(fault.headers)
            if what == "upload":
                return self._upload(headers, raw)
            if what in ("file", "content"):
                if ident not in self.files:
                    return (
                        404,
                        error_body("responses", Reply(error_message=f"No such File object: {ident}")),
                        {},
                    )
                purpose, data = self.files[ident]
                if what == "content":
                    return 200, data, {"content-type": "application/octet-stream"}
                return 200, self._file_json(ident, purpose, data), {}
            if what == "create":
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                created = self._create_openai(body) if provider == "openai" else self._create_anthropic(body)
                self._changed.notify_all()
                if self.lose_create_replies > 0 and created[0] < 400:
                    # Accepted (the batch exists and runs), but the reply never reaches the client.
                    self.lose_create_replies -= 1
                    kind = "messages" if provider == "anthropic" else "responses"
                    return 502, error_body(kind, Reply(error_message="stub: the reply was lost")), {}
                return created
            if what == "list":  # newest first, as both providers list them
                mine = [b for b in self.batches.values() if b.provider == provider]
                data = [self._batch_json(b) for b in sorted(mine, key=lambda b: b.created_at, reverse=True)]
                first = data[0]["id"] if data else None
                last = data[-1]["id"] if data else None
                listing: dict[str, Any] = {
                    "data": data,
                    "has_more": False,
                    "first_id": first,
                    "last_id": last,
                }
                if provider == "openai":
                    listing["object"] = "list"
                return 200, listing, {}
            batch = self.batches.get(ident or "")
            if batch is None or batch.provider != provider:
                kind = "messages" if provider == "anthropic" else "responses"
                return (
                    404,
                    error_body(kind, Reply(error_message=f"No batch {ident}", error_type="not_found_error")),
                    {},
                )
            if what == "cancel":
                if batch.open:
                    batch.state, batch.cancel_at = "cancelling", time.time()
                self._changed.notify_all()
                return 200, self._batch_json(batch), {}
            if what == "results":
                if batch.results is None:
                    return 400, error_body("messages", Reply(error_message="Batch has not ended")), {}
                return 200, batch.results, {"content-type": "application/binary"}
            # retrieve: a validating batch starts, a cancelling one finishes cancelling
            if batch.state == "validating":
                batch.state = "in_progress"
            elif batch.state == "cancelling":
                self._end(batch, "cancelled")
                self._changed.notify_all()
            return 200, self._batch_json(batch), {}

    def _upload(self, headers: dict[str, str], raw: bytes) -> tuple[int, Any, dict[str, str]]:
        fields = multipart_fields(headers.get("content-type", ""), raw)
        if "file" not in fields:
            return 400, error_body("responses", Reply(error_message="No file in the upload")), {}
        purpose = fields.get("purpose", (None, b""))[1].decode()
        file_id = f"file-stub{len(self.files) + 1}"
        self.files[file_id] = (purpose, fields["file"][1])
        return 200, self._file_json(file_id, purpose, fields["file"][1], fields["file"][0]), {}

    def _file_json(self, file_id: str, purpose: str, data: bytes, name: str | None = None) -> dict[str, Any]:
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": name or f"{file_id}.jsonl",
            "purpose": purpose,
            "status": "processed",
        }

    def _create_openai(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        body = body if isinstance(body, dict) else {}
        file_id, endpoint = str(body.get("input_file_id")), str(body.get("endpoint"))
        if file_id not in self.files:
            return 404, error_body("responses", Reply(error_message=f"No such File object: {file_id}")), {}
        batch = StubBatch(
            id=f"batch_stub{next(_BATCH_NUMBERS)}",
            provider="openai",
            kind=_OPENAI_ENDPOINTS.get(endpoint, "unknown"),
            endpoint=endpoint,
            items=[],
            created_at=time.time(),
            input_file_id=file_id,
            metadata=body.get("metadata"),
            state="validating",
        )
        seen: set[str] = set()
        for number, raw in enumerate(self.files[file_id][1].decode().splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError:
                batch.errors.append({"code": "invalid_json_line", "message": "Invalid JSON", "line": number})
                continue
            custom_id, url = line.get("custom_id"), line.get("url")
            if not isinstance(custom_id, str) or custom_id in seen:
                batch.errors.append(
                    {"code": "duplicate_custom_id", "message": "Bad custom_id", "line": number}
                )
            elif url != endpoint or line.get("method") != "POST" or not isinstance(line.get("body"), dict):
                batch.errors.append({"code": "invalid_request", "message": f"Bad url {url}", "line": number})
            else:
                seen.add(custom_id)
                batch.items.append((custom_id, line["body"]))
        self.batch_submissions.update(seen)
        self.batches[batch.id] = batch
        if batch.errors or endpoint not in _OPENAI_ENDPOINTS:
            batch.state, batch.ended_at = "failed", time.time()
        elif self.batch_auto_complete:
            self._release(None, batch.id)
        return 200, self._batch_json(batch), {}

    def _create_anthropic(self, body: Any) -> tuple[int, Any, dict[str, str]]:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return 400, error_body("messages", Reply(error_message="requests: Field required")), {}
        ids = [r.get("custom_id") if isinstance(r, dict) else None for r in requests]
        bad = [i for i in ids if not isinstance(i, str) or not _CUSTOM_ID.match(i)]
        if bad or len(set(ids)) != len(ids):
            message = "custom_id must be unique and match ^[a-zA-Z0-9_-]{1,64}$"
            return (
                400,
                error_body("messages", Reply(error_message=message, error_type="invalid_request_error")),
                {},
            )
        batch = StubBatch(
            id=f"msgbatch_stub{next(_BATCH_NUMBERS)}",
            provider="anthropic",
            kind="messages",
            endpoint="/v1/messages",
            items=[(str(r["custom_id"]), r.get("params")) for r in requests],
            created_at=time.time(),
        )
        self.batch_submissions.update(str(i) for i in ids)
        self.batches[batch.id] = batch
        if self.batch_auto_complete:
            self._release(None, batch.id)
        return 200, self._batch_json(batch), {}

    def _batch_json(self, batch: StubBatch) -> dict[str, Any]:
        ok = sum(1 for status, _ in batch.answers.values() if status < 400)
        if batch.provider == "openai":
            status_at = {
                "completed": "completed_at",
                "expired": "expired_at",
                "cancelled": "cancelled_at",
                "failed": "failed_at",
            }
            body: dict[str, Any] = {
                "id": batch.id,
                "object": "batch",
                "endpoint": batch.endpoint,
                "errors": {"object": "list", "data": batch.errors} if batch.errors else None,
                "input_file_id": batch.input_file_id,
                "completion_window": "24h",
                "status": batch.state,
                "output_file_id": batch.output_file_id,
                "error_file_id": batch.error_file_id,
                "created_at": int(batch.created_at),
                "expires_at": int(batch.created_at) + 86_400,
                "cancelling_at": int(batch.cancel_at) if batch.cancel_at else None,
                "request_counts": {
                    "total": len(batch.items),
                    "completed": ok,
                    "failed": len(batch.answers) - ok,
                },
                "metadata": batch.metadata,
            }
            if batch.state in status_at and batch.ended_at:
                body[status_at[batch.state]] = int(batch.ended_at)
            return body
        ended = batch.ended
        counts = {"processing": len(batch.items), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if ended:  # Anthropic counts each call only once the whole batch has ended
            unanswered = len(batch.items) - len(batch.answers)
            counts = {
                "processing": 0,
                "succeeded": ok,
                "errored": len(batch.answers) - ok,
                "canceled": unanswered if batch.state == "cancelled" else 0,
                "expired": unanswered if batch.state == "expired" else 0,
            }
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended"
            if ended
            else ("canceling" if batch.state == "cancelling" else "in_progress"),
            "request_counts": counts,
            "created_at": _iso(batch.created_at),
            "expires_at": _iso(batch.created_at + 86_400),
            "ended_at": _iso(batch.ended_at),
            "cancel_initiated_at": _iso(batch.cancel_at),
            "archived_at": None,
            "results_url": f"{self.root}/v1/messages/batches/{batch.id}/results" if ended else None,
        }

    # request handling (called from handler threads)
    def _record(self, request: RecordedRequest) -> tuple[Reply, int]:
        with self._lock:
            self.requests.append(request)
            self._counter += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            scripted = self._queue.popleft() if self._queue else None
            counter = self._counter
        if scripted is None and self.responder is not None:
            scripted = self.responder(request.path, request.body)
        return _as_reply(scripted), counter

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _hold(self, counter: int) -> None:
        """Wait for ``release_calls`` when this call comes after ``hold_after``'s first n."""
        with self._lock:
            held = self._hold_after is not None and counter > self._hold_after
        while held and not self._released.wait(0.25) and not self._closing.is_set():
            pass

    def _wait(self, delay_s: float) -> None:
        if delay_s > 0:
            self._closing.wait(delay_s)


def _as_reply(result: ResponderResult | None) -> Reply:
    if result is None:
        return Reply()
    if isinstance(result, Reply):
        return result
    status, body, headers, delay_s = result
    return Reply(status=status, body=body, headers=dict(headers or {}), delay_s=delay_s)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out hangs up before a delayed reply: expected, not news.
        pass


class _Handler(BaseHTTPRequestHandler):
    stub: StubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        route = batch_route("GET", self.path)
        if route is not None:
            self._batch("GET", route, b"")
            return
        self._send(404, {"error": {"message": f"no route for GET {self.path}"}}, {})

    def _batch(self, method: str, route: Route, raw: bytes) -> None:
        """A batch or file call: recorded (it takes no reply from the calls' queue), answered."""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body: Any = json.loads(raw) if raw and route[0] != "upload" else None
        except ValueError:
            body = None
        with self.stub._lock:
            self.stub.requests.append(RecordedRequest(method, self.path, headers, body, raw))
        status, payload, extra = self.stub._batch_call(route, headers, raw)
        self._send(status, payload, extra)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        route = batch_route("POST", self.path)
        if route is not None:
            self._batch("POST", route, raw)
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply, counter = self.stub._record(RecordedRequest("POST", self.path, headers, body, raw))
        try:
            self.stub._hold(counter)
            self.stub._wait(reply.delay_s)
            if self.stub._closing.is_set():
                self.close_connection = True
                return
            kind = kind_of(self.path)
            if reply.body is not None:
                payload: Any = reply.body
            elif kind == "unknown":
                payload, reply = (
                    {"error": {"message": f"no route for {self.path}"}},
                    Reply(status=404),
                )
            elif reply.status >= 400:
                payload = error_body(kind, reply)
            else:
                payload = success_body(kind, reply, body, counter, self.path)
                cache = self.stub.prompt_cache if reply.usage == "default" else None
                if cache is not None and "usage" in payload:  # Gemini: not simulated
                    payload["usage"] = cache.usage(kind, body, payload["usage"])
            self._send(reply.status, payload, reply.headers, reply.drip_s)
            if self.stub.prompt_cache is not None and reply.status < 400:
                self.stub.prompt_cache.replied(kind, body)
        finally:
            self.stub._done()

    def _send(self, status: int, payload: Any, headers: dict[str, str], drip_s: float = 0.0) -> None:
        if isinstance(payload, (bytes, str)):
            data = payload.encode() if isinstance(payload, str) else payload
            ctype = "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload).encode(), "application/json"
        self.send_response(status)
        if not any(name.lower() == "content-type" for name in headers):  # a reply may name its own
            self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-request-id", "req_stub")
        self.send_header("request-id", "req_stub")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if drip_s <= 0:
            self.wfile.write(data)
            return
        self.wfile.flush()
        for i in range(len(data)):
            if self.stub._closing.wait(drip_s):
                return
            try:
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
            except OSError:  # the client hung up: what a deadline is for
                self.stub.hangups += 1
                return
            self.stub.dripped += 1


# -- prompt caching ------------------------------------------------------------------------


class PromptCache:
    """The providers' prompt caches, simulated in default replies (``StubServer(prompt_cache=True)``).

    A prefix is cached once a reply to a request carrying it has been sent (as Anthropic caches
    only once a response has started: requests sent together all miss). Tokens are the stub's
    (``TOKENIZER``, else four characters each).

    - Anthropic (``/v1/messages``): the user content up to its ``cache_control`` block is the
      prefix; from the shortest cacheable size (1,024 tokens, 2,048 for Haiku models) a request
      whose prefix was cached reports ``cache_read_input_tokens``, else it writes it
      (``cache_creation_input_tokens``, split by lifetime in ``cache_creation``); either way
      ``input_tokens`` is the rest.
    - OpenAI Responses: requests with the same ``prompt_cache_key`` share a cache; a request
      reads the longest prefix it shares with a prompt cached under its key, in 128-token
      steps from 1,024 tokens (``input_tokens_details.cached_tokens``), and on a miss writes
      its whole prompt in those steps (``cache_write_tokens``). Without a key nothing is read
      (the routing a key buys is what the simulation rewards).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._anthropic: set[tuple[str, str]] = set()  # (model, prefix)
        self._openai: dict[str, list[str]] = {}  # key -> prompts cached under it
        self.reads = 0  # requests that read from the cache
        self.writes = 0  # requests that wrote to it

    def usage(self, kind: str, body: Any, usage: dict[str, Any]) -> dict[str, Any]:
        """The default usage of a reply, with what the cache read and wrote."""
        if kind == "messages":
            return self._anthropic_usage(body, usage)
        if kind == "responses":
            return self._openai_usage(body, usage)
        return usage

    def replied(self, kind: str, body: Any) -> None:
        """A reply to ``body`` has been sent: its prefix is cached from now on."""
        with self._lock:
            if kind == "messages" and (found := _anthropic_prefix(body)) is not None:
                self._anthropic.add((str(body.get("model", "")), found[0]))
            elif kind == "responses" and isinstance(body, dict) and body.get("prompt_cache_key"):
                self._openai.setdefault(str(body["prompt_cache_key"]), []).append(prompt_of(body))

    def _anthropic_usage(self, body: Any, usage: dict[str, Any]) -> dict[str, Any]:
        found = _anthropic_prefix(body)
        if found is None:
            return usage
        prefix, ttl = found
        model = str(body.get("model", ""))
        tokens = _tokens(prefix)
        if tokens < (2_048 if "haiku" in model.lower() else 1_024):
            return usage
        total = _tokens(prompt_of(body))
        with self._lock:
            hit = (model, prefix) in self._anthropic
            self.reads += hit
            self.writes += not hit
        out = {**usage, "input_tokens": max(total - tokens, 0)}
        if hit:
            return {**out, "cache_read_input_tokens": tokens, "cache_creation_input_tokens": 0}
        split = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0}
        split[f"ephemeral_{ttl}_input_tokens"] = tokens
        return {
            **out,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": tokens,
            "cache_creation": split,
        }

    def _openai_usage(self, body: Any, usage: dict[str, Any]) -> dict[str, Any]:
        key = body.get("prompt_cache_key") if isinstance(body, dict) else None
        if not key:
            return usage
        prompt = prompt_of(body)
        with self._lock:
            cached = list(self._openai.get(str(key), []))
        shared = max((_common_prefix(prompt, other) for other in cached), default=0)
        read = _in_steps(_tokens(prompt[:shared]) if shared else 0)
        written = 0 if read else _in_steps(_tokens(prompt))
        with self._lock:
            self.reads += bool(read)
            self.writes += bool(written)
        details = {
            **usage.get("input_tokens_details", {}),
            "cached_tokens": read,
            "cache_write_tokens": written,
        }
        return {**usage, "input_tokens_details": details}


def _anthropic_prefix(body: Any) -> tuple[str, str] | None:
    """(the user content up to its cache breakpoint, the breakpoint's lifetime), or None."""
    if not isinstance(body, dict) or not body.get("messages"):
        return None
    content = body["messages"][-1].get("content")
    if not isinstance(content, list):
        return None
    text = ""
    for block in content:
        text += str(block.get("text", ""))
        control = block.get("cache_control")
        if isinstance(control, dict):
            return text, str(control.get("ttl") or "5m")
    return None


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of two strings (bisection on slices)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _in_steps(tokens: int) -> int:
    """OpenAI's cacheable size: 128-token steps from 1,024 tokens, else 0."""
    return tokens // 128 * 128 if tokens >= 1_024 else 0
