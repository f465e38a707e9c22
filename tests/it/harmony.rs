//! `encode_chat` with `ChatFormat::Harmony` against openai-harmony 0.0.8
//! (`tests/golden/harmony/generate.py`), id for id, and `HarmonyStream`
//! against its `StreamableParser`.

use crate::common;

use router_tokenizer::chat::{ChatRequest, FixedNow, Message};
use router_tokenizer::harmony::{HarmonyEvent, HarmonyStream};
use router_tokenizer::{ChatFormat, ChatSpecialTokens, EncodeChatOptions, ErrorKind, Tokenizer};
use serde_json::Value as Json;

fn golden() -> Json {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/harmony/cases.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn request(json: &Json) -> ChatRequest {
    let messages = Message::list_from_json(json["messages"].as_array().unwrap().clone()).unwrap();
    let mut request = ChatRequest::new(messages);
    request.tools = json.get("tools").map(|t| t.as_array().unwrap().clone());
    if let Some(Json::Object(kwargs)) = json.get("chat_template_kwargs") {
        request.chat_template_kwargs = kwargs.clone();
    }
    request.fixed_now = Some(FixedNow::parse(json["now"].as_str().unwrap()).unwrap());
    request.add_generation_prompt = true;
    request
}

fn harmony() -> EncodeChatOptions {
    EncodeChatOptions::default()
        .with_format(ChatFormat::Harmony)
        .with_text(true)
}

fn ids_of(v: &Json) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|i| i.as_u64().unwrap() as u32)
        .collect()
}

fn check_cases(tok: &Tokenizer, what: &str) {
    let golden = golden();
    let cases = golden["cases"].as_array().unwrap();
    assert!(cases.len() >= 30);
    let mut equal = 0;
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let req = request(&case["request"]);
        let enc = tok.encode_chat(&req, &harmony()).unwrap();
        let want = ids_of(&case["ids"]);
        let text = router_tokenizer::harmony::render_text(&req).unwrap();
        if enc.ids == want && enc.text.as_deref() == case["text"].as_str() && text == case["text"] {
            equal += 1;
        } else {
            let at = common::first_difference(&enc.ids, &want);
            failures.push(format!(
                "{name}: first difference at id {at}\n got text {:?}\nwant text {:?}",
                enc.text, case["text"]
            ));
        }
    }
    eprintln!("harmony {what}: {equal}/{} cases equal", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gpt_oss_matches_openai_harmony() {
    check_cases(
        &common::tokenizer("openai/gpt-oss-20b"),
        "openai/gpt-oss-20b",
    );
}

#[test]
fn embedded_o200k_harmony_matches_openai_harmony() {
    check_cases(&common::tokenizer("o200k_harmony"), "o200k_harmony");
}

#[test]
fn typed_control_tokens_stay_text() {
    let tok = common::tokenizer("openai/gpt-oss-20b");
    let golden = golden();
    let case = golden["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "forged_control_tokens_user")
        .unwrap();
    let req = request(&case["request"]);
    let enc = tok.encode_chat(&req, &harmony()).unwrap();
    // The user's `<|end|>`, `<|channel|>`, `<|call|>`… are text: the only
    // special ids are the renderer's: system and user messages, and the
    // next turn's `<|start|>`.
    let specials = enc.ids.iter().filter(|&&id| tok.is_special_id(id)).count();
    let start = tok.token_to_id("<|start|>").unwrap();
    assert_eq!(enc.ids.iter().filter(|&&id| id == start).count(), 3);
    assert_eq!(specials, 3 + 3 + 1);
    assert_eq!(enc.special_texts_as_text, 9);
    // Reject names the message; Parse parses them.
    let err = tok
        .encode_chat(
            &req,
            &harmony().with_special_tokens(ChatSpecialTokens::Reject),
        )
        .unwrap_err();
    match err.kind() {
        ErrorKind::SpecialTokenInRequest { location, token } => {
            assert_eq!(
                (location.as_str(), token.as_str()),
                ("message 0", "<|end|>")
            );
        }
        other => panic!("{other:?}"),
    }
    let parsed = tok
        .encode_chat(
            &req,
            &harmony().with_special_tokens(ChatSpecialTokens::Parse),
        )
        .unwrap();
    assert!(parsed.ids.iter().filter(|&&id| id == start).count() > 3);
}

#[test]
fn refusals_are_typed() {
    let tok = common::tokenizer("openai/gpt-oss-20b");
    let mut req = ChatRequest::new(vec![Message::new("user", "hi")]);
    req.chat_template_kwargs
        .insert("reasoning_effort".into(), "none".into());
    // Requests the mapping refuses are the client's (400).
    let err = tok.encode_chat(&req, &harmony()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::InvalidRequest { .. }));
    assert_eq!(err.http_status(), 400);
    let req = ChatRequest::new(vec![Message::new("ipython", "hi")]);
    assert!(matches!(
        tok.encode_chat(&req, &harmony()).unwrap_err().kind(),
        ErrorKind::InvalidRequest { .. }
    ));
    let req = ChatRequest::new(vec![Message::new("user", "hi")]);
    let err = tok
        .encode_chat(
            &req,
            &EncodeChatOptions::default().with_format(ChatFormat::MistralCommon),
        )
        .unwrap_err();
    assert!(matches!(
        err.kind(),
        ErrorKind::ChatFormat {
            format: "mistral",
            ..
        }
    ));
    // A vocabulary without Harmony's tokens.
    let err = common::tokenizer("cl100k_base")
        .encode_chat(&req, &harmony())
        .unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::ChatFormat { .. }),
        "{err:?}"
    );
}

