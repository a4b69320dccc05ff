"""The real ``google-genai`` SDK with Gemini's recorded built-ins and multimodal function responses, over real HTTP.

What the pinned SDK (3.3) sends for ``file_search``, ``google_maps`` (with a
``retrieval_config`` location) and ``computer_use`` decodes to compared built-in
tool definitions; the grounding a file search or Maps answer carries is served
back and parsed by the SDK; a computer-use round (a predefined action as a
function call, the screenshot in ``FunctionResponse.parts``) decodes with the
screenshot by digest. The server is ``test_gemini_sdk``'s replayer.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

genai = pytest.importorskip("google.genai")

from google.genai import types  # noqa: E402
from test_gemini_sdk import PNG, Replayer, _client, server  # noqa: E402, F401  (server: the fixture)

from blackbox_mitm.codecs.base import DecodedRequest  # noqa: E402

MODEL = "gemini-3-flash-preview"
STORE = "fileSearchStores/handbook-7f3a"
GROUNDING = {
    "groundingChunks": [{"retrievedContext": {"title": "oncall.md", "text": "Page the SRE lead.", "fileSearchStore": STORE}}],
    "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 18, "text": "Page the SRE lead."}, "groundingChunkIndices": [0]}],
}


def _grounded(_request: DecodedRequest) -> dict[str, Any]:
    return {"type": "final_answer", "text": "Page the SRE lead.", "grounding": {"groundingMetadata": GROUNDING}}


def test_file_search_and_maps_tools_decode_as_built_ins_and_their_grounding_parses(server: tuple[Replayer, str]) -> None:  # noqa: F811
    replayer, url = server
    replayer.answer = _grounded
    client = _client(url)
    tools: list[Any] = [
        types.Tool(file_search=types.FileSearch(file_search_store_names=[STORE], top_k=3)),
        types.Tool(google_maps=types.GoogleMaps()),
    ]
    where = types.ToolConfig(retrieval_config=types.RetrievalConfig(lat_lng=types.LatLng(latitude=48.85, longitude=2.35)))
    response = client.models.generate_content(
        model=MODEL, contents="Who do I page?", config=types.GenerateContentConfig(tools=tools, tool_config=where)
    )
    assert response.text == "Page the SRE lead."
    metadata = response.candidates[0].grounding_metadata
    assert metadata.grounding_chunks[0].retrieved_context.file_search_store == STORE
    decoded = replayer.decoded[0].model_input
    assert [t["name"] for t in decoded["tools"]] == ["fileSearch", "googleMaps"]
    # The SDK sends the options in snake_case (file_search_store_names): compared in camelCase, as other clients send them.
    assert decoded["tools"][0]["builtin"] == {"fileSearch": {"fileSearchStoreNames": [STORE], "topK": 3}}
    assert decoded["params"]["retrievalConfig"] == {"latLng": {"latitude": 48.85, "longitude": 2.35}}


def test_a_computer_use_round_decodes_with_its_screenshot_by_digest(server: tuple[Replayer, str]) -> None:  # noqa: F811
    replayer, url = server
    click = {"type": "tool_calls", "calls": [{"toolCallId": "call-0", "toolName": "click_at", "toolInput": {"x": 500, "y": 120}}]}
    replayer.answer = lambda request: click if len(replayer.decoded) == 1 else {"type": "final_answer", "text": "Signed in."}
    client = _client(url)
    computer = types.Tool(
        computer_use=types.ComputerUse(environment=types.Environment.ENVIRONMENT_BROWSER, excluded_predefined_functions=["drag_and_drop"])
    )
    chat = client.chats.create(model=MODEL, config=types.GenerateContentConfig(tools=[computer]))
    first = chat.send_message("Sign in on example.com.")
    [call] = first.function_calls
    assert call.name == "click_at" and call.args == {"x": 500, "y": 120}
    screenshot = types.FunctionResponsePart.from_bytes(data=PNG, mime_type="image/png")
    result = types.FunctionResponse(id=call.id, name=call.name, response={"url": "https://example.com/home"}, parts=[screenshot])
    assert chat.send_message(types.Part(function_response=result)).text == "Signed in."
    tools = replayer.decoded[1].model_input["tools"]
    assert tools == [
        {
            "name": "computerUse",
            "builtin": {"computerUse": {"environment": "ENVIRONMENT_BROWSER", "excludedPredefinedFunctions": ["drag_and_drop"]}},
        }
    ]
    [tool_result] = replayer.decoded[1].tool_results()
    media = {"type": "image", "mediaType": "image/png", "sha256": hashlib.sha256(PNG).hexdigest(), "size": len(PNG)}
    assert tool_result["toolCallId"] == "call-0"
    assert tool_result["result"] == {"response": {"url": "https://example.com/home"}, "parts": [media]}
