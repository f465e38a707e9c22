//! The `rtok` binary, end to end.

use crate::common;

use std::io::Write;
use std::process::{Command, Stdio};

fn rtok(args: &[&str], stdin: &str) -> (i32, String, String) {
    let shared = common::shared_dir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rtok"))
        .args(args)
        .env("HF_HOME", shared.join("hf-cache"))
        .env("HF_HUB_OFFLINE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // rtok may exit on a bad argument before it reads stdin: a broken pipe
    // here is not the failure under test.
    let _ = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn encode_decode_count_on_the_embedded_default() {
    let (code, out, _) = rtok(&["encode"], "Hello, world!");
    assert_eq!((code, out.as_str()), (0, "13225 11 2375 0\n"));
    let (_, out, _) = rtok(&["encode", "--json"], "Hello, world!");
    assert_eq!(
        out,
        "{\"ids\":[13225,11,2375,0],\"offsets\":[[0,5],[5,6],[6,12],[12,13]]}\n"
    );
    let (code, out, _) = rtok(&["decode"], "13225 11\n2375 0");
    assert_eq!((code, out.as_str()), (0, "Hello, world!"));
    let (_, out, _) = rtok(&["count"], "Hello, world!");
    assert_eq!(out, "4\n");
}

#[test]
fn hub_ids_match_the_reference() {
    // Qwen3 ids from Python tokenizers for the same text.
    let (code, out, err) = rtok(&["encode", "-t", "Qwen/Qwen3-8B"], "Hello, world!");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "9707 11 1879 0\n");
    let (_, out, _) = rtok(&["inspect", "-t", "Qwen/Qwen3-8B", "--json"], "");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format"], "HF tokenizer.json");
    assert_eq!(v["vocab_size"], 151669);
    assert_eq!(v["eos_token_ids"], serde_json::json!([151645]));
    assert_eq!(v["chat_template"], true);
}

#[test]
fn stream_prints_one_json_line_per_step() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let ids = dir.join("stream-ids.txt");
    // "Hello, world! STOP more" in o200k_base.
    let (_, encoded, _) = rtok(&["encode"], "Hello, world! STOP more");
    std::fs::write(&ids, &encoded).unwrap();
    let (code, out, err) = rtok(
        &[
            "stream",
            "--input",
            ids.to_str().unwrap(),
            "--stop",
            " STOP",
            "--json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text: String = lines.iter().map(|l| l["text"].as_str().unwrap()).collect();
    assert_eq!(text, "Hello, world!");
    assert!(
        lines
            .iter()
            .any(|l| l["kind"] == "stopped" || l["kind"] == "stopped_with_text")
    );
    assert_eq!(lines.last().unwrap()["id"], serde_json::Value::Null);
    // The stop and the stop reason (vLLM's `stop_reason`: the string).
    let stop = &lines.last().unwrap()["stop"];
    assert_eq!(stop["type"], "string");
    assert_eq!(stop["stop_reason"], " STOP");
    assert_eq!(stop["finish_reason"], "stop");
    assert_eq!(stop["index"], 0);
}

/// `rtok stream` follows the library's defaults: EOS stops (reported as
/// `eos`), ids outside the vocabulary are skipped unless
/// `--strict-unknown-ids`; `--token-text` adds the logprobs text.
#[test]
fn stream_eos_unknown_ids_and_token_text() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let ids = dir.join("stream-eos-ids.txt");
    // o200k: "Hi", an id past the vocabulary, 𝔘 (split over tokens), EOS, "x".
    let (_, encoded, _) = rtok(&["encode"], "Hi𝔘");
    std::fs::write(&ids, format!("{} 999999999 199999 87", encoded.trim())).unwrap();
    let ids_arg = ids.to_str().unwrap();
    let lines = |out: &str| -> Vec<serde_json::Value> {
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (code, out, err) = rtok(
        &["stream", "--input", ids_arg, "--token-text", "--json"],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let lines = lines(&out);
    let text: String = lines.iter().map(|l| l["text"].as_str().unwrap()).collect();
    assert_eq!(text, "Hi𝔘");
    let stop = &lines.last().unwrap()["stop"];
    assert_eq!(
        (stop["type"].as_str(), stop["id"].as_u64()),
        (Some("eos"), Some(199_999))
    );
    assert_eq!(stop["stop_reason"], serde_json::Value::Null);
    assert!(
        lines.iter().any(|l| l["token"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("bytes:\\x"))),
        "{out}"
    );
    let (code, _, err) = rtok(&["stream", "--input", ids_arg, "--strict-unknown-ids"], "");
    assert_ne!(code, 0);
    assert!(err.contains("unknown token id"), "{err}");
}

/// `--stop-token-sequence` and `--eos-token` reach `StopConfig`: a sequence
/// stops where the ids end with it (its text emitted), and an explicit EOS set
/// replaces the tokenizer's.
#[test]
fn stream_token_sequences_and_explicit_eos() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("stream-seq-ids.txt");
    let (_, encoded, _) = rtok(&["encode"], "Hello, world! STOP more");
    let ids: Vec<u32> = encoded
        .split_whitespace()
        .map(|t| t.parse().unwrap())
        .collect();
    assert!(ids.len() >= 5, "{encoded}");
    std::fs::write(&path, &encoded).unwrap();
    let path = path.to_str().unwrap();
    let (_, hello, _) = rtok(&["decode"], &format!("{} {}", ids[0], ids[1]));
    let lines = |out: &str| -> Vec<serde_json::Value> {
        out.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let text = |lines: &[serde_json::Value]| -> String {
        lines.iter().map(|l| l["text"].as_str().unwrap()).collect()
    };
    // Stop at the sequence ids[0..2], given with a comma.
    let seq = format!("{},{}", ids[0], ids[1]);
    let (code, out, err) = rtok(
        &["stream", "--input", path, "--stop-token-sequence", &seq],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let got = lines(&out);
    assert_eq!(text(&got), hello.trim_end_matches('\n'));
    let stop = &got.last().unwrap()["stop"];
    assert_eq!(
        (stop["type"].as_str(), stop["index"].as_u64()),
        (Some("token_sequence"), Some(0))
    );
    // ids[2] as the only EOS id: the stream ends before it, reported as EOS.
    let eos = ids[2].to_string();
    let (code, out, err) = rtok(&["stream", "--input", path, "--eos-token", &eos], "");
    assert_eq!(code, 0, "{err}");
    let got = lines(&out);
    assert_eq!(text(&got), hello.trim_end_matches('\n'));
    let stop = &got.last().unwrap()["stop"];
    assert_eq!(
        (stop["type"].as_str(), stop["id"].as_u64()),
        (Some("eos"), Some(u64::from(ids[2])))
    );
    // A malformed sequence is a one-line error naming the bad id.
    let (code, _, err) = rtok(
        &["stream", "--input", path, "--stop-token-sequence", "1,x"],
        "",
    );
    assert_ne!(code, 0);
    assert!(err.contains("\"x\""), "{err}");
}

#[test]
fn errors_are_one_line_and_nonzero() {
    let (code, out, err) = rtok(&["encode", "-t", "no-such-org/no-such-model"], "x");
    assert_ne!(code, 0);
    assert!(out.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("rtok: error:"), "{err}");
    let (code, _, err) = rtok(&["decode"], "12 notanid");
    assert_ne!(code, 0);
    assert!(err.contains("notanid"), "{err}");
    let (code, _, err) = rtok(&["decode"], "999999999");
    assert_ne!(code, 0);
    assert!(err.contains("unknown token id"), "{err}");
}

#[test]
fn chat_prints_the_rendered_prompt_exactly() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let messages = dir.join("chat-messages.json");
    std::fs::write(&messages, r#"[{"role": "user", "content": "Hi there"}]"#).unwrap();
    let (code, out, err) = rtok(
        &[
            "chat",
            "-t",
            "Qwen/Qwen3-8B",
            "--messages",
            messages.to_str().unwrap(),
            "--add-generation-prompt",
            "--kwargs",
            r#"{"enable_thinking": false}"#,
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    );
    // A tokenizer without a template is a clear error.
    let (code, _, err) = rtok(
        &[
            "chat",
            "-t",
            "Xenova/gpt-3.5-turbo",
            "--messages",
            messages.to_str().unwrap(),
        ],
        "",
    );
    assert_ne!(code, 0);
    assert!(err.contains("chat template"), "{err}");
}

#[test]
fn parallel_encode_and_bench() {
    let path = common::shared_dir().join("corpus/en-prose/botchan.txt");
    let file = path.to_str().unwrap();
    // The same ids whether the input is split or not.
    let (code, never, err) = rtok(&["encode", "-i", file, "--parallel", "never"], "");
    assert_eq!(code, 0, "{err}");
    let (code, always, err) = rtok(
        &[
            "encode",
            "-i",
            file,
            "--parallel",
            "always",
            "--threads",
            "2",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(never, always);
    // `bench --json` prints the documented keys; `--ceiling` adds two.
    let (code, out, err) = rtok(
        &[
            "bench",
            "-i",
            file,
            "--threads",
            "2",
            "--repeat",
            "1",
            "--json",
            "--ceiling",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["identical"], true);
    assert_eq!(
        v["tokens"].as_u64(),
        Some(never.split_whitespace().count() as u64)
    );
    for key in [
        "sequential_ms",
        "parallel_ms",
        "speedup",
        "ceiling_ms",
        "ceiling_speedup",
    ] {
        assert!(v[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {out}");
    }
    let (code, _, err) = rtok(&["bench", "-i", file, "--threads", "0"], "");
    assert_ne!(code, 0);
    assert!(err.contains("--threads"), "{err}");
}

#[test]
fn chat_reads_a_whole_openai_body() {
    // A whole body: its tools, tool_choice and kwargs are used, the generation prompt is on
    // (OpenAI's default), and the assistant's `content: null` renders (vLLM's shaping).
    let body = r#"{"model": "qwen", "temperature": 0,
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}],
        "tool_choice": "auto",
        "chat_template_kwargs": {"enable_thinking": false}}"#;
    let (code, out, err) = rtok(&["chat", "-t", "Qwen/Qwen3-8B", "--messages", "-"], body);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("<tools>") && out.contains("\"name\": \"get_weather\""),
        "{out}"
    );
    assert!(
        out.contains("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
        "{out}"
    );
    assert!(
        out.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        "{out}"
    );
    // A bad tool_choice is refused as vLLM refuses it.
    let bad = body.replace(
        "\"auto\"",
        "{\"type\": \"function\", \"function\": {\"name\": \"nope\"}}",
    );
    let (code, _, err) = rtok(&["chat", "-t", "Qwen/Qwen3-8B", "--messages", "-"], &bad);
    assert_ne!(code, 0);
    assert!(err.contains("tool_choice"), "{err}");
}

#[test]
fn tokenize_and_detokenize_print_vllm_bodies() {
    let (code, out, err) = rtok(
        &["tokenize", "-t", "meta-llama/Llama-3.2-1B-Instruct"],
        r#"{"prompt": "Hello world", "return_token_strs": true}"#,
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["tokens"], serde_json::json!([128000, 9906, 1917]));
    assert_eq!(v["count"], 3);
    assert_eq!(
        v["token_strs"],
        serde_json::json!(["<|begin_of_text|>", "Hello", "Ġworld"])
    );
    assert!(v["max_model_len"].as_u64().unwrap() > 0);

    let (code, out, err) = rtok(
        &["tokenize", "-t", "meta-llama/Llama-3.2-1B-Instruct"],
        r#"{"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"date_string": "26 Jul 2024"}}"#,
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["token_strs"], serde_json::Value::Null);
    let ids: Vec<String> = v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.to_string())
        .collect();
    let (code, out, err) = rtok(
        &["detokenize", "-t", "meta-llama/Llama-3.2-1B-Instruct"],
        &format!("{{\"tokens\": [{}]}}", ids.join(",")),
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let prompt = v["prompt"].as_str().unwrap();
    assert!(
        prompt.starts_with("<|begin_of_text|><|start_header_id|>system"),
        "{prompt}"
    );
    assert!(
        prompt.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"),
        "{prompt}"
    );

    // Bad bodies are one-line errors.
    let (code, _, err) = rtok(&["detokenize"], r#"{"tokens": "x"}"#);
    assert_ne!(code, 0);
    assert!(err.contains("/detokenize"), "{err}");
}

/// Issue 41 item 9: `decode --json` and `count --json` were refused, and
/// `encode`/`count` could not take the text as an argument.
#[test]
fn decode_and_count_print_json_and_text_comes_inline() {
    let (code, out, err) = rtok(&["decode", "--json"], "13225 11 2375 0");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "{\"text\":\"Hello, world!\"}\n");
    let (code, out, err) = rtok(&["count", "--json"], "Hello, world!");
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "{\"count\":4}\n");
    let (code, out, err) = rtok(&["encode", "--text", "Hello, world!"], "");
    assert_eq!((code, out.as_str()), (0, "13225 11 2375 0\n"), "{err}");
    let (code, out, err) = rtok(&["count", "--text", "Hello, world!", "--json"], "");
    assert_eq!((code, out.as_str()), (0, "{\"count\":4}\n"), "{err}");
    // A file and inline text together are ambiguous.
    let (code, _, _) = rtok(&["count", "--text", "x", "--input", "f.txt"], "");
    assert_ne!(code, 0);
    let (code, out, err) = rtok(
        &[
            "truncate",
            "--text",
            "Hello, world!",
            "--max-tokens",
            "2",
            "--json",
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "{\"text\":\"Hello,\",\"tokens\":2}\n");
}
