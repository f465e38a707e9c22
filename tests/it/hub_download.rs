//! The hub download path against a local hub-shaped server (tests/it/hub_server):
//! a cold cache fills in the hub's layout, a warm one makes no request, pinned
//! revisions, gated repos, offline after download, an interrupted download, and
//! concurrent loads of one id.

use crate::common;
use crate::hub_server;

use hub_server::{Behaviour, HubServer};
use router_tokenizer::{ErrorKind, HubTimeouts, LoadOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

const QWEN: &str = "Qwen/Qwen3-8B";
const QWEN_COMMIT: &str = "c296ed0a908dbc97718d2b2ff8de659b2fedf052";
const MINILM: &str = "sentence-transformers/all-MiniLM-L6-v2";

fn served_cache() -> PathBuf {
    common::shared_dir().join("hf-cache/hub")
}

/// A fresh, empty cache folder for one test.
fn empty_cache(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hub-download")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn options(server: &HubServer, cache: &Path) -> LoadOptions {
    LoadOptions::default()
        .with_endpoint(server.endpoint())
        .with_cache_dir(cache.to_path_buf())
        .with_offline(false)
        .with_bypass_registry(true)
}

fn body_fetches(server: &HubServer, file: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.is_body_fetch() && r.path.ends_with(file))
        .count()
}

/// The reference ids: the same model loaded from the shared cache.
fn reference_ids(model: &str, text: &str) -> Vec<u32> {
    common::tokenizer(model)
        .encode(text, false)
        .unwrap()
        .ids()
        .to_vec()
}

const TEXT: &str = "Downloads fill the cache once; 下载只发生一次.";

#[test]
fn a_cold_cache_fills_in_the_hub_layout_and_a_warm_one_makes_no_request() {
    let server = HubServer::start(&served_cache(), Behaviour::default());
    let cache = empty_cache("cold");
    let tok = options(&server, &cache).load(QWEN).unwrap();
    assert_eq!(
        tok.encode(TEXT, false).unwrap().ids(),
        reference_ids(QWEN, TEXT)
    );

    // The layout huggingface_hub writes: refs/main holds the commit,
    // snapshots/<commit>/<file> points into blobs/<etag>.
    let repo = cache.join("models--Qwen--Qwen3-8B");
    let commit = std::fs::read_to_string(repo.join("refs/main")).unwrap();
    assert_eq!(commit.trim(), QWEN_COMMIT);
    let original = std::fs::read(
        served_cache()
            .join("models--Qwen--Qwen3-8B/snapshots")
            .join(QWEN_COMMIT)
            .join("tokenizer.json"),
    )
    .unwrap();
    let blob = repo.join("blobs").join(common::sha256(&original));
    assert_eq!(
        std::fs::read(&blob).unwrap(),
        original,
        "blob named by its etag"
    );
    let pointer = repo
        .join("snapshots")
        .join(QWEN_COMMIT)
        .join("tokenizer.json");
    assert_eq!(std::fs::read(&pointer).unwrap(), original);
    assert!(
        std::fs::symlink_metadata(&pointer)
            .unwrap()
            .file_type()
            .is_symlink(),
        "snapshot files are links into blobs/"
    );
    // The companion config came along (it carries the chat template).
    assert!(
        repo.join("snapshots")
            .join(QWEN_COMMIT)
            .join("tokenizer_config.json")
            .is_file()
    );

    // A second load is served by the cache alone.
    let before = server.requests().len();
    let again = options(&server, &cache).load(QWEN).unwrap();
    assert_eq!(
        server.requests().len(),
        before,
        "a warm cache makes no request"
    );
    assert_eq!(
        again.encode(TEXT, false).unwrap().ids(),
        reference_ids(QWEN, TEXT)
    );

    // Offline after download: the cache is enough.
    let offline = options(&server, &cache)
        .with_offline(true)
        .load(QWEN)
        .unwrap();
    assert_eq!(offline.vocab_size(), tok.vocab_size());
    assert_eq!(server.requests().len(), before);
}