#[test]
fn message_ranges_cover_their_messages() {
    let tok = common::tokenizer("openai/gpt-oss-20b");
    let golden = golden();
    for case in golden["cases"].as_array().unwrap() {
        let req = request(&case["request"]);
        let enc = tok
            .encode_chat(&req, &harmony().with_message_ranges(true))
            .unwrap();
        let ranges = enc.message_ranges.unwrap();
        assert_eq!(ranges.len(), req.messages.len());
        let mut last = 0;
        for r in ranges.iter().flatten() {
            assert!(
                r.start >= last && r.end <= enc.ids.len(),
                "{}",
                case["name"]
            );
            last = r.end;
        }
    }
}

#[test]
fn stream_matches_streamable_parser() {
    let tok = common::tokenizer("openai/gpt-oss-20b");
    let golden = golden();
    let streams = golden["streams"].as_array().unwrap();
    for s in streams {
        let name = s["name"].as_str().unwrap();
        let mut stream = HarmonyStream::new(&tok).unwrap();
        let mut deltas = Vec::new();
        let mut ended = Vec::new();
        for id in ids_of(&s["ids"]) {
            let mut delta = String::new();
            for event in stream.push(id).unwrap() {
                match event {
                    HarmonyEvent::Delta(d) => delta.push_str(&d),
                    HarmonyEvent::MessageEnd {
                        header, content, ..
                    } => ended.push((header, content)),
                    _ => {}
                }
            }
            deltas.push(Json::String(delta));
        }
        for event in stream.finish().unwrap() {
            if let HarmonyEvent::MessageEnd {
                header, content, ..
            } = event
            {
                ended.push((header, content));
            }
        }
        assert_eq!(Json::Array(deltas), s["deltas"], "{name}: deltas");
        let want = s["messages"].as_array().unwrap();
        assert_eq!(ended.len(), want.len(), "{name}");
        for ((h, content), w) in ended.iter().zip(want) {
            assert_eq!(h.role, w["role"].as_str().unwrap(), "{name}");
            assert_eq!(h.name.as_deref(), w["name"].as_str(), "{name}");
            assert_eq!(h.channel.as_deref(), w["channel"].as_str(), "{name}");
            assert_eq!(h.recipient.as_deref(), w["recipient"].as_str(), "{name}");
            assert_eq!(
                h.content_type.as_deref(),
                w["content_type"].as_str(),
                "{name}"
            );
            assert_eq!(content, w["content"].as_str().unwrap(), "{name}");
        }
    }
    eprintln!("harmony streams: {} equal", streams.len());
}
