//! A chat template given by hand for a bare SentencePiece `.model` (no
//! `tokenizer_config.json`) sees the model's own `bos_token`, `eos_token` and
//! `unk_token`, as transformers' slow tokenizers give them (goldens from
//! `LlamaTokenizer(vocab_file=...)` in `tests/golden/chat_bare_model/`,
//! written by the script beside them): through `LoadOptions::chat_template`,
//! `Tokenizer::with_chat_template`, the template-only load and `rtok chat
//! --template`. A config's tokens still win, and a bare GGUF file's own
//! tokens fill in the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use crate::common;

use common::*;
use router_tokenizer::chat::{ChatRequest, Message};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtok-bare-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn request(golden: &serde_json::Value) -> ChatRequest {
    let messages = golden["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| Message::new(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    ChatRequest::new(messages)
}

fn rtok(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rtok"))
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn model_path(name: &str) -> PathBuf {
    shared_dir().join("fixtures/sentencepiece").join(name)
}

#[test]
fn bare_sentencepiece_templates_render_as_transformers() {
    let golden = golden("chat_bare_model/expected.json");
    let request = request(&golden);
    let dir = scratch("golden");
    let messages = dir.join("messages.json");
    std::fs::write(&messages, serde_json::to_vec(&golden["messages"]).unwrap()).unwrap();
    let models = golden["models"].as_object().unwrap();
    assert_eq!(models.len(), 5);
    for (name, want) in models {
        let path = model_path(name);
        let source = path.to_str().unwrap();
        let tok = offline_options().load(source).unwrap();
        for (key, template) in golden["templates"].as_object().unwrap() {
            let template = template.as_str().unwrap();
            let want = want["rendered"][key].as_str().unwrap();
            let what = format!("{name} {key}");
            let file = dir.join(format!("{key}.jinja"));
            std::fs::write(&file, template).unwrap();
            let by_text = tok.with_chat_template(template).unwrap();
            assert_eq!(
                by_text.apply_chat_template(&request).unwrap(),
                want,
                "{what}"
            );
            let options = offline_options().with_chat_template(file.clone());
            let by_file = options.load(source).unwrap();
            assert_eq!(
                by_file.apply_chat_template(&request).unwrap(),
                want,
                "{what}"
            );
            let only = options.load_chat_template(source).unwrap();
            assert_eq!(only.render(&request).unwrap(), want, "{what} template only");
            let args = [
                "chat",
                "-t",
                source,
                "--template",
                file.to_str().unwrap(),
                "--messages",
                messages.to_str().unwrap(),
            ];
            assert_eq!(rtok(&args), want, "{what} rtok chat");
        }
        let specials = offline_options().load_special_tokens(source).unwrap();
        for role in ["bos", "eos", "unk"] {
            let key = format!("{role}_token");
            assert_eq!(
                specials.get(&key),
                want["special_tokens_map"][&key].as_str(),
                "{name} {key}"
            );
        }
        assert_eq!(specials.get("pad_token"), None, "{name}");
    }
    // `--encode` renders the same prompt and encodes it.
    let path = model_path("spm-test_model.model");
    let template = golden["templates"]["inst"].as_str().unwrap();
    let tok = offline_options()
        .load(path.to_str().unwrap())
        .unwrap()
        .with_chat_template(template)
        .unwrap();
    let prompt = tok.apply_chat_template(&request).unwrap();
    assert!(
        prompt.starts_with("<s>") && prompt.ends_with("</s>"),
        "{prompt}"
    );
    let ids: Vec<u32> = rtok(&[
        "chat",
        "-t",
        path.to_str().unwrap(),
        "--template",
        template,
        "--messages",
        messages.to_str().unwrap(),
        "--encode",
    ])
    .split_whitespace()
    .map(|s| s.parse().unwrap())
    .collect();
    let want = tok
        .encode_chat(&request, &router_tokenizer::EncodeChatOptions::default())
        .unwrap();
    assert_eq!(ids, want.ids);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A `tokenizer_config.json` beside the model names the tokens: its win.
#[test]
fn a_config_beside_the_model_still_names_the_tokens() {
    let dir = scratch("config");
    std::fs::copy(
        model_path("spm-test_model.model"),
        dir.join("tokenizer.model"),
    )
    .unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        r#"{"bos_token": "[B]", "eos_token": {"content": "[E]", "__type": "AddedToken"}}"#,
    )
    .unwrap();
    let template = "{{ bos_token }}|{{ eos_token }}";
    let request = ChatRequest::new(vec![Message::new("user", "hi")]);
    for source in [dir.clone(), dir.join("tokenizer.model")] {
        let source = source.to_str().unwrap();
        let tok = offline_options().load(source).unwrap();
        let text = tok
            .with_chat_template(template)
            .unwrap()
            .apply_chat_template(&request)
            .unwrap();
        assert_eq!(text, "[B]|[E]", "{source}");
        let specials = offline_options().load_special_tokens(source).unwrap();
        assert_eq!(specials.get("bos_token"), Some("[B]"), "{source}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A GGUF file without a chat template: a template given by hand sees its
/// own tokens too.
#[test]
fn a_bare_gguf_fills_in_its_own_tokens() {
    let path: &Path = &shared_dir().join("fixtures/gguf/ggml-vocab-llama-spm.gguf");
    let source = path.to_str().unwrap();
    let template = "{{ bos_token }}{% for m in messages %}[INST] {{ m['content'] }} [/INST]{% endfor %}{{ eos_token }}";
    let request = ChatRequest::new(vec![Message::new("user", "hi")]);
    let tok = offline_options().load(source).unwrap();
    let text = tok
        .with_chat_template(template)
        .unwrap()
        .apply_chat_template(&request)
        .unwrap();
    assert_eq!(text, "<s>[INST] hi [/INST]</s>");
    let dir = scratch("gguf");
    let file = dir.join("t.jinja");
    std::fs::write(&file, template).unwrap();
    let options = offline_options().with_chat_template(file);
    let only = options.load_chat_template(source).unwrap();
    assert_eq!(only.render(&request).unwrap(), text);
    std::fs::remove_dir_all(&dir).unwrap();
}
