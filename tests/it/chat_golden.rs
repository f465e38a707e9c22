//! Golden parity with transformers' `apply_chat_template(..., tokenize=False)`.
//!
//! Renders every case of `tests/golden/chat/conversations.json` with every shared model's
//! template (loaded through the crate's loader) and compares byte for byte with
//! `tests/golden/chat/expected.json`, written by `make_chat_golden.py`. Where transformers
//! raised, rendering must fail too (and `raise_exception` must surface as `Raised` with the same
//! message).
//!
//! The models come from the shared Hugging Face cache: `$RTOK_SHARED_DIR/hf-cache` (default
//! `../shared` next to the crate). Without it the tests fail, saying how to get it.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use router_tokenizer::chat::{
    ChatRequest, ChatTemplate, ChatTemplateError, ContentFormat, ContinueFinalMessage, FixedNow,
    Message, TemplateSpecialTokens, load_chat_template,
};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/chat")
}

fn read_json(path: &Path) -> Json {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("RTOK_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let hub = dir.join("hf-cache/hub");
    assert!(
        hub.is_dir(),
        "the shared test data is missing: no Hugging Face cache at {}.\n\
         Set RTOK_SHARED_DIR to the project's shared directory (the one holding hf-cache/, \
         fixtures/, corpus/), or place it at ../shared next to the crate. The models it needs \
         are listed in tests/golden/chat/conversations.json; download them with \
         `HF_HOME=<shared>/hf-cache huggingface-cli download <model> tokenizer_config.json \
         chat_template.jinja special_tokens_map.json`.",
        hub.display()
    );
    dir
}

/// The snapshot directory of `model` ("org/name") in the shared cache; if expected.json
/// names the commit it was generated from, the cache must hold that one.
fn snapshot(shared: &Path, model: &str) -> PathBuf {
    let dir = snapshot_dir(shared, model);
    let expected = read_json(&golden_dir().join("expected.json"));
    if let Some(commit) = expected["snapshots"][model].as_str() {
        assert!(
            dir.ends_with(commit),
            "{model}: the shared cache holds {} but expected.json was generated from {commit}; \
             regenerate it with tests/golden/chat/make_chat_golden.py (see README.md)",
            dir.display()
        );
    }
    dir
}

fn snapshot_dir(shared: &Path, model: &str) -> PathBuf {
    let repo = shared
        .join("hf-cache/hub")
        .join(format!("models--{}", model.replace('/', "--")));
    let commit = std::fs::read_to_string(repo.join("refs/main"))
        .map(|s| s.trim().to_owned())
        .ok()
        .or_else(|| {
            std::fs::read_dir(repo.join("snapshots"))
                .ok()?
                .flatten()
                .next()
                .map(|e| e.file_name().to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| {
            panic!(
                "{model} is missing from the shared cache ({})",
                repo.display()
            )
        });
    let dir = repo.join("snapshots").join(commit);
    assert!(
        dir.is_dir(),
        "{model}: snapshot {} is missing",
        dir.display()
    );
    dir
}

fn load_model(shared: &Path, model: &str) -> Result<ChatTemplate, ChatTemplateError> {
    let dir = snapshot(shared, model);
    let config_path = dir.join("tokenizer_config.json");
    let config = config_path.is_file().then(|| read_json(&config_path));
    load_chat_template(&dir, None, config.as_ref())
}

fn request_for(case: &Json, fixed_now: FixedNow) -> ChatRequest {
    let messages: Vec<Message> = serde_json::from_value(case["messages"].clone())
        .unwrap_or_else(|e| panic!("case {}: bad messages: {e}", case["id"]));
    let list = |key: &str| case.get(key).and_then(|v| v.as_array().cloned());
    let mut request = ChatRequest::new(messages);
    request.tools = list("tools");
    request.documents = list("documents");
    request.add_generation_prompt = case["add_generation_prompt"].as_bool().unwrap_or(false);
    request.continue_final_message = serde_json::from_value(
        case.get("continue_final_message")
            .cloned()
            .unwrap_or(Json::Null),
    )
    .unwrap();
    request.chat_template_name = case["chat_template_name"].as_str().map(str::to_owned);
    request.chat_template_kwargs = case["kwargs"].as_object().cloned().unwrap_or_default();
    request.fixed_now = Some(fixed_now);
    request
}

/// About 60 bytes before byte `at` and what follows, for a mismatch report.
fn window(text: &str, at: usize) -> String {
    let start = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|i| *i + 60 >= at)
        .unwrap_or(0);
    text[start..].chars().take(120).collect()
}

/// Compares one render with its golden; returns a description of the mismatch.
fn check(got: &Result<String, ChatTemplateError>, want: &Json) -> Option<String> {
    match (got, want.get("text"), want.get("error")) {
        (Ok(text), Some(Json::String(expected)), _) if text == expected => None,
        (Ok(text), Some(Json::String(expected)), _) => {
            let at = text
                .char_indices()
                .zip(expected.chars())
                .find(|((_, a), b)| a != b)
                .map(|((i, _), _)| i)
                .unwrap_or(text.len().min(expected.len()));
            Some(format!(
                "text differs at byte {at}:\n      rust:   {:?}\n      python: {:?}",
                window(text, at),
                window(expected, at),
            ))
        }
        (Err(e), Some(_), _) => Some(format!("rust failed where python rendered: {e}")),
        (Ok(_), None, Some(err)) => Some(format!("rust rendered where python raised {err}")),
        (Err(e), None, Some(err)) => {
            let raised = want["type"].as_str() == Some("TemplateError");
            match e {
                ChatTemplateError::Raised { message }
                    if raised && Some(message.as_str()) == err.as_str() =>
                {
                    None
                }
                _ if raised => Some(format!("python raise_exception({err}), rust: {e:?}")),
                ChatTemplateError::Raised { .. } => {
                    Some(format!("rust raised {e:?} where python failed with {err}"))
                }
                _ => None,
            }
        }
        _ => Some(format!("malformed golden {want}")),
    }
}

#[test]
fn renders_identically_to_transformers() {
    let shared = shared_dir();
    let conversations = read_json(&golden_dir().join("conversations.json"));
    let expected = read_json(&golden_dir().join("expected.json"));
    let fixed_now = FixedNow::parse(conversations["fixed_now"].as_str().unwrap()).unwrap();
    let cases = conversations["cases"].as_array().unwrap();

    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for model in conversations["models"].as_array().unwrap() {
        let model = model.as_str().unwrap();
        let template = load_model(&shared, model)
            .unwrap_or_else(|e| panic!("{model}: template does not load: {e}"));
        let goldens = expected["results"][model]
            .as_object()
            .unwrap_or_else(|| panic!("expected.json has no results for {model}; regenerate it"));
        let (mut total, mut same) = (0, 0);
        for case in cases {
            let id = case["id"].as_str().unwrap();
            let Some(want) = goldens.get(id) else {
                let applies = case["models"].as_array();
                assert!(
                    applies.is_some_and(|m| !m.iter().any(|x| x == model)),
                    "expected.json lacks {model} / {id}; regenerate it"
                );
                continue;
            };
            total += 1;
            let got = template.render(&request_for(case, fixed_now));
            match check(&got, want) {
                None => same += 1,
                Some(why) => failures.push(format!("{model} / {id}: {why}")),
            }
        }
        summary.push(format!("{model}: {same} of {total} identical"));
    }
    println!("{}", summary.join("\n"));
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}\n\n{}",
        failures.len(),
        failures.join("\n"),
        summary.join("\n")
    );
}

