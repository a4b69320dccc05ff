"""The Gemini codec's media outside a user turn and its recorded built-ins, in plain Python.

A multimodal ``functionResponse`` (``parts`` of ``inlineData`` / ``fileData`` beside
its ``response``), media in ``systemInstruction`` (``systemMedia``) and in a model
turn of the history, and the ``fileSearch`` / ``googleMaps`` / ``computerUse`` /
``enterpriseWebSearch`` tools with the grounding they answer with.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from blackbox_mitm.cassette.media import collecting
from blackbox_mitm.codecs import gemini as codec
from blackbox_mitm.codecs.base import CallIds
from blackbox_mitm.errors import BlackboxUnsupportedError
from blackbox_mitm.matcher.difference import first_difference
from blackbox_mitm.matcher.digests import PieceDigester
from blackbox_mitm.matcher.normalize import compared_view, request_digest

PATH = "/v1beta/models/gemini-3-flash-preview:generateContent"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEUlEQVR4nGP4z8DA8B+MgBgAHfAD/dPQfSYAAAAASUVORK5CYII=")
OTHER = PNG[:-1] + b"\x01"
USER = {"role": "user", "parts": [{"text": "Open example.com and click Sign in."}]}
CLICK = {"functionCall": {"name": "click_at", "args": {"x": 500, "y": 120}}}


def _media(data: bytes, name: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "image", "mediaType": "image/png", "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    if name is not None:
        part["name"] = name
    return part


def _blob(data: bytes, **extra: Any) -> dict[str, Any]:
    return {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(data).decode(), **extra}}


def _decode(ids: CallIds | None = None, **fields: Any) -> Any:
    fields.setdefault("contents", [USER])
    return codec.decode_request(json.dumps(fields).encode(), ids or CallIds(), path=PATH)


def _screenshot_round(response: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [USER, {"role": "model", "parts": [CLICK]}, {"role": "user", "parts": [{"functionResponse": response}, *extra]}]


# --- a multimodal function response ----------------------------------------------------------


def test_a_function_response_keeps_its_response_and_its_media_by_digest() -> None:
    """Gemini 3's multimodal function response: ``{"$ref": displayName}`` in the response, the image in ``parts``."""
    response = {
        "name": "click_at",
        "response": {"url": "https://example.com/login", "screenshot": {"$ref": "shot.png"}},
        "parts": [_blob(PNG, displayName="shot.png"), {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/page.pdf"}}],
    }
    with collecting() as media:
        decoded = _decode(contents=_screenshot_round(response))
    [result] = decoded.tool_results()
    assert result == {
        "type": "tool_result",
        "toolCallId": "call-0",
        "toolName": "click_at",
        "result": {
            "response": {"url": "https://example.com/login", "screenshot": {"$ref": "shot.png"}},
            "parts": [_media(PNG, "shot.png"), {"type": "document", "mediaType": "application/pdf", "url": "gs://b/page.pdf"}],
        },
    }
    assert media == {hashlib.sha256(PNG).hexdigest(): ("image/png", PNG)}  # the bytes go to the run's media file


def test_a_function_response_without_parts_is_its_response_as_before() -> None:
    for response in ({"name": "click_at", "response": {"ok": True}}, {"name": "click_at", "response": {"ok": True}, "parts": []}):
        [result] = _decode(contents=_screenshot_round(response)).tool_results()
        assert result["result"] == {"ok": True}
    [bare] = _decode(contents=_screenshot_round({"name": "click_at", "parts": [_blob(PNG)]})).tool_results()
    assert bare["result"] == {"response": {}, "parts": [_media(PNG)]}  # only parts: the API takes that too


def test_snake_case_function_response_parts_read_the_same() -> None:
    """The API reads proto JSON's snake_case names; the media part is the same either way."""
    snake = {
        "name": "click_at",
        "response": {"url": "u"},
        "parts": [{"inline_data": {"mime_type": "image/png", "data": base64.b64encode(PNG).decode(), "display_name": "s.png"}}],
    }
    camel = {"name": "click_at", "response": {"url": "u"}, "parts": [_blob(PNG, displayName="s.png")]}
    contents = _screenshot_round(camel)
    contents[2]["parts"] = [{"function_response": snake}]
    assert _decode(contents=contents).model_input == _decode(contents=_screenshot_round(camel)).model_input


def test_the_same_screenshot_resent_is_the_same_part_and_another_one_differs() -> None:
    one = _decode(contents=_screenshot_round({"name": "click_at", "response": {}, "parts": [_blob(PNG)]})).model_input
    again = _decode(contents=_screenshot_round({"name": "click_at", "response": {}, "parts": [_blob(PNG)]})).model_input
    other = _decode(contents=_screenshot_round({"name": "click_at", "response": {}, "parts": [_blob(OTHER)]})).model_input
    assert request_digest(one) == request_digest(again) != request_digest(other)
    found = first_difference(one, other)
    assert found is not None and found.message == 2


@pytest.mark.parametrize(
    ("parts", "says"),
    [
        ("a picture", "parts is not a list"),
        (["x"], "a functionResponse part is not an object"),
        ([{}], "exactly one of inlineData and fileData"),
        ([{**_blob(PNG), "fileData": {"fileUri": "gs://b/x"}}], "exactly one of inlineData and fileData"),
        ([{"inlineData": {"mimeType": "image/png", "data": "@@@"}}], "not base64"),
        ([{"fileData": {"mimeType": "image/png"}}], "fileData without its data or fileUri"),
    ],
)
def test_a_malformed_function_response_part_is_a_clear_error(parts: Any, says: str) -> None:
    with pytest.raises(BlackboxUnsupportedError, match=says) as err:
        _decode(contents=_screenshot_round({"name": "click_at", "response": {}, "parts": parts}))
    assert "contents[2].parts[0].functionResponse.parts" in str(err.value)


def test_a_fork_edit_replaces_the_whole_multimodal_result() -> None:
    response = {"name": "click_at", "response": {"url": "u"}, "parts": [_blob(PNG)]}
    body = json.dumps({"contents": _screenshot_round(response)}).encode()
    ids = CallIds()
    _decode(ids, contents=_screenshot_round(response))
    rewritten = codec.rewrite_tool_result(body, ids, "call-0", '{"url": "https://example.com/other"}')
    assert rewritten is not None
    sent = json.loads(rewritten)["contents"][2]["parts"][0]["functionResponse"]
    assert sent == {"name": "click_at", "response": {"url": "https://example.com/other"}}


# --- media in the system instruction and in a model turn ----------------------------------------


def test_system_instruction_media_are_system_media_compared_by_digest() -> None:
    system = {"parts": [{"text": "You review screenshots. The reference:"}, _blob(PNG, displayName="ref.png")]}
    with collecting() as media:
        mi = _decode(systemInstruction=system).model_input
    assert mi["systemPrompt"] == "You review screenshots. The reference:"
    assert mi["systemMedia"] == [_media(PNG, "ref.png")]
    assert media == {hashlib.sha256(PNG).hexdigest(): ("image/png", PNG)}
    assert compared_view(mi)["systemMedia"] == [_media(PNG, "ref.png")]
    other = _decode(systemInstruction={"parts": [system["parts"][0], _blob(OTHER, displayName="ref.png")]}).model_input
    assert request_digest(mi) != request_digest(other)
    found = first_difference(mi, other)
    assert found is not None and found.field == "system"
    digester = PieceDigester()
    assert digester.digest(mi) == request_digest(mi) and digester.digest(other) == request_digest(other)


def test_a_text_only_system_instruction_is_unchanged_and_hashes_as_before() -> None:
    mi = _decode(systemInstruction={"parts": [{"text": "Be brief."}]}).model_input
    assert mi["systemPrompt"] == "Be brief." and "systemMedia" not in mi
    assert "systemMedia" not in compared_view(mi)
    assert request_digest({**mi, "systemMedia": []}) == request_digest(mi)


def test_a_system_instruction_part_that_is_not_text_or_media_is_refused_by_name() -> None:
    with pytest.raises(BlackboxUnsupportedError, match=r"systemInstruction\.parts\[1\]\.functionCall") as err:
        _decode(systemInstruction={"parts": [{"text": "x"}, CLICK]})
    assert err.value.field == "systemInstruction.parts[1].functionCall" and "not recorded" in err.value.reason


def test_an_image_in_a_model_turn_is_an_assistant_media_part() -> None:
    """An image model's answer sent back in the history: the same part (digest) the answer was recorded as."""
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Here."}, _blob(PNG)]}, "finishReason": "STOP"}]}
    ids = CallIds()
    first = _decode(ids)
    output = codec.decode_response(json.dumps(answer).encode(), ids, first)
    history = [USER, {"role": "model", "parts": [{"text": "Here."}, _blob(PNG)]}, {"role": "user", "parts": [{"text": "Bigger."}]}]
    second = _decode(ids, contents=history).model_input
    assert second["messages"][1] == {"role": "assistant", "content": output["content"]}


# --- built-in tools ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "options"),
    [
        ("fileSearch", {"fileSearchStoreNames": ["fileSearchStores/handbook-7f3a"], "topK": 4, "metadataFilter": 'team = "sre"'}),
        ("googleMaps", {"enableWidget": True}),
        ("computerUse", {"environment": "ENVIRONMENT_BROWSER", "excludedPredefinedFunctions": ["drag_and_drop"]}),
        ("enterpriseWebSearch", {"excludeDomains": ["example.org"]}),
    ],
)
def test_built_in_tools_are_compared_definitions(key: str, options: dict[str, Any]) -> None:
    mi = _decode(tools=[{key: options}, {"functionDeclarations": [{"name": "open_tab"}]}]).model_input
    assert mi["tools"][0] == {"name": key, "builtin": {key: options}}
    assert mi["tools"][1]["name"] == "open_tab"
    changed = _decode(tools=[{key: {**options, "extra": 1}}, {"functionDeclarations": [{"name": "open_tab"}]}]).model_input
    assert request_digest(changed) != request_digest(mi)


def test_the_maps_location_is_a_compared_control() -> None:
    config = {"retrievalConfig": {"latLng": {"latitude": 48.85, "longitude": 2.35}, "languageCode": "fr"}}
    mi = _decode(tools=[{"googleMaps": {}}], toolConfig=config).model_input
    assert mi["params"] == {"retrievalConfig": config["retrievalConfig"]}
    snake = _decode(tools=[{"googleMaps": {}}], tool_config={"retrieval_config": config["retrievalConfig"]}).model_input
    assert snake == mi


def test_file_search_and_maps_grounding_are_kept_with_the_answer_and_served_back() -> None:
    grounding = {
        "groundingChunks": [
            {"retrievedContext": {"title": "oncall.md", "text": "Page the SRE lead.", "fileSearchStore": "fileSearchStores/handbook-7f3a"}},
            {"maps": {"uri": "https://maps.google.com/?cid=1", "title": "Café Kitsuné", "placeId": "places/ChIJ1"}},
        ],
        "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 18, "text": "Page the SRE lead."}, "groundingChunkIndices": [0]}],
        "retrievalMetadata": {},
        "googleMapsWidgetContextToken": "widgetcontent/AcBXP1",
    }
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Page the SRE lead."}]},
                "finishReason": "STOP",
                "groundingMetadata": grounding,
            }
        ]
    }
    request = _decode(tools=[{"fileSearch": {"fileSearchStoreNames": ["fileSearchStores/handbook-7f3a"]}}, {"googleMaps": {}}])
    out = codec.decode_response(json.dumps(body).encode(), CallIds(), request)
    assert out["grounding"] == {"groundingMetadata": grounding} and out["text"] == "Page the SRE lead."
    served = codec.encode_response(out, request=request, ids=CallIds(), created_ms=0)
    assert served["candidates"][0]["groundingMetadata"] == grounding


