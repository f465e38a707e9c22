//! Loader tests: detection by content, hub resolution offline, the shared
//! registry, and hostile files.

use crate::common;

use common::*;
use router_tokenizer::{ErrorKind, Format, LoadOptions, SpecialTokenPolicy};
use std::path::{Path, PathBuf};

fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("loader")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every fixture file, by content: what it loads as, or the typed error it gives.
#[test]
fn detection_table_over_every_fixture() {
    let shared = shared_dir();
    let snap = |model: &str| -> PathBuf {
        let folder = shared
            .join("hf-cache/hub")
            .join(format!("models--{}", model.replace('/', "--")));
        let commit = std::fs::read_to_string(folder.join("refs/main")).unwrap();
        folder.join("snapshots").join(commit.trim())
    };
    enum Want {
        Loads(Format),
        Unsupported(&'static str),
    }
    use Want::*;
    let mut table: Vec<(PathBuf, Want)> = vec![
        (
            snap("Qwen/Qwen3-8B").join("tokenizer.json"),
            Loads(Format::HfJson),
        ),
        // Both kinds of `tokenizer.model`: tiktoken ranks and SentencePiece protobuf.
        (
            snap("meta-llama/Meta-Llama-3-8B-Instruct").join("original/tokenizer.model"),
            Loads(Format::Tiktoken),
        ),
        (
            snap("mistralai/Mistral-7B-v0.1").join("tokenizer.model"),
            Loads(Format::SentencePiece),
        ),
        (
            shared.join("fixtures/tiktoken/llama3-tokenizer.model"),
            Loads(Format::Tiktoken),
        ),
        // 200000 ranks: no known pre-tokenizer regex for it.
        (
            shared.join("fixtures/tiktoken/llama4-tokenizer.model"),
            Unsupported("unknown family"),
        ),
    ];
    for name in ["r50k_base", "p50k_base", "cl100k_base", "o200k_base"] {
        table.push((
            shared.join(format!("fixtures/tiktoken/{name}.tiktoken")),
            Loads(Format::Tiktoken),
        ));
    }
    for entry in std::fs::read_dir(shared.join("fixtures/sentencepiece")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "txt") {
            table.push((p, Unsupported("unknown content")));
        } else {
            table.push((p, Loads(Format::SentencePiece)));
        }
    }
    for entry in std::fs::read_dir(shared.join("fixtures/gguf")).unwrap() {
        let p = entry.unwrap().path();
        let want = if p.extension().is_some_and(|e| e == "gguf") {
            Loads(Format::Gguf)
        } else {
            Unsupported("unknown content")
        };
        table.push((p, want));
    }
    let mut failures = Vec::new();
    for (path, want) in table {
        let result = offline_options().load(path.to_str().unwrap());
        match (want, result) {
            (Loads(f), Ok(tok)) if tok.format() == f => {}
            (Unsupported(what), Err(e))
                if matches!(e.kind(), ErrorKind::UnsupportedFormat { detected, path: p }
                    if detected.contains(what) && p == &path) => {}
            (_, got) => failures.push(format!(
                "{}: got {:?}",
                path.display(),
                got.map(|t| t.format())
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn folders_and_hub_ids_resolve_offline() {
    for model in HUB_MODELS {
        let tok = tokenizer(model);
        assert_eq!(tok.format(), Format::HfJson, "{model}");
        assert!(tok.vocab_size() > 1000, "{model}");
    }
    // A pinned commit hash finds the snapshot directly.
    let commit =
        std::fs::read_to_string(shared_dir().join("hf-cache/hub/models--Qwen--Qwen3-8B/refs/main"))
            .unwrap();
    let tok = offline_options()
        .load(&format!("Qwen/Qwen3-8B@{}", commit.trim()))
        .unwrap();
    assert_eq!(tok.encode("hi", false).unwrap().ids(), &[6023]);
}

#[test]
fn missing_model_offline_is_not_found() {
    // Issue 41 item 1: this was `Hub { offline: true }`, a 503 for a model
    // the request named and the cache does not hold.
    let err = offline_options()
        .load("no-such-org/no-such-model")
        .unwrap_err();
    match err.kind() {
        ErrorKind::NotFound { what } => {
            assert!(what.contains("no-such-org/no-such-model"), "{what}");
            assert!(what.contains("HF_HUB_OFFLINE"), "{what}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(err.http_status(), 404);
    let err = offline_options()
        .load("Qwen/Qwen3-8B@no-such-branch")
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound { .. }), "{err}");
}

#[test]
fn sixteen_threads_share_one_load() {
    // A fresh folder source, so no other test has loaded it already.
    let dir = scratch_dir("registry");
    std::fs::copy(
        shared_dir().join("fixtures/tiktoken/cl100k_base.tiktoken"),
        dir.join("cl100k_base.tiktoken"),
    )
    .unwrap();
    let source = dir.to_str().unwrap().to_owned();
    let barrier = std::sync::Barrier::new(16);
    let handles: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..16)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    LoadOptions::default().load(&source).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for h in &handles {
        assert!(
            h.same_handle(&handles[0]),
            "every thread must get the one shared load"
        );
    }
    // Different options are a different tokenizer.
    let other = LoadOptions::default()
        .with_special_tokens(SpecialTokenPolicy::PlainText)
        .load(&source)
        .unwrap();
    assert!(!other.same_handle(&handles[0]));
}

#[test]
fn hostile_files_give_typed_errors() {
    let dir = scratch_dir("hostile");
    let shared = shared_dir();
    let qwen_json = std::fs::read(
        shared
            .join("hf-cache/hub/models--Xenova--gpt-3.5-turbo/snapshots")
            .read_dir()
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("tokenizer.json"),
    )
    .unwrap();
    let ranks = std::fs::read(shared.join("fixtures/tiktoken/r50k_base.tiktoken")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("garbage", b"\x00\x01\x02 not a tokenizer \xff\xfe".to_vec()),
        ("json-truncated", qwen_json[..qwen_json.len() / 3].to_vec()),
        ("json-empty-object", b"{}".to_vec()),
        (
            "json-wrong-types",
            br#"{"model": {"type": "BPE", "vocab": [1, 2]}}"#.to_vec(),
        ),
        ("json-not-utf8", b"{\"model\": \"\xff\xfe\"}".to_vec()),
        (
            "ranks-truncated-line",
            ranks[..ranks.len() / 2 + 3].to_vec(),
        ),
        ("ranks-bad-base64", b"IQ== 0\n!!!! 1\n".to_vec()),
        ("ranks-duplicate", b"IQ== 0\nIQ== 1\n".to_vec()),
        ("gguf-header", b"GGUF\x03\x00\x00\x00".to_vec()),
        ("spm-header", b"\x0a\x0e\x0a\x05<unk>\x15\x00\x00".to_vec()),
    ];
    for (name, bytes) in cases {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).unwrap();
        let err = LoadOptions::default()
            .load(path.to_str().unwrap())
            .expect_err(name);
        let names_file = matches!(err.kind(),
            ErrorKind::Parse { path: p, .. } | ErrorKind::UnsupportedFormat { path: p, .. } if p == &path);
        assert!(names_file, "{name}: error should name the file: {err}");
    }
}

#[test]
fn eos_ids_merge_generation_config() {
    // gpt-oss: generation_config [200002, 199999], config 200002, tokenizer eos <|return|> = 200002.
    let tok = tokenizer("openai/gpt-oss-20b");
    assert_eq!(tok.eos_token_ids(), &[200002, 199999]);
    assert_eq!(tokenizer("Qwen/Qwen3-8B").eos_token_ids(), &[151645]);
    // DeepSeek-V3 names its specials with AddedToken dicts.
    let ds = tokenizer("deepseek-ai/DeepSeek-V3");
    assert_eq!(
        ds.special_tokens().bos.as_ref().unwrap().content,
        "<｜begin▁of▁sentence｜>"
    );
    assert_eq!(ds.special_tokens().eos.as_ref().unwrap().id, 1);
}

#[test]
fn padding_and_truncation_are_off_unless_asked() {
    let long = "word ".repeat(300);
    let tok = tokenizer("sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(tok.encode("hello", true).unwrap().ids(), &[101, 7592, 102]);
    assert_eq!(tok.encode(&long, false).unwrap().len(), 300);
    let kept = offline_options()
        .with_keep_padding_and_truncation(true)
        .load("sentence-transformers/all-MiniLM-L6-v2")
        .unwrap();
    assert_eq!(kept.encode("hello", true).unwrap().len(), 128);
    assert_eq!(kept.encode(&long, true).unwrap().len(), 128);
}

#[test]
fn special_token_policy_applies_to_every_backend() {
    for (source, special) in [
        ("Qwen/Qwen3-8B", "<|im_start|>"),
        ("cl100k_base", "<|endoftext|>"),
    ] {
        let parsed = tokenizer(source);
        let plain = offline_options()
            .with_special_tokens(SpecialTokenPolicy::PlainText)
            .load(source)
            .unwrap();
        let id = parsed.token_to_id(special).unwrap();
        let text = format!("a{special}b");
        assert!(
            parsed.encode(&text, false).unwrap().ids().contains(&id),
            "{source}"
        );
        let as_text = plain.encode(&text, false).unwrap();
        assert!(!as_text.ids().contains(&id), "{source}");
        assert_eq!(plain.decode(as_text.ids(), false).unwrap(), text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_load_runs_on_the_callers_runtime() {
    let options = offline_options().with_bypass_registry(true);
    let (a, b) = tokio::join!(
        options.load_async("Xenova/gpt-3.5-turbo"),
        options.load_async("o200k_base")
    );
    assert_eq!(a.unwrap().encode("hello", false).unwrap().ids(), &[15339]);
    assert_eq!(b.unwrap().encode("hello", false).unwrap().ids(), &[24912]);
    let err = offline_options()
        .load_async("no-such-org/no-such-model")
        .await
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound { .. }));
    // The default-options entry point too.
    let tok = router_tokenizer::create_tokenizer_async("cl100k_base")
        .await
        .unwrap();
    assert_eq!(tok.encode("hello", false).unwrap().ids(), &[15339]);
}
