//! Model aliases through the API and `rtok` (issue #18).

use crate::common;

use router_tokenizer::{ErrorKind, LoadOptions, ModelAliases};
use std::process::Command;

fn options_with(pairs: &[(&str, &str)]) -> LoadOptions {
    let mut aliases = ModelAliases::new();
    for (name, source) in pairs {
        aliases.insert(*name, *source).unwrap();
    }
    common::offline_options().with_aliases(aliases)
}

#[test]
fn an_alias_loads_its_hub_source_and_shares_the_handle() {
    let options = options_with(&[("my-llama-ft", "meta-llama/Llama-3.2-1B-Instruct")]);
    let via_alias = options.load("my-llama-ft").unwrap();
    let direct = options.load("meta-llama/Llama-3.2-1B-Instruct").unwrap();
    assert!(via_alias.same_handle(&direct));
    assert_eq!(via_alias.source(), "meta-llama/Llama-3.2-1B-Instruct");
    assert_eq!(
        via_alias.encode("Hello", false).unwrap().ids(),
        direct.encode("Hello", false).unwrap().ids()
    );
}

#[test]
fn an_alias_overrides_the_openai_model_table() {
    // gpt-4o is o200k_base by default; the alias points it at cl100k_base.
    let default = LoadOptions::default().load("gpt-4o").unwrap();
    let aliased = options_with(&[("gpt-4o", "cl100k_base")])
        .load("gpt-4o")
        .unwrap();
    let text = "router tokenizer";
    assert_ne!(
        default.encode(text, false).unwrap().ids(),
        aliased.encode(text, false).unwrap().ids()
    );
    assert_eq!(
        aliased.encode(text, false).unwrap().ids(),
        LoadOptions::default()
            .load("cl100k_base")
            .unwrap()
            .encode(text, false)
            .unwrap()
            .ids()
    );
}

#[test]
fn aliases_with_revisions_paths_and_chains() {
    let shared = common::shared_dir();
    let rank_file = shared.join("fixtures/tiktoken/cl100k_base.tiktoken");
    let options = options_with(&[
        (
            "pinned",
            "Qwen/Qwen3-8B@c296ed0a908dbc97718d2b2ff8de659b2fedf052",
        ),
        ("ranks", rank_file.to_str().unwrap()),
        ("chain", "ranks"),
    ]);
    let pinned = options.load("pinned").unwrap();
    assert_eq!(pinned.vocab_size(), 151669);
    let chained = options.load("chain").unwrap();
    assert_eq!(
        chained.vocab_size(),
        options.load("ranks").unwrap().vocab_size()
    );
}

#[test]
fn cycles_and_dangling_aliases_are_clear_errors() {
    let cyclic = options_with(&[("a", "b"), ("b", "c"), ("c", "a")]);
    let err = cyclic.load("a").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Alias { .. }), "{err:?}");
    assert!(err.to_string().contains("a -> b -> c -> a"), "{err}");

    assert_eq!(err.http_status(), 500, "the alias table is the server's");
}

/// Issue 41 item 1: a source that fails behind an alias keeps its own kind
/// (it was `Alias` with "its source … does not load", the cause hidden in
/// `source()`); the alias is context, in `alias()` and the message.
#[test]
fn a_failure_behind_an_alias_keeps_its_kind() {
    let dangling = options_with(&[("ghost", "nobody/no-such-model")]);
    let err = dangling.load("ghost").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound { .. }), "{err:?}");
    assert_eq!(err.alias(), Some("ghost"));
    assert_eq!(err.http_status(), 404);
    let msg = err.to_string();
    assert!(
        msg.contains("ghost") && msg.contains("nobody/no-such-model"),
        "{msg}"
    );
    // Without an alias there is none to name.
    let direct = common::offline_options()
        .load("nobody/no-such-model")
        .unwrap_err();
    assert_eq!(direct.alias(), None);
    assert_eq!(direct.kind(), err.kind());
}

/// Issue 41 item 9: `gpt-4o -> gpt-4o` was rejected as a cycle.
#[test]
fn an_alias_naming_itself_is_its_source() {
    let options = options_with(&[("gpt-4o", "gpt-4o"), ("served", "gpt-4o")]);
    let tok = options.load("gpt-4o").unwrap();
    assert_eq!(tok.source(), "gpt-4o");
    assert_eq!(tok.encode("hello", false).unwrap().ids(), &[24912]);
    assert_eq!(options.load("served").unwrap().source(), "gpt-4o");
    // A loop through another name still is a cycle.
    let looped = options_with(&[("a", "b"), ("b", "a")]);
    assert!(matches!(
        looped.load("a").unwrap_err().kind(),
        ErrorKind::Alias { .. }
    ));
}

#[test]
fn alias_files_in_json_and_toml() {
    let dir = std::env::temp_dir().join(format!("rtok-aliases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("aliases.json");
    std::fs::write(
        &json,
        r#"{"support-bot": "my-gpt", "my-gpt": "o200k_base"}"#,
    )
    .unwrap();
    let toml = dir.join("aliases.toml");
    std::fs::write(&toml, "\"support-bot\" = \"cl100k_base\"\n").unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"x": 5}"#).unwrap();

    let mut aliases = ModelAliases::new();
    aliases.extend_from_file(&json).unwrap();
    assert_eq!(aliases.resolve("support-bot").unwrap(), "o200k_base");
    aliases.extend_from_file(&toml).unwrap();
    assert_eq!(aliases.resolve("support-bot").unwrap(), "cl100k_base");
    let err = ModelAliases::new().extend_from_file(&bad).unwrap_err();
    assert!(err.to_string().contains("bad.json"), "{err}");
    let err = ModelAliases::new()
        .extend_from_file(std::path::Path::new("/dev/zero"))
        .unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");

    // rtok: --aliases FILE and --alias NAME=SOURCE on a subcommand.
    let rtok = env!("CARGO_BIN_EXE_rtok");
    let out = Command::new(rtok)
        .args(["count", "--aliases"])
        .arg(&json)
        .args(["--tokenizer", "support-bot", "--input"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(rtok)
        .args([
            "inspect",
            "--alias",
            "x=y",
            "--alias",
            "y=x",
            "--tokenizer",
            "x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("x -> y -> x"));
    std::fs::remove_dir_all(&dir).ok();
}