def test_a_computer_use_round_is_function_calls_and_screenshots() -> None:
    """The predefined actions are ordinary function calls; the screenshot comes back in the function response's parts."""
    tools = [{"computerUse": {"environment": "ENVIRONMENT_BROWSER"}}]
    ids = CallIds()
    first = _decode(ids, tools=tools, contents=[{"role": "user", "parts": [{"text": "Sign in."}, _blob(PNG)]}])
    answer = {"candidates": [{"content": {"role": "model", "parts": [CLICK]}, "finishReason": "STOP"}]}
    out = codec.decode_response(json.dumps(answer).encode(), ids, first)
    assert out["type"] == "tool_calls" and out["calls"] == [
        {"toolCallId": "call-0", "toolName": "click_at", "toolInput": {"x": 500, "y": 120}}
    ]
    response = {"name": "click_at", "response": {"url": "https://example.com/login"}, "parts": [_blob(OTHER)]}
    contents = [first_contents := {"role": "user", "parts": [{"text": "Sign in."}, _blob(PNG)]}, {"role": "model", "parts": [CLICK]}]
    second = _decode(ids, tools=tools, contents=[*contents, {"role": "user", "parts": [{"functionResponse": response}]}])
    assert first_contents["parts"][1] == _blob(PNG)
    [result] = second.tool_results()
    assert result["toolCallId"] == "call-0" and result["result"]["parts"] == [_media(OTHER)]