#[test]
fn models_without_template_give_no_template() {
    let shared = shared_dir();
    let conversations = read_json(&golden_dir().join("conversations.json"));
    for model in conversations["models_without_template"].as_array().unwrap() {
        let model = model.as_str().unwrap();
        match load_model(&shared, model) {
            Err(ChatTemplateError::NoTemplate { .. }) => {}
            other => panic!("{model}: expected NoTemplate, got {other:?}"),
        }
    }
}

#[test]
fn snippets_match_jinja2() {
    let conversations = read_json(&golden_dir().join("conversations.json"));
    let expected = read_json(&golden_dir().join("expected.json"));
    let fixed_now = FixedNow::parse(conversations["fixed_now"].as_str().unwrap()).unwrap();
    let vars = conversations["snippet_vars"].as_object().unwrap().clone();
    let mut failures = Vec::new();
    let snippets = conversations["snippets"].as_array().unwrap();
    for snippet in snippets {
        let id = snippet["id"].as_str().unwrap();
        let source = snippet["template"].as_str().unwrap();
        let want = &expected["snippets"][id];
        let mut request = ChatRequest::new(vec![Message::new("user", "hi")]);
        request.chat_template_kwargs = vars.clone();
        request.fixed_now = Some(fixed_now);
        let got = ChatTemplate::from_text(source, &TemplateSpecialTokens::new())
            .and_then(|t| t.render(&request));
        if let Some(why) = check(&got, want) {
            failures.push(format!("{id} {source:?}: {why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} snippets differ from Jinja2:\n{}",
        failures.len(),
        snippets.len(),
        failures.join("\n")
    );
}

#[test]
fn content_format_of_shared_templates() {
    let shared = shared_dir();
    let conversations = read_json(&golden_dir().join("conversations.json"));
    for model in conversations["models"].as_array().unwrap() {
        let model = model.as_str().unwrap();
        let template = load_model(&shared, model).unwrap();
        let want = if model == "google/gemma-3-4b-it" {
            ContentFormat::OpenAi
        } else {
            ContentFormat::String
        };
        assert_eq!(template.content_format(), want, "{model}");
    }
}

#[test]
fn continue_final_message_deserializes_from_bool_or_field() {
    let r: ChatRequest = serde_json::from_str(
        r#"{"messages":[{"role":"user","content":"x"}],"continue_final_message":"reasoning_content"}"#,
    )
    .unwrap();
    assert_eq!(
        r.continue_final_message,
        ContinueFinalMessage::Field("reasoning_content".into())
    );
    let r: ChatRequest =
        serde_json::from_str(r#"{"messages":[],"continue_final_message":true}"#).unwrap();
    assert_eq!(r.continue_final_message, ContinueFinalMessage::Content);
}