#[test]
fn redirects_to_a_content_address_are_followed() {
    let server = HubServer::start(
        &served_cache(),
        Behaviour {
            redirect: true,
            ..Behaviour::default()
        },
    );
    let cache = empty_cache("redirect");
    let tok = options(&server, &cache).load(MINILM).unwrap();
    assert_eq!(
        tok.encode(TEXT, false).unwrap().ids(),
        reference_ids(MINILM, TEXT)
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.path.starts_with("/cdn/"))
    );
}

#[test]
fn a_pinned_revision_is_fetched_by_its_commit() {
    let server = HubServer::start(&served_cache(), Behaviour::default());
    let cache = empty_cache("pinned");
    let tok = options(&server, &cache)
        .load(&format!("{QWEN}@{QWEN_COMMIT}"))
        .unwrap();
    assert_eq!(
        tok.encode(TEXT, false).unwrap().ids(),
        reference_ids(QWEN, TEXT)
    );
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.path.contains("/resolve/main/")),
        "a pinned load never asks for main"
    );
    // An unknown revision is not found (404), not a panic or a hang.
    let err = options(&server, &cache)
        .load(&format!("{QWEN}@nope"))
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound { .. }), "{err:?}");
}

#[test]
fn a_gated_repo_needs_the_token_and_the_token_is_never_printed() {
    let token = "hf_SECRET_test_token_123";
    let server = HubServer::start(
        &served_cache(),
        Behaviour {
            gated: [MINILM.to_owned()].into_iter().collect(),
            token: token.to_owned(),
            ..Behaviour::default()
        },
    );
    let cache = empty_cache("gated");
    let err = options(&server, &cache).load(MINILM).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Hub { .. }), "{err:?}");
    assert!(err.to_string().contains("401"), "{err}");

    let wrong = options(&server, &cache).with_token("hf_wrong");
    let err = wrong.load(MINILM).unwrap_err();
    assert!(!format!("{err} {err:?}").contains("hf_wrong"));

    let with_token = options(&server, &cache).with_token(token);
    let tok = with_token.load(MINILM).unwrap();
    assert_eq!(
        tok.encode(TEXT, false).unwrap().ids(),
        reference_ids(MINILM, TEXT)
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.authorization.as_deref() == Some(&format!("Bearer {token}")))
    );
    assert!(
        !format!("{with_token:?}").contains(token),
        "Debug redacts the token"
    );
}

#[test]
fn a_missing_repo_or_file_is_not_found() {
    let server = HubServer::start(&served_cache(), Behaviour::default());
    let cache = empty_cache("missing");
    let err = options(&server, &cache).load("nobody/nothing").unwrap_err();
    match err.kind() {
        ErrorKind::NotFound { what } => assert!(what.contains("nobody/nothing"), "{what}"),
        other => panic!("expected not found, got {other:?}"),
    }
    assert_eq!(err.http_status(), 404);
}

#[test]
fn an_interrupted_download_leaves_no_corrupt_file_and_a_retry_succeeds() {
    let original = std::fs::read(
        served_cache()
            .join("models--Qwen--Qwen3-8B/snapshots")
            .join(QWEN_COMMIT)
            .join("tokenizer.json"),
    )
    .unwrap();
    let server = HubServer::start(
        &served_cache(),
        Behaviour {
            drop_body_after: Some(original.len() / 2),
            ..Behaviour::default()
        },
    );
    let cache = empty_cache("interrupted");
    let result = options(&server, &cache).load(QWEN);
    // Whatever the outcome, nothing in snapshots/ or blobs/ may be a truncated tokenizer.
    let repo = cache.join("models--Qwen--Qwen3-8B");
    for sub in ["snapshots", "blobs"] {
        for entry in walk(&repo.join(sub)) {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".part") || name.ends_with(".lock") || name.ends_with(".incomplete") {
                continue;
            }
            let bytes = std::fs::read(&entry).unwrap();
            if bytes.len() > 100_000 {
                assert_eq!(bytes, original, "{} is a truncated copy", entry.display());
            }
        }
    }
    assert!(result.is_err(), "a download cut in half must not load");

    server.set_behaviour(Behaviour::default());
    let tok = options(&server, &cache).load(QWEN).unwrap();
    assert_eq!(
        tok.encode(TEXT, false).unwrap().ids(),
        reference_ids(QWEN, TEXT)
    );
}

