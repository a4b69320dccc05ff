"""The "Blackbox" content view for mitmweb / mitmproxy: a model call's neutral step, beside the raw body.

Registered by ``addon/blackbox_addon.py`` through mitmproxy's contentview API
(``mitmproxy.contentviews.add``). For a model-call flow (a request a codec answers:
``codecs.codec_for``) it is chosen by default, and shows:

* on the request, the ``model_input`` the cassette holds for it — the request
  decoded by the provider's codec (``blackbox_mitm.codecs``), or the refusal
  when the request holds a field Blackbox refuses;
* on the response, the ``model_output`` — the JSON answer, or a streamed one
  put together from its events — marked as a replay when Blackbox answered it
  from the cassette (``flow.is_replay == "response"``); a refusal or a replay
  divergence that Blackbox answered shows its message; a provider error shows
  that it was passed on and not recorded.

The view decodes the flow on its own, with a fresh map of tool-call ids: ids
are ``call-N`` numbered within the flow (the cassette numbers them across the
run). It never touches the running session.
"""

from __future__ import annotations

import json
from typing import Any

from mitmproxy import contentviews, http
from mitmproxy.contentviews import Metadata, SyntaxHighlight

from blackbox_mitm.cassette.records import JSONObject
from blackbox_mitm.codecs import CallIds, Codec, DecodedRequest, codec_for, parse_stream, stream_content_type
from blackbox_mitm.errors import BlackboxError, BlackboxUnsupportedError

__all__ = ["BlackboxContentview", "register", "render_flow_message"]

_PRIORITY = 2.0  # above the JSON view (1): a model call opens in this view
# What the codecs' error answers from Blackbox carry: the refusal's name, the OpenAI code, the error types.
_BLACKBOX_ERRORS = (
    "BlackboxUnsupportedError",
    '"code":"blackbox"',
    "blackbox:",
    "blackbox replay",
    "replay_divergence",
    "replay_exhausted",
    "script_exhausted",
)
_IDS_NOTE = "# tool-call ids are call-N numbered within this flow (the cassette numbers them across the run)"


class BlackboxContentview(contentviews.Contentview):
    """Shows a model call's request as its ``model_input`` and its response as its ``model_output``."""

    @property
    def name(self) -> str:
        return "Blackbox"

    @property
    def syntax_highlight(self) -> SyntaxHighlight:
        return "yaml"  # the text is JSON under '#' comment lines: YAML highlights both

    def render_priority(self, data: bytes, metadata: Metadata) -> float:
        flow = metadata.flow
        if isinstance(flow, http.HTTPFlow) and metadata.http_message is not None and _codec_of(flow) is not None:
            return _PRIORITY
        return -1

    def prettify(self, data: bytes, metadata: Metadata) -> str:
        flow = metadata.flow
        if not isinstance(flow, http.HTTPFlow) or _codec_of(flow) is None:
            raise ValueError("not a model call: the Blackbox view shows POSTs to a model API path")
        return render_flow_message(flow, response=metadata.http_message is flow.response)


def register() -> BlackboxContentview:
    """Add the view to mitmproxy's registry (again after a script reload: the registry replaces it by name)."""
    view = BlackboxContentview()
    contentviews.add(view)
    return view


def render_flow_message(flow: http.HTTPFlow, *, response: bool) -> str:
    """The view's text for the flow's request (``response=False``) or its response."""
    codec = _codec_of(flow)
    assert codec is not None
    ids = CallIds()
    head = f"# Blackbox · {codec.PROVIDER} model call"
    bare, _, query = flow.request.path.partition("?")
    try:
        decoded = codec.decode_request(
            flow.request.get_content(strict=False) or b"", ids, path=bare.split("#", 1)[0], query=query.split("#", 1)[0]
        )
    except BlackboxUnsupportedError as exc:
        return "\n".join(
            [head, "# REFUSED: Blackbox does not record this request (it could not be replayed)", f"# {exc.client_message}", ""]
        )
    except BlackboxError as exc:
        return "\n".join([head, f"# the request could not be decoded: {exc}", ""])
    if not response:
        return "\n".join([head, "# model_input: the request as the cassette holds it", _IDS_NOTE, _json(decoded.model_input), ""])
    return _response_text(head, codec, flow, decoded, ids)


def _response_text(head: str, codec: Codec, flow: http.HTTPFlow, decoded: DecodedRequest, ids: CallIds) -> str:
    resp = flow.response
    if resp is None:
        return "\n".join([head, "# no response yet", ""])
    replayed = flow.is_replay == "response"
    source = "# answered by Blackbox from the cassette (replay)" if replayed else "# the provider's answer"
    body = resp.get_content(strict=False) or b""
    if resp.status_code >= 400:
        message = _error_message(body)
        if replayed or _is_blackbox_error(body):
            return "\n".join(
                [head, f"# REFUSED by Blackbox (HTTP {resp.status_code}): nothing was recorded for this call", f"# {message}", ""]
            )
        return "\n".join([head, f"# the provider answered HTTP {resp.status_code}: passed to the agent, not recorded", f"# {message}", ""])
    try:
        answer: bytes | JSONObject = body  # the provider's body, or its stream's events put together
        ctype = resp.headers.get("content-type", "").lower()
        if ctype.startswith(("text/event-stream", stream_content_type(codec).split(";")[0])):
            answer = codec.aggregate_stream(parse_stream(codec, body))
            source += ", streamed: its events put together"
        output = codec.decode_response(answer, ids, decoded)
    except BlackboxUnsupportedError as exc:
        return "\n".join(
            [head, "# REFUSED: Blackbox does not record this answer (it could not be replayed)", f"# {exc.client_message}", ""]
        )
    except BlackboxError as exc:
        return "\n".join([head, source, f"# the answer could not be decoded: {exc}", ""])
    return "\n".join([head, source, "# model_output: the answer as the cassette holds it", _IDS_NOTE, _json(output), ""])


def _codec_of(flow: http.HTTPFlow) -> Codec | None:
    return codec_for(flow.request.method, flow.request.path)


def _error_message(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")[:2000]
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message) if message is not None else json.dumps(data, ensure_ascii=False)[:2000]


def _is_blackbox_error(body: bytes) -> bool:
    """An error Blackbox itself answered (a refusal, a divergence, an exhausted recording), not a provider's."""
    text = body.decode("utf-8", "replace")
    return any(marker in text for marker in _BLACKBOX_ERRORS)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)
