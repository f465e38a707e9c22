//! The module's API: template discovery and selection, special tokens, request handling.
//! Expected strings were produced with transformers 5.23.0 (see tests/golden/chat/README.md).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use serde_json::json;

use router_tokenizer::chat::{
    ChatRequest, ChatTemplate, ChatTemplateError, ContentFormat, ContinueFinalMessage,
    LazyChatTemplate, Message, TemplateOrigin, TemplateSource, TemplateSpecialTokens,
    load_chat_template,
};

/// A fresh scratch directory under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtok-chat-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn user(text: &str) -> ChatRequest {
    ChatRequest::new(vec![Message::new("user", text)])
}

#[test]
fn jinja_file_wins_over_config_and_json() {
    let dir = scratch("precedence");
    let config = json!({"chat_template": "config", "bos_token": "<s>"});
    write(&dir, "chat_template.json", r#"{"chat_template": "json"}"#);
    let t = load_chat_template(&dir, None, Some(&config)).unwrap();
    assert_eq!(t.render(&user("x")).unwrap(), "config");
    write(&dir, "chat_template.jinja", "jinja {{ bos_token }}");
    let t = load_chat_template(&dir, None, Some(&config)).unwrap();
    assert_eq!(t.render(&user("x")).unwrap(), "jinja <s>");
    // An explicit override replaces everything.
    write(&dir, "override.jinja", "override");
    let t = load_chat_template(&dir, Some(&dir.join("override.jinja")), Some(&config)).unwrap();
    assert_eq!(t.render(&user("x")).unwrap(), "override");
    let src = TemplateSource::discover(&dir, None, Some(&config))
        .unwrap()
        .unwrap();
    assert_eq!(src.origin(), &TemplateOrigin::JinjaFiles(dir.clone()));
}

#[test]
fn chat_template_json_is_the_last_resort() {
    let dir = scratch("json");
    write(
        &dir,
        "chat_template.json",
        r#"{"chat_template": "from json"}"#,
    );
    let t = load_chat_template(&dir, None, Some(&json!({}))).unwrap();
    assert_eq!(t.render(&user("x")).unwrap(), "from json");
}

#[test]
fn no_template_is_a_clean_error() {
    let dir = scratch("none");
    let err = load_chat_template(&dir, None, Some(&json!({"bos_token": "<s>"}))).unwrap_err();
    assert!(
        matches!(err, ChatTemplateError::NoTemplate { .. }),
        "{err:?}"
    );
    let err = load_chat_template(&dir, None, Some(&json!({"chat_template": null}))).unwrap_err();
    assert!(
        matches!(err, ChatTemplateError::NoTemplate { .. }),
        "{err:?}"
    );
    let lazy = LazyChatTemplate::new(dir, None, None);
    assert!(matches!(
        lazy.get(),
        Err(ChatTemplateError::NoTemplate { .. })
    ));
}

#[test]
fn named_templates_follow_transformers_selection() {
    let config = json!({"chat_template": [
        {"name": "default", "template": "D"},
        {"name": "tool_use", "template": "T"},
        {"name": "rag", "template": "R{{ documents | length }}"},
    ]});
    let t = load_chat_template(&scratch("named"), None, Some(&config)).unwrap();
    assert_eq!(
        t.names().collect::<Vec<_>>(),
        ["default", "tool_use", "rag"]
    );
    let mut r = user("x");
    assert_eq!(t.render(&r).unwrap(), "D");
    r.tools = Some(vec![]);
    assert_eq!(
        t.render(&r).unwrap(),
        "T",
        "tools given (even empty) pick tool_use"
    );
    r.chat_template_name = Some("rag".into());
    r.documents = Some(vec![json!({"title": "a", "text": "b"})]);
    assert_eq!(t.render(&r).unwrap(), "R1");
    r.chat_template_name = Some("nope".into());
    assert!(matches!(
        t.render(&r),
        Err(ChatTemplateError::NoTemplate { .. })
    ));

    let no_default = json!({"chat_template": [{"name": "a", "template": "A"}]});
    let t = load_chat_template(&scratch("named2"), None, Some(&no_default)).unwrap();
    assert!(matches!(
        t.render(&user("x")),
        Err(ChatTemplateError::NoTemplate { .. })
    ));
}

#[test]
fn additional_template_files_make_a_named_set() {
    let dir = scratch("extra");
    write(&dir, "chat_template.jinja", "main");
    write(&dir, "additional_chat_templates/rag.jinja", "rag");
    let t = load_chat_template(&dir, None, None).unwrap();
    assert_eq!(t.render(&user("x")).unwrap(), "main");
    let mut r = user("x");
    r.chat_template_name = Some("rag".into());
    assert_eq!(t.render(&r).unwrap(), "rag");
}

#[test]
fn a_broken_named_template_fails_only_when_used() {
    let config = json!({"chat_template": [
        {"name": "default", "template": "ok"},
        {"name": "rag", "template": "{% if %}"},
    ]});
    let t = load_chat_template(&scratch("broken"), None, Some(&config)).unwrap();
    assert_eq!(t.render(&user("x")).unwrap(), "ok");
    let mut r = user("x");
    r.chat_template_name = Some("rag".into());
    assert!(matches!(
        t.render(&r),
        Err(ChatTemplateError::Syntax { .. })
    ));
    assert!(matches!(
        ChatTemplate::from_text("{% for %}", &TemplateSpecialTokens::new()),
        Err(ChatTemplateError::Syntax { .. })
    ));
    assert!(matches!(
        ChatTemplate::from_text("{% do [].append(1) %}", &TemplateSpecialTokens::new()),
        Err(ChatTemplateError::Syntax { .. })
    ));
}

#[test]
fn special_tokens_from_strings_and_added_token_dicts() {
    let config = json!({
        "bos_token": {"__type": "AddedToken", "content": "<｜begin▁of▁sentence｜>", "lstrip": false},
        "eos_token": {"content": "</s>"},
        "unk_token": null,
        "pad_token": "<pad>",
        "additional_special_tokens": ["<x>"],
        "extra_special_tokens": {"image_token": "<img>"},
        "added_tokens_decoder": {},
    });
    let legacy = json!({"bos_token": "<legacy>", "cls_token": "<cls>"});
    let specials = TemplateSpecialTokens::from_config(Some(&config), Some(&legacy));
    assert_eq!(
        specials.iter().collect::<Vec<_>>(),
        [
            ("bos_token", "<｜begin▁of▁sentence｜>"),
            ("eos_token", "</s>"),
            ("pad_token", "<pad>"),
            ("image_token", "<img>"),
        ]
    );
    // Without `added_tokens_decoder`, the legacy special_tokens_map.json is merged over.
    let mut config = config;
    config
        .as_object_mut()
        .unwrap()
        .remove("added_tokens_decoder");
    let specials = TemplateSpecialTokens::from_config(Some(&config), Some(&legacy));
    assert_eq!(specials.get("bos_token"), Some("<legacy>"));
    assert_eq!(specials.get("cls_token"), Some("<cls>"));

    let t = ChatTemplate::from_text("{{ bos_token }}|{{ eos_token }}|{{ unk_token }}", &specials)
        .unwrap();
    assert_eq!(t.render(&user("x")).unwrap(), "<legacy>|</s>|");
    // kwargs win over special tokens, as in transformers.
    let mut r = user("x");
    r.chat_template_kwargs = json!({"eos_token": "E"}).as_object().unwrap().clone();
    assert_eq!(t.render(&r).unwrap(), "<legacy>|E|");
}

#[test]
fn messages_are_preprocessed_like_transformers() {
    // Expected output from transformers 5.23.0: None dropped, reasoning aliased as `thinking`
    // (first) and `reasoning_content` (in place or last).
    let messages: Vec<Message> = serde_json::from_value(json!([
        {"role": "user", "content": null, "name": "x"},
        {"role": "assistant", "content": "a", "reasoning_content": "r"},
        {"role": "assistant", "content": "b", "thinking": "t"},
        {"role": "assistant", "content": "c", "reasoning": "q", "extra": 1},
        {"role": "assistant", "thinking": "T", "content": "d", "reasoning_content": "R"}
    ]))
    .unwrap();
    let t =
        ChatTemplate::from_text("{{ messages | tojson }}", &TemplateSpecialTokens::new()).unwrap();
    assert_eq!(
        t.render(&ChatRequest::new(messages)).unwrap(),
        r#"[{"role": "user", "name": "x"}, {"thinking": "r", "role": "assistant", "content": "a", "reasoning_content": "r"}, {"thinking": "t", "role": "assistant", "content": "b", "reasoning_content": "t"}, {"thinking": "q", "role": "assistant", "content": "c", "reasoning": "q", "extra": 1, "reasoning_content": "q"}, {"thinking": "T", "role": "assistant", "content": "d", "reasoning_content": "R"}]"#
    );
}

#[test]
fn continue_final_message_like_transformers() {
    let tpl = "{% for m in messages %}[{{ m.role }}|{{ m.reasoning_content }}|{{ m.content }}]{% endfor %}";
    let t = ChatTemplate::from_text(tpl, &TemplateSpecialTokens::new()).unwrap();
    let mut r = ChatRequest::new(vec![Message::new("user", "q"), {
        let mut m = Message::new("assistant", "ans");
        m.reasoning_content = Some("thinking so far".into());
        m
    }]);
    r.continue_final_message = ContinueFinalMessage::Field("reasoning_content".into());
    assert_eq!(t.render(&r).unwrap(), "[user||q][assistant|thinking so far");

    // Trailing whitespace trimmed by the template: the cut is rstripped.
    let t = ChatTemplate::from_text(
        "{% for m in messages %}<{{ m.content | trim }}>{% endfor %}",
        &TemplateSpecialTokens::new(),
    )
    .unwrap();
    let mut r = ChatRequest::new(vec![
        Message::new("user", "q"),
        Message::new("assistant", "ans  "),
    ]);
    r.continue_final_message = ContinueFinalMessage::Content;
    assert_eq!(t.render(&r).unwrap(), "<q><ans");

    r.continue_final_message = ContinueFinalMessage::Field("thinking".into());
    assert!(matches!(
        t.render(&r),
        Err(ChatTemplateError::InvalidRequest { .. })
    ));
    r.continue_final_message = ContinueFinalMessage::Content;
    r.add_generation_prompt = true;
    assert!(matches!(
        t.render(&r),
        Err(ChatTemplateError::InvalidRequest { .. })
    ));
}

#[test]
fn invalid_requests_are_typed_errors() {
    let t = ChatTemplate::from_text("x", &TemplateSpecialTokens::new()).unwrap();
    assert!(matches!(
        t.render(&ChatRequest::new(vec![])),
        Err(ChatTemplateError::InvalidRequest { .. })
    ));
    let mut r = user("x");
    r.documents = Some(vec![json!("not a dict")]);
    assert!(matches!(
        t.render(&r),
        Err(ChatTemplateError::InvalidRequest { .. })
    ));
    let mut r = user("x");
    r.chat_template_kwargs = json!({"messages": []}).as_object().unwrap().clone();
    assert!(matches!(
        t.render(&r),
        Err(ChatTemplateError::InvalidRequest { .. })
    ));
}

#[test]
fn openai_request_json_deserializes() {
    let r: ChatRequest = serde_json::from_value(json!({
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "u"}}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}
        ],
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "add_generation_prompt": true,
        "chat_template_kwargs": {"enable_thinking": false},
        "model": "ignored"
    }))
    .unwrap();
    assert_eq!(r.messages.len(), 3);
    assert_eq!(
        r.messages[0].content.as_ref().unwrap().flatten_text("\n"),
        "hi"
    );
    let t = ChatTemplate::from_text(
        "{% for m in messages %}{{ m.role }}:{{ m.content is defined }}:{{ m.tool_calls[0].function.arguments if m.tool_calls }};{% endfor %}{{ enable_thinking }}",
        &TemplateSpecialTokens::new(),
    )
    .unwrap();
    assert_eq!(
        t.render(&r).unwrap(),
        "user:True:;assistant:False:{\"a\": 1};tool:True:;False"
    );
}