def test_other_built_ins_stay_refused_by_name() -> None:
    with pytest.raises(BlackboxUnsupportedError, match=r"tools\[0\]\.retrieval") as err:
        _decode(tools=[{"retrieval": {"vertexAiSearch": {"datastore": "x"}}}])
    assert err.value.field == "tools[0].retrieval" and "never sees" in err.value.reason


def test_the_new_built_ins_options_are_compared_in_camel_case_whatever_the_spelling() -> None:
    """google-genai sends ``file_search_store_names``; Gemini CLI or a JS client ``fileSearchStoreNames``: one tool."""
    snake = _decode(tools=[{"file_search": {"file_search_store_names": ["fileSearchStores/a"], "top_k": 2}}]).model_input
    camel = _decode(tools=[{"fileSearch": {"fileSearchStoreNames": ["fileSearchStores/a"], "topK": 2}}]).model_input
    assert snake == camel and camel["tools"] == [
        {"name": "fileSearch", "builtin": {"fileSearch": camel["tools"][0]["builtin"]["fileSearch"]}}
    ]
    old = _decode(tools=[{"googleSearchRetrieval": {"dynamic_retrieval_config": {"mode": "MODE_DYNAMIC"}}}]).model_input
    assert old["tools"][0]["builtin"] == {
        "googleSearchRetrieval": {"dynamic_retrieval_config": {"mode": "MODE_DYNAMIC"}}
    }  # as it always was