#[test]
fn concurrent_loads_of_one_id_download_once() {
    let server = HubServer::start(&served_cache(), Behaviour::default());
    let cache = empty_cache("concurrent");
    let opts = options(&server, &cache).with_bypass_registry(false);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let opts = opts.clone();
            std::thread::spawn(move || opts.load(MINILM).map(|t| t.vocab_size()))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap().unwrap(), 30522);
    }
    assert_eq!(
        body_fetches(&server, "/tokenizer.json"),
        1,
        "{:?}",
        server.requests()
    );
}

#[test]
fn rtok_shows_no_progress_bar_when_stderr_is_not_a_terminal() {
    let server = HubServer::start(&served_cache(), Behaviour::default());
    let cache = empty_cache("progress");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rtok"))
        .args(["count", "--tokenizer", MINILM])
        .env("HF_ENDPOINT", server.endpoint())
        .env("HF_HUB_CACHE", &cache)
        .env_remove("HF_HOME")
        .env_remove("HF_HUB_OFFLINE")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(body_fetches(&server, "/tokenizer.json") == 1);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_server_that_never_answers_fails_within_the_timeouts_and_is_retried() {
    // Every answer waits a minute; the client gives each attempt 300 ms.
    let server = HubServer::start(
        &served_cache(),
        Behaviour {
            delay: Some(Duration::from_secs(60)),
            ..Behaviour::default()
        },
    );
    let cache = empty_cache("stalled");
    let opts = options(&server, &cache).with_hub(
        HubTimeouts::new(
            Duration::from_millis(300),
            Duration::from_millis(300),
            Duration::from_millis(600),
            1,
        )
        .with_backoff(Duration::from_millis(10)),
    );
    let started = std::time::Instant::now();
    let err = opts.load(MINILM).unwrap_err();
    // Not a speed check: a missing timeout would hang here for minutes.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the load gave up on a stalled server: {:?}",
        started.elapsed()
    );
    assert!(matches!(err.kind(), ErrorKind::Hub { .. }), "{err}");
    assert!(err.to_string().contains(MINILM), "{err}");
    // One attempt and one retry of the first file.
    let tries = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/tekken.json"))
        .count();
    assert_eq!(tries, 2, "{:?}", server.requests());
    assert!(
        !cache
            .join("models--sentence-transformers--all-MiniLM-L6-v2/snapshots")
            .exists(),
        "no snapshot left behind"
    );
}

#[test]
fn rtok_draws_a_progress_bar_on_a_terminal() {
    // util-linux `script` runs rtok on a pseudo-terminal and copies what it
    // draws to our stdout.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: util-linux `script` is not installed");
        return;
    }
    let server = HubServer::start(&served_cache(), Behaviour::default());
    let cache = empty_cache("progress-tty");
    let command = format!(
        "{} count --tokenizer {MINILM} </dev/null",
        env!("CARGO_BIN_EXE_rtok")
    );
    let out = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("HF_ENDPOINT", server.endpoint())
        .env("HF_HUB_CACHE", &cache)
        .env_remove("HF_HOME")
        .env_remove("HF_HUB_OFFLINE")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(&format!("{MINILM}/tokenizer.json")) && shown.contains('['),
        "a progress bar names the file: {shown:?}"
    );
    assert_eq!(body_fetches(&server, "/tokenizer.json"), 1);
}
