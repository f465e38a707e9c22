"""Goldens for tests/it/openai_api.rs (issue 41).

Two parts, written to expected.json:

* `counts`: the tiktoken cookbook's `num_tokens_from_messages` (3 per message, 1 per name,
  3 for the reply) plus `num_tokens_for_tools` (the function-calling estimate), for gpt-4o
  (o200k_base) and gpt-4 (cl100k_base), on the requests in `count_requests`.
* `renders`: OpenAI bodies shaped as vLLM's `parse_chat_messages` shapes them
  (`content: null` -> "" or [], parts joined with "\\n" or mapped to {"type": "image"},
  tool-call arguments parsed), then rendered by transformers' `apply_chat_template`.

Run: HF_HOME=../shared/hf-cache HF_HUB_OFFLINE=1 python3 tests/golden/openai/make_openai_golden.py
(tiktoken's rank files are read from ../shared/fixtures/tiktoken).
"""
import copy
import json
import os
from pathlib import Path

import tiktoken
import tiktoken.load as tl
import tiktoken_ext.openai_public as op

HERE = Path(__file__).parent
SHARED = Path(os.environ.get("RTOK_SHARED_DIR", HERE.parents[2].parent / "shared"))


def encoding(name):
    def local(url, expected_hash=None):
        return tl.load_tiktoken_bpe(str(SHARED / "fixtures/tiktoken" / url.rsplit("/", 1)[1]), expected_hash)

    saved = op.load_tiktoken_bpe
    op.load_tiktoken_bpe = local
    try:
        return tiktoken.Encoding(**op.ENCODING_CONSTRUCTORS[name]())
    finally:
        op.load_tiktoken_bpe = saved


# The cookbook's functions (How_to_count_tokens_with_tiktoken.ipynb), as published.
def num_tokens_from_messages(messages, enc):
    tokens_per_message = 3
    tokens_per_name = 1
    num_tokens = 0
    for message in messages:
        num_tokens += tokens_per_message
        for key, value in message.items():
            num_tokens += len(enc.encode(value))
            if key == "name":
                num_tokens += tokens_per_name
    num_tokens += 3
    return num_tokens


def num_tokens_for_tools(functions, messages, model, enc):
    if model in ["gpt-4o", "gpt-4o-mini"]:
        func_init, prop_init, prop_key, enum_init, enum_item, func_end = 7, 3, 3, -3, 3, 12
    else:
        func_init, prop_init, prop_key, enum_init, enum_item, func_end = 10, 3, 3, -3, 3, 12
    func_token_count = 0
    if len(functions) > 0:
        for f in functions:
            func_token_count += func_init
            function = f["function"]
            f_name = function["name"]
            f_desc = function["description"]
            if f_desc.endswith("."):
                f_desc = f_desc[:-1]
            line = f_name + ":" + f_desc
            func_token_count += len(enc.encode(line))
            if len(function["parameters"]["properties"]) > 0:
                func_token_count += prop_init
                for key in list(function["parameters"]["properties"].keys()):
                    func_token_count += prop_key
                    p_name = key
                    p_type = function["parameters"]["properties"][key]["type"]
                    p_desc = function["parameters"]["properties"][key]["description"]
                    if "enum" in function["parameters"]["properties"][key].keys():
                        func_token_count += enum_init
                        for item in function["parameters"]["properties"][key]["enum"]:
                            func_token_count += enum_item
                            func_token_count += len(enc.encode(item))
                    if p_desc.endswith("."):
                        p_desc = p_desc[:-1]
                    line = f"{p_name}:{p_type}:{p_desc}"
                    func_token_count += len(enc.encode(line))
        func_token_count += func_end
    return num_tokens_from_messages(messages, enc) + func_token_count


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA."},
                "unit": {"type": "string", "description": "The unit", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}

COUNT_REQUESTS = [
    {"messages": [{"role": "user", "content": "Hello!"}]},
    {
        "messages": [
            {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
            {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
            {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
            {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."},
        ]
    },
    {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
            {"role": "user", "content": "What's the weather like in San Francisco?"},
        ],
        "tools": [WEATHER],
    },
]


def vllm_shape(messages, fmt):
    out = []
    for m in messages:
        m = copy.deepcopy(m)
        content = m.get("content")
        parts = [] if content is None else ([{"type": "text", "text": content}] if isinstance(content, str) else content)
        if fmt == "string":
            m["content"] = "\n".join(p["text"] for p in parts if p.get("type") == "text")
        else:
            shaped = []
            for p in parts:
                t = p.get("type")
                if t == "text":
                    shaped.append({"type": "text", "text": p["text"]})
                elif t in ("image_url", "input_image"):
                    shaped.append({"type": "image"})
                elif t in ("audio_url", "input_audio"):
                    shaped.append({"type": "audio"})
                elif t == "video_url":
                    shaped.append({"type": "video"})
            if m["role"] == "tool" and all(p["type"] == "text" for p in shaped):
                m["content"] = "\n".join(p["text"] for p in shaped)
            else:
                m["content"] = shaped
        for call in m.get("tool_calls") or []:
            args = call["function"].get("arguments")
            if isinstance(args, str):
                try:
                    call["function"]["arguments"] = json.loads(args)
                except json.JSONDecodeError:
                    call["function"]["arguments"] = {}
        out.append(m)
    return out


TOOL_TURN = {
    "model": "any",
    "messages": [
        {"role": "user", "content": "What's the weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_current_weather", "arguments": "{\"location\": \"Paris\"}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"},
    ],
    "tools": [WEATHER],
}
PARTS = {
    "model": "any",
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                {"type": "text", "text": "What is in this image?"},
                {"type": "text", "text": "Be brief."},
            ],
        }
    ],
    "chat_template_kwargs": {"date_string": "26 Jul 2024"},
}

# (model, vLLM's detected content format, body)
RENDER_CASES = [
    ("Qwen/Qwen3-8B", "string", "tool_turn", TOOL_TURN),
    ("deepseek-ai/DeepSeek-V3", "string", "tool_turn", TOOL_TURN),
    ("meta-llama/Llama-3.2-1B-Instruct", "string", "parts", PARTS),
    ("google/gemma-3-4b-it", "openai", "parts", PARTS),
    ("Qwen/Qwen3-8B", "string", "parts", PARTS),
]


def main():
    from transformers import AutoTokenizer, PreTrainedConfig

    counts = []
    for model, enc_name in [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")]:
        enc = encoding(enc_name)
        for i, req in enumerate(COUNT_REQUESTS):
            n = num_tokens_for_tools(req.get("tools", []), req["messages"], model, enc)
            counts.append({"model": model, "request": i, "tokens": n})
    renders = []
    for model, fmt, name, body in RENDER_CASES:
        tok = AutoTokenizer.from_pretrained(model, config=PreTrainedConfig())
        text = tok.apply_chat_template(
            vllm_shape(body["messages"], fmt),
            tools=body.get("tools"),
            add_generation_prompt=True,
            tokenize=False,
            **body.get("chat_template_kwargs", {}),
        )
        renders.append({"model": model, "content_format": fmt, "body": name, "text": text})
    out = {
        "count_requests": COUNT_REQUESTS,
        "counts": counts,
        "bodies": {"tool_turn": TOOL_TURN, "parts": PARTS},
        "renders": renders,
    }
    (HERE / "expected.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