def test_verify_accepts_system_media_and_a_multimodal_tool_result_and_flags_a_non_list() -> None:
    from blackbox_mitm.cassette import Trace
    from blackbox_mitm.codecs.verified import verify_trace

    response = {"name": "click_at", "response": {"url": "u"}, "parts": [_blob(PNG)]}
    decoded = _decode(systemInstruction={"parts": [{"text": "Review."}, _blob(OTHER)]}, contents=_screenshot_round(response))
    [result] = decoded.tool_results()
    trace = Trace.new("multimodal", created_at=1_732_981_200_000)
    trace.append("model_input", decoded.model_input, timestamp=1_732_981_200_001)
    trace.append("model_output", {"type": "final_answer", "text": "ok"}, timestamp=1_732_981_200_002)
    trace.append("tool_result", {k: result[k] for k in ("toolCallId", "toolName", "result")}, timestamp=1_732_981_200_003)
    trace.append("metadata", {"event": "run_completed", "status": "success", "result": "ok"}, timestamp=1_732_981_200_004)
    assert verify_trace(trace) == []
    bad = Trace.new("bad", created_at=1_732_981_200_000)
    bad.append("model_input", {**decoded.model_input, "systemMedia": "a picture"}, timestamp=1_732_981_200_001)
    assert any("payload.systemMedia" in str(p) and "must be an array" in str(p) for p in verify_trace(bad))
