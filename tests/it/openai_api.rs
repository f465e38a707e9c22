//! Issue 41 items 2–4: OpenAI chat bodies (`ChatRequest::from_openai`, vLLM's content
//! shaping), `Tokenizer::count_chat` (templates, and the tiktoken cookbook's estimate for
//! OpenAI model names), and vLLM's `/tokenize` / `/detokenize` shapes. Goldens:
//! `tests/golden/openai/expected.json` (`make_openai_golden.py`: transformers renders of
//! vLLM-shaped messages, Python tiktoken's cookbook counts).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;

use serde_json::{Value as Json, json};

use router_tokenizer::chat::{ChatRequest, ContentFormat, ContentShaping, Message};
use router_tokenizer::{
    DetokenizeRequest, DetokenizeResponse, EncodeChatOptions, TokenizeRequest, TokenizeResponse,
};

fn golden() -> Json {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/openai/expected.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn user_body() -> Json {
    json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}], "temperature": 0.2})
}

// ---- item 2: OpenAI bodies ----

#[test]
fn an_openai_body_gets_the_generation_prompt() {
    let r = ChatRequest::from_openai(&user_body()).unwrap();
    assert!(r.add_generation_prompt);
    assert_eq!(r.content_shaping, ContentShaping::Auto);
    let tok = common::tokenizer("meta-llama/Meta-Llama-3-8B-Instruct");
    let text = tok.apply_chat_template(&r).unwrap();
    assert!(
        text.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"),
        "{text:?}"
    );

    // Off when continuing the final message, or when the body says so.
    let mut body = user_body();
    body["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": "Sure,"}));
    body["continue_final_message"] = json!(true);
    let r = ChatRequest::from_openai(&body).unwrap();
    assert!(!r.add_generation_prompt && r.continue_final_message.is_on());
    assert!(tok.apply_chat_template(&r).unwrap().ends_with("Sure,"));
    body["add_generation_prompt"] = json!(true);
    assert!(ChatRequest::from_openai(&body).is_err());
    let mut body = user_body();
    body["add_generation_prompt"] = json!(false);
    assert!(
        !ChatRequest::from_openai(&body)
            .unwrap()
            .add_generation_prompt
    );
}

#[test]
fn body_fields_reach_the_request() {
    let body = json!({
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "documents": [{"title": "t", "text": "x"}],
        "chat_template_kwargs": {"enable_thinking": false, "add_generation_prompt": false},
        "reasoning_effort": "low",
    });
    let r = ChatRequest::from_openai(&body).unwrap();
    assert_eq!(r.tools.as_ref().unwrap().len(), 1);
    assert_eq!(r.documents.as_ref().unwrap().len(), 1);
    assert!(
        !r.add_generation_prompt,
        "kwargs' add_generation_prompt is lifted"
    );
    assert_eq!(r.chat_template_kwargs["enable_thinking"], json!(false));
    assert_eq!(r.chat_template_kwargs["reasoning_effort"], json!("low"));
    assert!(!r.chat_template_kwargs.contains_key("add_generation_prompt"));

    // vLLM's tool_choice checks.
    let mut bad = body.clone();
    bad.as_object_mut().unwrap().remove("tools");
    assert!(
        ChatRequest::from_openai(&bad).is_err(),
        "tool_choice without tools"
    );
    let mut bad = body.clone();
    bad["tool_choice"] = json!({"type": "function", "function": {"name": "g"}});
    assert!(
        ChatRequest::from_openai(&bad).is_err(),
        "unknown named tool"
    );
    let mut none = body.clone();
    none.as_object_mut().unwrap().remove("tools");
    none["tool_choice"] = json!("none");
    assert!(ChatRequest::from_openai(&none).is_ok());
    assert!(ChatRequest::from_openai(&json!([1])).is_err());
    assert!(ChatRequest::from_openai(&json!({"model": "m"})).is_err());
}