/// An OpenAI body read by the library: what `rtok chat --messages BODY` starts from (the
/// flags' overrides and their JSON errors are `rtok`'s, tested in `chat_cli`).
#[test]
fn openai_body_builds_a_request() {
    let r = ChatRequest::from_openai(&json!({
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "chat_template_name": "tool_use",
        "chat_template_kwargs": {"x": 1},
    }))
    .unwrap();
    assert_eq!(r.messages.len(), 1);
    assert_eq!(r.tools.as_ref().map(Vec::len), Some(1));
    assert_eq!(r.chat_template_name.as_deref(), Some("tool_use"));
    assert_eq!(r.chat_template_kwargs.get("x"), Some(&json!(1)));
    assert!(r.add_generation_prompt);
    let err = ChatRequest::from_openai(&json!([]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("must be an object"), "{err}");
    let err = ChatRequest::from_openai(&json!({"messages": [], "chat_template_kwargs": [1]}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("`chat_template_kwargs`"), "{err}");
}

#[test]
fn content_format_hint() {
    let sp = TemplateSpecialTokens::new();
    let parts = ChatTemplate::from_text(
        "{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}",
        &sp,
    )
    .unwrap();
    assert_eq!(parts.content_format(), ContentFormat::OpenAi);
    assert_eq!(
        parts.content_format_for(&user("x")).unwrap(),
        ContentFormat::OpenAi
    );
    let string =
        ChatTemplate::from_text("{% for m in messages %}{{ m.content }}{% endfor %}", &sp).unwrap();
    assert_eq!(string.content_format(), ContentFormat::String);
}

#[test]
fn chat_template_is_send_sync_and_cheap_to_share() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<ChatTemplate>();
    let t = ChatTemplate::from_text("{{ messages[0].content }}", &TemplateSpecialTokens::new())
        .unwrap();
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let t = t.clone();
            std::thread::spawn(move || t.render(&user(&format!("m{i}"))).unwrap())
        })
        .collect();
    let out: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(out, ["m0", "m1", "m2", "m3"]);
}
