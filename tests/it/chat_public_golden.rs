//! Golden parity with transformers on public chat templates.
//!
//! `tests/golden/chat/public/` holds over two hundred public chat templates (vLLM's examples,
//! llama.cpp's `models/templates`, SGLang's, minja, huggingface.js' test templates, unsloth's
//! collection, chujiezheng/chat_templates and the shared cache's model repos; each one's source
//! repository, path and commit is in `manifest.json`), the conversations of transformers',
//! vLLM's, llama.cpp's and huggingface.js' chat-template tests (`conversations.json`), and what
//! transformers 5.24 renders for every pair (`expected.json`, written by `make_public_golden.py`). Every pair
//! must render the same bytes, and fail where transformers raises.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::{Path, PathBuf};

use serde_json::{Value as Json, json};

use router_tokenizer::chat::{ChatRequest, ChatTemplate, FixedNow, TemplateSpecialTokens};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/chat/public")
}

fn read_json(name: &str) -> Json {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The request of one conversation case, as the JSON an OpenAI-compatible endpoint receives.
fn request(case: &Json, fixed_now: FixedNow) -> Result<ChatRequest, String> {
    let body = json!({
        "messages": case["messages"],
        "tools": case.get("tools").cloned().unwrap_or(Json::Null),
        "documents": case.get("documents").cloned().unwrap_or(Json::Null),
        "add_generation_prompt": case.get("add_generation_prompt").cloned().unwrap_or(Json::Bool(false)),
        "continue_final_message": case.get("continue_final_message").cloned().unwrap_or(Json::Bool(false)),
        "chat_template_kwargs": case.get("kwargs").cloned().unwrap_or_else(|| json!({})),
    });
    let mut request: ChatRequest = serde_json::from_value(body).map_err(|e| e.to_string())?;
    request.fixed_now = Some(fixed_now);
    Ok(request)
}

#[test]
fn public_templates_render_as_transformers() {
    let manifest = read_json("manifest.json");
    let conversations = read_json("conversations.json");
    let expected = read_json("expected.json");
    let fixed_now = FixedNow::parse(conversations["fixed_now"].as_str().unwrap()).unwrap();
    let templates = manifest["templates"].as_array().unwrap();
    let cases = conversations["cases"].as_array().unwrap();
    assert!(
        templates.len() >= 200,
        "the golden set has {} templates",
        templates.len()
    );

    let mut total = 0;
    let mut mismatches = Vec::new();
    for entry in templates {
        let name = entry["name"].as_str().unwrap();
        let text = std::fs::read_to_string(dir().join(entry["file"].as_str().unwrap())).unwrap();
        let mut specials = TemplateSpecialTokens::new();
        for key in ["bos_token", "eos_token"] {
            let value = entry.get(key).or_else(|| conversations.get(key)).unwrap();
            specials.set(key, value.as_str().unwrap());
        }
        let template = ChatTemplate::from_text(&text, &specials);
        for case in cases {
            let id = case["id"].as_str().unwrap();
            let want = &expected["results"][name][id];
            assert!(
                want.is_object(),
                "{name}/{id}: missing from expected.json; regenerate it"
            );
            total += 1;
            let got = template
                .as_ref()
                .map_err(ToString::to_string)
                .and_then(|t| {
                    request(case, fixed_now).and_then(|r| t.render(&r).map_err(|e| e.to_string()))
                });
            let ok = match (&got, want.get("text").and_then(Json::as_str)) {
                (Ok(text), Some(want)) => text == want,
                (Err(_), None) => true,
                _ => false,
            };
            if !ok {
                mismatches.push(format!(
                    "{name}/{id}: rust {} / transformers {}",
                    match &got {
                        Ok(t) => format!("renders {:?}", t.chars().take(300).collect::<String>()),
                        Err(e) => format!("fails: {}", e.chars().take(300).collect::<String>()),
                    },
                    match want.get("text").and_then(Json::as_str) {
                        Some(t) => format!("renders {:?}", t.chars().take(300).collect::<String>()),
                        None => format!("raises {}: {}", want["type"], want["error"]),
                    }
                ));
            }
        }
    }
    eprintln!(
        "{} templates, {total} cases, {} identical",
        templates.len(),
        total - mismatches.len()
    );
    assert!(
        mismatches.is_empty(),
        "{} of {total} cases differ from transformers:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