/// The golden render of `body` on `model`, and the body.
fn render_case(model: &str, body: &str) -> (String, Json, ContentFormat) {
    let g = golden();
    let case = g["renders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == model && r["body"] == body)
        .unwrap()
        .clone();
    let format = match case["content_format"].as_str().unwrap() {
        "openai" => ContentFormat::OpenAi,
        _ => ContentFormat::String,
    };
    (
        case["text"].as_str().unwrap().to_owned(),
        g["bodies"][body].clone(),
        format,
    )
}

#[test]
fn assistant_tool_calls_with_null_content_render_as_vllm() {
    for model in ["Qwen/Qwen3-8B", "deepseek-ai/DeepSeek-V3"] {
        let (expected, body, _) = render_case(model, "tool_turn");
        let tok = common::tokenizer(model);
        // As given (transformers), the null content does not render on these templates.
        let as_given: ChatRequest = serde_json::from_value(body.clone()).unwrap();
        assert!(
            tok.apply_chat_template(&as_given).is_err(),
            "{model}: renders as given"
        );
        let request = ChatRequest::from_openai(&body).unwrap();
        assert_eq!(
            tok.apply_chat_template(&request).unwrap(),
            expected,
            "{model}"
        );
        let enc = tok
            .encode_chat(
                &request,
                &EncodeChatOptions::default()
                    .with_special_tokens(router_tokenizer::ChatSpecialTokens::Parse),
            )
            .unwrap();
        assert_eq!(enc.ids, tok.encode(&expected, false).unwrap().into_ids());
    }
}

#[test]
fn content_parts_are_shaped_for_the_template() {
    for model in [
        "meta-llama/Llama-3.2-1B-Instruct",
        "google/gemma-3-4b-it",
        "Qwen/Qwen3-8B",
    ] {
        let (expected, body, format) = render_case(model, "parts");
        let tok = common::tokenizer(model);
        let request = ChatRequest::from_openai(&body).unwrap();
        assert_eq!(
            tok.chat_template()
                .unwrap()
                .content_format_for(&request)
                .unwrap(),
            format,
            "{model}: vLLM's detected format"
        );
        let text = tok.apply_chat_template(&request).unwrap();
        assert_eq!(text, expected, "{model}");
        assert!(
            !text.contains("'type'"),
            "{model}: no Python repr of the parts"
        );
    }
    // Gemma-3 knows `{"type": "image"}`: the OpenAI image_url part becomes its image token.
    let (expected, _, _) = render_case("google/gemma-3-4b-it", "parts");
    assert!(expected.contains("<start_of_image>"));
}

#[test]
fn tool_results_as_text_parts_become_a_string() {
    let tok = common::tokenizer("google/gemma-3-4b-it");
    let body = json!({"messages": [
        {"role": "user", "content": "x"},
        {"role": "tool", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]});
    let t = router_tokenizer::chat::ChatTemplate::from_text(
        "{% for m in messages %}{% if m.content is string %}S:{{ m.content }}{% else %}{% for p in m.content %}{{ p.type }}{% endfor %}{% endif %};{% endfor %}",
        &router_tokenizer::chat::TemplateSpecialTokens::new(),
    )
    .unwrap();
    let r = ChatRequest::from_openai(&body).unwrap();
    assert_eq!(t.render(&r).unwrap(), "text;S:a\nb;");
    drop(tok);
}

#[test]
fn shaping_leaves_plain_conversations_alone() {
    // Already-shaped messages (strings, no nulls) render the same with and without shaping
    // on every shared chat template that takes strings.
    let messages = vec![
        Message::new("system", "You are terse."),
        Message::new("user", "Hi"),
        Message::new("assistant", "Hello."),
        Message::new("user", "Bye"),
    ];
    for model in [
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "Qwen/Qwen3-8B",
        "deepseek-ai/DeepSeek-V3",
        "mistralai/Mistral-Nemo-Instruct-2407",
        "google/gemma-3-4b-it",
    ] {
        let tok = common::tokenizer(model);
        let mut plain = ChatRequest::new(messages.clone());
        plain.add_generation_prompt = true;
        plain.fixed_now =
            Some(router_tokenizer::chat::FixedNow::new(2024, 7, 26, 0, 0, 0).unwrap());
        let mut shaped = plain.clone();
        shaped.content_shaping = ContentShaping::Auto;
        assert_eq!(
            tok.apply_chat_template(&plain).unwrap(),
            tok.apply_chat_template(&shaped).unwrap(),
            "{model}"
        );
    }
}

// ---- item 3: counting ----

#[test]
fn count_chat_on_openai_model_names_follows_the_cookbook() {
    let g = golden();
    for model in ["gpt-4o", "gpt-4"] {
        let tok = common::tokenizer(model);
        let no_template = ChatRequest::new(vec![Message::new("user", "Hello!")]);
        assert!(
            tok.encode_chat(&no_template, &EncodeChatOptions::default())
                .is_err(),
            "{model} has no template"
        );
        for case in g["counts"].as_array().unwrap() {
            if case["model"] != model {
                continue;
            }
            let i = case["request"].as_u64().unwrap() as usize;
            let mut body = g["count_requests"][i].clone();
            body["model"] = json!(model);
            let request = ChatRequest::from_openai(&body).unwrap();
            assert_eq!(
                tok.count_chat(&request).unwrap(),
                case["tokens"].as_u64().unwrap() as usize,
                "{model} request {i}"
            );
        }
    }
}

#[test]
fn count_chat_with_a_template_is_the_prompt_length() {
    let tok = common::tokenizer("Qwen/Qwen3-8B");
    let (_, body, _) = render_case("Qwen/Qwen3-8B", "tool_turn");
    let request = ChatRequest::from_openai(&body).unwrap();
    let enc = tok
        .encode_chat(&request, &EncodeChatOptions::default())
        .unwrap();
    assert_eq!(tok.count_chat(&request).unwrap(), enc.prompt_tokens);
}

// ---- item 4: vLLM's /tokenize and /detokenize (tests/entrypoints/openai/test_tokenization.py) ----

const MODEL: &str = "meta-llama/Llama-3.2-1B-Instruct";

fn tokenize(body: Json) -> TokenizeResponse {
    let request: TokenizeRequest = serde_json::from_value(body).unwrap();
    common::tokenizer(MODEL).tokenize(&request).unwrap()
}

#[test]
fn tokenize_completions() {
    let tok = common::tokenizer(MODEL);
    let prompt = "vllm1 This is a test prompt.";
    for add_special in [false, true] {
        let tokens = tok.encode(prompt, add_special).unwrap().into_ids();
        let r =
            tokenize(json!({"add_special_tokens": add_special, "model": MODEL, "prompt": prompt}));
        assert_eq!(r.tokens, tokens);
        assert_eq!(r.count, tokens.len());
        assert_eq!(r.max_model_len, tok.context_length());
        assert!(r.max_model_len.is_some());
        assert_eq!(r.token_strs, None);
    }
    // The default adds special tokens.
    let r = tokenize(json!({"prompt": prompt}));
    assert_eq!(r.tokens, tok.encode(prompt, true).unwrap().into_ids());
}

#[test]
fn tokenize_chat_and_with_tools() {
    let tok = common::tokenizer(MODEL);
    let tools = json!([{"type": "function", "function": {"name": "get_weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}]);
    for with_tools in [false, true] {
        for add_generation in [false, true] {
            for add_special in [false, true] {
                let mut conversation = json!([
                    {"role": "user", "content": "Hi there!"},
                    {"role": "assistant", "content": "Nice to meet you!"},
                    {"role": "user", "content": "Can I ask a question? vllm1"}
                ]);
                for continue_final in [false, true] {
                    if add_generation && continue_final {
                        continue;
                    }
                    if continue_final {
                        conversation
                            .as_array_mut()
                            .unwrap()
                            .push(json!({"role": "assistant", "content": "Sure,"}));
                    }
                    let mut request =
                        ChatRequest::new(serde_json::from_value(conversation.clone()).unwrap());
                    request.add_generation_prompt = add_generation;
                    request.continue_final_message = if continue_final {
                        router_tokenizer::chat::ContinueFinalMessage::Content
                    } else {
                        router_tokenizer::chat::ContinueFinalMessage::Off
                    };
                    request.chat_template_kwargs = json!({"date_string": "26 Jul 2024"})
                        .as_object()
                        .unwrap()
                        .clone();
                    if with_tools {
                        request.tools = Some(tools.as_array().unwrap().clone());
                    }
                    let prompt = tok.apply_chat_template(&request).unwrap();
                    let tokens = tok.encode(&prompt, add_special).unwrap().into_ids();
                    let mut body = json!({
                        "add_generation_prompt": add_generation,
                        "continue_final_message": continue_final,
                        "add_special_tokens": add_special,
                        "messages": conversation,
                        "model": MODEL,
                        "chat_template_kwargs": {"date_string": "26 Jul 2024"},
                    });
                    if with_tools {
                        body["tools"] = tools.clone();
                    }
                    let r = tokenize(body);
                    assert_eq!(
                        r.tokens, tokens,
                        "gen {add_generation} special {add_special} continue {continue_final}"
                    );
                    assert_eq!(r.count, tokens.len());
                    assert_eq!(r.token_strs, None);
                }
            }
        }
    }
    // Chat defaults: the generation prompt on, no BOS added on top of the template's.
    let r = tokenize(json!({"messages": [{"role": "user", "content": "Hi"}],
        "chat_template_kwargs": {"date_string": "26 Jul 2024"}}));
    let text = tok.decode(&r.tokens, false).unwrap();
    assert!(
        text.starts_with("<|begin_of_text|><|start_header_id|>"),
        "{text:?}"
    );
    assert!(!text.starts_with("<|begin_of_text|><|begin_of_text|>"));
    assert!(text.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"));
    // Both flags on is refused, as vLLM's validator refuses it.
    let both: TokenizeRequest =
        serde_json::from_value(json!({"messages": [{"role": "user", "content": "Hi"}],
        "add_generation_prompt": true, "continue_final_message": true}))
        .unwrap();
    assert!(tok.tokenize(&both).is_err());
}

#[test]
fn tokenize_with_return_token_strs() {
    let tok = common::tokenizer(MODEL);
    let prompt = "This is a token_strs test prompt! vllm1";
    let r = tokenize(json!({"prompt": prompt, "model": MODEL, "return_token_strs": true}));
    let tokens = tok.encode(prompt, true).unwrap().into_ids();
    assert_eq!(r.tokens, tokens);
    let strs: Vec<String> = tokens
        .iter()
        .map(|&id| tok.id_to_token(id).unwrap())
        .collect();
    assert_eq!(r.token_strs.as_ref(), Some(&strs));
    assert!(
        strs.iter().any(|s| s.starts_with('Ġ')),
        "the vocabulary's own spelling"
    );
}

#[test]
fn detokenize() {
    let tok = common::tokenizer(MODEL);
    let prompt = "This is a test prompt. vllm1";
    let tokens = tok.encode(prompt, false).unwrap().into_ids();
    let request: DetokenizeRequest =
        serde_json::from_value(json!({"model": MODEL, "tokens": tokens})).unwrap();
    let r = tok.detokenize(&request).unwrap();
    assert_eq!(serde_json::to_value(&r).unwrap(), json!({"prompt": prompt}));
    let back: DetokenizeResponse = serde_json::from_value(json!({"prompt": prompt})).unwrap();
    assert_eq!(back, r);
    // Ids outside the vocabulary are an error, not a panic.
    let bad = DetokenizeRequest {
        model: None,
        tokens: vec![u32::MAX],
    };
    assert!(tok.detokenize(&bad).is_err());
}

#[test]
fn tokenize_shapes_and_defaults() {
    // The body picks the variant: `prompt` is a completion, `messages` a chat.
    let c: TokenizeRequest = serde_json::from_value(json!({"prompt": "x"})).unwrap();
    let TokenizeRequest::Completion(c) = c else {
        panic!("prompt body is a completion request")
    };
    assert!(c.add_special_tokens);
    assert_eq!(c.return_token_strs, None);
    let chat: TokenizeRequest =
        serde_json::from_value(json!({"messages": [{"role": "user", "content": "x"}]})).unwrap();
    let TokenizeRequest::Chat(chat) = chat else {
        panic!("messages body is a chat request")
    };
    assert!(chat.add_generation_prompt && !chat.add_special_tokens && !chat.continue_final_message);
    assert!(serde_json::from_value::<TokenizeRequest>(json!({"model": "m"})).is_err());
    // The response serializes every field, `token_strs` as null when not asked for.
    let r = common::tokenizer("gpt-4o")
        .tokenize(&TokenizeRequest::Completion(c))
        .unwrap();
    let v = serde_json::to_value(&r).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["count", "max_model_len", "token_strs", "tokens"]);
    assert_eq!(v["token_strs"], Json::Null);
    // A template sent with the request is refused, as vLLM refuses it by default.
    let t: TokenizeRequest = serde_json::from_value(
        json!({"messages": [{"role": "user", "content": "x"}], "chat_template": "{{ 1 }}"}),
    )
    .unwrap();
    assert!(common::tokenizer(MODEL).tokenize(&t).is_err());
}
