//! Hostile inputs to the loader (issue 11): each must fail with a typed error
//! that names the file, quickly, with no panic, abort or huge allocation.
//! Files are small and generated; sizes come from sparse files and devices.
//! `hostile_files_under_a_memory_cap` re-runs the loads in a child process
//! whose address space is capped, so an allocation bomb fails the test
//! instead of the machine.

use crate::common;

use router_tokenizer::{ErrorKind, LoadOptions, ParallelOptions};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hostile")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn load(path: &Path) -> router_tokenizer::Result<router_tokenizer::Tokenizer> {
    LoadOptions::default()
        .with_bypass_registry(true)
        .load(path.to_str().unwrap())
}

/// A BPE `tokenizer.json` with `vocab` (JSON object text), merges and added tokens.
fn bpe_json(vocab: &str, merges: &str, added: &str) -> String {
    format!(
        r#"{{"version":"1.0","added_tokens":[{added}],"model":{{"type":"BPE","vocab":{vocab},"merges":[{merges}]}}}}"#
    )
}

fn added(id: u64, content: &str) -> String {
    format!(
        r#"{{"id":{id},"content":"{content}","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}}"#
    )
}

/// Every all-byte rank file line for bytes 0..=255, then `extra` lines.
fn rank_file(extra: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for b in 0..=255u8 {
        let _ = writeln!(out, "{} {b}", base64(&[b]));
    }
    out.push_str(extra);
    out
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= n {
                out.push(T[(v >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The hostile `tokenizer.json`s and rank files: (name, file name, bytes, what the error must say).
fn hostile_files() -> Vec<(&'static str, &'static str, Vec<u8>, &'static str)> {
    let long_token = "x".repeat(70_000);
    vec![
        (
            "token-over-65535-bytes",
            "tokenizer.json",
            bpe_json(&format!(r#"{{"a":0,"{long_token}":1}}"#), "", "").into_bytes(),
            "bytes long",
        ),
        (
            "added-id-u32-max",
            "tokenizer.json",
            bpe_json(r#"{"a":0}"#, "", &added(4_294_967_295, "<s>")).into_bytes(),
            "out of range",
        ),
        (
            "added-id-500m",
            "tokenizer.json",
            bpe_json(r#"{"a":0}"#, "", &added(500_000_000, "<s>")).into_bytes(),
            "out of range",
        ),
        (
            "vocab-id-2g",
            "tokenizer.json",
            bpe_json(r#"{"a":0,"b":2147483000}"#, "", "").into_bytes(),
            "out of range",
        ),
        (
            "merge-result-not-in-vocab",
            "tokenizer.json",
            bpe_json(r#"{"a":0,"b":1}"#, r#""a b""#, "").into_bytes(),
            "merged token",
        ),
        (
            "merge-shorter-than-prefix",
            "tokenizer.json",
            br###"{"version":"1.0","model":{"type":"BPE","continuing_subword_prefix":"##","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}"###.to_vec(),
            "continuing_subword_prefix",
        ),
        (
            // No engine compiles it: neither `tokenizers` 1.0's nor the
            // crate's (`fancy-regex`, invariant `crate-steps-equal-reference`).
            "split-regex-without-engine",
            "tokenizer.json",
            br#"{"version":"1.0","pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\p{Foo}+"},"behavior":"Isolated","invert":false},"model":{"type":"BPE","vocab":{"a":0,"b":1," ":2},"merges":[]}}"#.to_vec(),
            "Split",
        ),
        (
            "rank-2147483647",
            "x.tiktoken",
            rank_file(&format!("{} 2147483647\n", base64(b"ab"))).into_bytes(),
            "out of range",
        ),
        (
            "ranks-missing-a-byte",
            "x.tiktoken",
            rank_file("").replace(&format!("{} 97\n", base64(b"a")), "").into_bytes(),
            "single byte 0x61",
        ),
    ]
}

fn check_hostile(dir: &Path) {
    for (name, file, bytes, want) in hostile_files() {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        let path = folder.join(file);
        std::fs::write(&path, &bytes).unwrap();
        let start = Instant::now();
        let err = load(&path)
            .err()
            .unwrap_or_else(|| panic!("{name}: loaded"));
        let text = err.to_string();
        assert!(text.contains(want), "{name}: {text}");
        assert!(
            text.contains(file),
            "{name}: error should name {file}: {text}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{name}: took {:?}",
            start.elapsed()
        );
    }
    // `added_tokens_decoder` ids beside a Llama-3 rank file.
    let llama3 = common::shared_dir().join("fixtures/tiktoken/llama3-tokenizer.model");
    for (name, config, want) in [
        (
            "config-id-u32-max",
            r#"{"added_tokens_decoder":{"4294967295":{"content":"<|x|>","special":true}}}"#,
            "out of range",
        ),
        (
            "config-id-shared",
            r#"{"added_tokens_decoder":{"5":{"content":"<|x|>","special":true}}}"#,
            "two tokens share id 5",
        ),
    ] {
        let folder = dir.join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::copy(&llama3, folder.join("tokenizer.model")).unwrap();
        std::fs::write(folder.join("tokenizer_config.json"), config).unwrap();
        let err = load(&folder)
            .err()
            .unwrap_or_else(|| panic!("{name}: loaded"));
        let text = err.to_string();
        assert!(text.contains(want), "{name}: {text}");
        assert!(
            text.contains("tokenizer_config.json"),
            "{name}: error should name tokenizer_config.json: {text}"
        );
    }
}

#[test]
fn hostile_files_give_typed_errors_naming_the_file() {
    check_hostile(&scratch_dir("in-process"));
}

/// The same loads in a child with a 3 GiB address space: an allocation bomb
/// makes the child fail (and this test with it), never the machine.
#[test]
fn hostile_files_under_a_memory_cap() {
    if let Some(dir) = std::env::var_os("RTOK_HOSTILE_CHILD") {
        check_hostile(Path::new(&dir));
        return;
    }
    if !cfg!(target_os = "linux") {
        return;
    }
    let dir = scratch_dir("capped");
    let exe = std::env::current_exe().unwrap();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 3145728 && exec "$0" "$@""#)
        .arg(&exe)
        .args([
            "--exact",
            "hostile::hostile_files_under_a_memory_cap",
            "--test-threads=1",
        ])
        .env("RTOK_HOSTILE_CHILD", &dir)
        .status()
        .unwrap();
    assert!(status.success(), "the capped child failed: {status}");
}

#[test]
fn an_empty_bpe_vocabulary_never_panics() {
    // What Python `Tokenizer(BPE()).save()` writes: tokenizers 0.x loads it
    // and encodes every text to nothing; tokenizers 1.0.0-rc.3 panics building
    // it, so the crate builds a stand-in model (tests/it/empty_vocab.rs).
    let dir = scratch_dir("python-empty-bpe");
    let path = dir.join("tokenizer.json");
    let files = [
        r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],"normalizer":null,"pre_tokenizer":null,"post_processor":null,"decoder":null,"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":false,"vocab":{},"merges":[]}}"#.to_owned(),
        bpe_json("{}", "", ""),
        bpe_json("{}", "", &added(0, "<s>")),
    ];
    for json in files {
        std::fs::write(&path, &json).unwrap();
        let tok = load(&path).unwrap_or_else(|e| panic!("{json}: {e}"));
        assert!(
            tok.encode("abc \u{10FFFF}", false)
                .unwrap()
                .ids()
                .is_empty()
        );
        assert_eq!(tok.decode(&[], false).unwrap(), "");
    }
    let tok = load(&path).unwrap();
    assert_eq!(tok.encode("a<s>b", false).unwrap().ids(), [0]);
}

#[test]
fn devices_fifos_and_oversized_files_are_refused() {
    let refused = |path: &Path| {
        let start = Instant::now();
        let err = load(path).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Refused { .. }),
            "{}: {err}",
            path.display()
        );
        assert!(start.elapsed() < Duration::from_secs(5));
    };
    if Path::new("/dev/zero").exists() {
        refused(Path::new("/dev/zero"));
    }
    let dir = scratch_dir("special-files");
    // A FIFO nobody writes to: opening it would block forever.
    let fifo = dir.join("tokenizer.json");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        refused(&fifo);
        std::fs::remove_file(&fifo).unwrap();
    }
    // A sparse 600 MiB `tokenizer.json` (over the 512 MiB limit) and a sparse
    // 100 MiB rank file (over 64 MiB): refused from their size, unread.
    let big = dir.join("big.json");
    let mut f = std::fs::File::create(&big).unwrap();
    f.write_all(b"{\"model\":").unwrap();
    f.set_len(600 << 20).unwrap();
    refused(&big);
    let ranks = dir.join("big.tiktoken");
    let mut f = std::fs::File::create(&ranks).unwrap();
    f.write_all(b"IQ== 0\n").unwrap();
    f.set_len(100 << 20).unwrap();
    refused(&ranks);
    // A config file beside a tokenizer is capped too.
    let folder = dir.join("big-config");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("tokenizer.json"),
        bpe_json(r#"{"a":0}"#, "", ""),
    )
    .unwrap();
    let f = std::fs::File::create(folder.join("tokenizer_config.json")).unwrap();
    f.set_len(100 << 20).unwrap();
    let err = load(&folder).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::Refused { path, .. } if path.ends_with("tokenizer_config.json")),
        "{err}"
    );
}

#[test]
fn parallel_options_are_checked_when_set() {
    let options = LoadOptions::default().with_parallel(ParallelOptions {
        chunks: Some(usize::MAX),
        ..ParallelOptions::always_with_chunk_bytes(64)
    });
    let err = options.load("cl100k_base").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Config { .. }), "{err}");
    // Set on a loaded handle: the encode fails, never panics.
    let tok = LoadOptions::default().load("cl100k_base").unwrap();
    let bad = tok.with_parallel(ParallelOptions {
        chunks: Some(usize::MAX),
        mode: router_tokenizer::ParallelMode::Always,
        ..ParallelOptions::default()
    });
    let text = "hello world ".repeat(100);
    assert!(bad.encode(&text, false).is_err());
    // A tiny chunk size on a long text is capped at MAX_CHUNKS chunks.
    let tiny = tok.with_parallel(ParallelOptions {
        overlap_chars: 16,
        ..ParallelOptions::always_with_chunk_bytes(1)
    });
    let long = "hello world ".repeat(6_000);
    assert_eq!(
        tiny.encode(&long, false).unwrap().ids(),
        tok.with_parallel(ParallelOptions::never())
            .encode(&long, false)
            .unwrap()
            .ids()
    );
}

#[test]
fn debug_never_prints_the_token() {
    let options = LoadOptions::default().with_token("hf_SECRET_TOKEN_123");
    let shown = format!("{options:?}");
    assert!(!shown.contains("hf_SECRET_TOKEN_123"), "{shown}");
    assert!(shown.contains("redacted"), "{shown}");
}

#[test]
fn a_poisoned_ref_is_never_joined_as_a_path() {
    let cache = scratch_dir("poisoned-cache");
    let outside = scratch_dir("outside");
    std::fs::write(
        outside.join("tokenizer.json"),
        bpe_json(r#"{"a":0}"#, "", ""),
    )
    .unwrap();
    let folder = cache.join("models--org--model");
    std::fs::create_dir_all(folder.join("refs")).unwrap();
    std::fs::create_dir_all(folder.join("snapshots")).unwrap();
    for poison in [outside.display().to_string(), "../../../outside".to_owned()] {
        std::fs::write(folder.join("refs/main"), &poison).unwrap();
        let err = LoadOptions::default()
            .with_cache_dir(cache.clone())
            .with_offline(true)
            .with_bypass_registry(true)
            .load("org/model")
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Hub { .. }) && err.to_string().contains("commit hash"),
            "{poison}: {err}"
        );
    }
}

#[test]
fn errors_quote_file_values_briefly() {
    let dir = scratch_dir("quotes");
    let secret = format!("TOPSECRET_VALUE_{}", "s".repeat(200));
    let path = dir.join("tokenizer.json");
    std::fs::write(
        &path,
        format!(r#"{{"model":{{"type":"BPE","vocab":{{"a":"{secret}"}},"merges":[]}}}}"#),
    )
    .unwrap();
    let text = load(&path).unwrap_err().to_string();
    assert!(!text.contains(&secret), "{text}");
    assert!(text.len() < 400, "{text}");
}

#[test]
fn allowed_dirs_confine_local_paths() {
    let allowed = scratch_dir("allowed");
    let other = scratch_dir("not-allowed");
    for dir in [&allowed, &other] {
        std::fs::write(dir.join("tokenizer.json"), bpe_json(r#"{"a":0}"#, "", "")).unwrap();
    }
    let options = LoadOptions::default()
        .with_allowed_dirs(vec![allowed.clone()])
        .with_cache_dir(scratch_dir("allowed-cache"))
        .with_bypass_registry(true);
    options.load(allowed.to_str().unwrap()).unwrap();
    let err = options.load(other.to_str().unwrap()).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidSource { .. }),
        "{err}"
    );
    // A symlink inside the allowed folder pointing out of it is outside.
    #[cfg(unix)]
    {
        let link = allowed.join("link");
        std::os::unix::fs::symlink(&other, &link).unwrap();
        assert!(options.load(link.to_str().unwrap()).is_err());
    }
    // Encodings and hub ids are not paths.
    options.load("cl100k_base").unwrap();
    let none = options.clone().with_allowed_dirs(Vec::new());
    assert!(none.load(allowed.to_str().unwrap()).is_err());
}

/// A local server for the hub tests: `answer` is written to every connection
/// (`None`: accept and never answer). It stops by itself after `life`.
fn local_hub(
    answer: Option<&'static [u8]>,
    life: Duration,
) -> (String, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let end = Instant::now() + life;
        let mut held = Vec::new();
        while Instant::now() < end {
            match listener.accept() {
                Ok((mut stream, _)) => {
                    if let Some(answer) = answer {
                        let _ = stream.set_nonblocking(false);
                        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                        let mut buf = [0u8; 4096];
                        let _ = stream.read(&mut buf);
                        let _ = stream.write_all(answer);
                    }
                    held.push(stream);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        held.len()
    });
    (endpoint, handle)
}

fn hub_options(endpoint: String, retries: u32) -> LoadOptions {
    LoadOptions::default()
        .with_endpoint(endpoint)
        .with_offline(false)
        .with_cache_dir(scratch_dir(&format!(
            "hub-cache-{retries}-{}",
            std::process::id()
        )))
        .with_bypass_registry(true)
        .with_hub(
            router_tokenizer::HubTimeouts::new(
                Duration::from_millis(500),
                Duration::from_millis(300),
                Duration::from_secs(2),
                retries,
            )
            .with_backoff(Duration::from_millis(20)),
        )
}

#[test]
fn a_hub_that_never_answers_times_out() {
    let (endpoint, server) = local_hub(None, Duration::from_secs(4));
    let start = Instant::now();
    let err = hub_options(endpoint, 1).load("org/silent").unwrap_err();
    let took = start.elapsed();
    assert!(matches!(err.kind(), ErrorKind::Hub { .. }), "{err}");
    assert!(err.to_string().contains("2 attempt"), "{err}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // Two attempts reached the server; it stops by itself.
    assert!(server.join().unwrap() >= 2);
}

#[test]
fn a_failing_hub_is_retried_then_reported() {
    let (endpoint, server) = local_hub(
        Some(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
        Duration::from_secs(3),
    );
    let err = hub_options(endpoint, 2).load("org/failing").unwrap_err();
    assert!(err.to_string().contains("HTTP 503"), "{err}");
    assert!(err.to_string().contains("3 attempt"), "{err}");
    assert!(server.join().unwrap() >= 3);
}

/// A smoke run of the fuzz targets' entry points (CI has no cargo-fuzz):
/// each seed, then deterministic one-byte mutations and truncations of it.
#[test]
fn fuzz_entry_points_survive_their_seeds_mutated() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    type Target = (&'static str, fn(&[u8]));
    let targets: [Target; 3] = [
        ("tokenizer_json", router_tokenizer::__fuzz::tokenizer_json),
        ("rank_file", router_tokenizer::__fuzz::rank_file),
        (
            "tokenizer_config",
            router_tokenizer::__fuzz::tokenizer_config,
        ),
    ];
    for (name, run) in targets {
        let mut files: Vec<_> = std::fs::read_dir(seeds.join(name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{name}: no seeds");
        for file in files {
            let seed = std::fs::read(&file).unwrap();
            run(&seed);
            let mut state = 0x9E37_79B9_7F4A_7C15u64;
            for _ in 0..64 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let mut bytes = seed.clone();
                let at = (state as usize) % bytes.len().max(1);
                if let Some(b) = bytes.get_mut(at) {
                    *b = (state >> 32) as u8;
                }
                run(&bytes);
                run(&seed[..at]);
            }
        }
    }
}

/// A local hub that serves `tokenizer.json` (through a redirect, as the hub
/// does for LFS files) and `tokenizer_config.json`, 404 for the rest: the
/// download writes the standard cache layout, which an offline load then reads.
#[test]
fn a_download_writes_the_standard_cache_layout() {
    const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let server = std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(10);
        let mut served = Vec::new();
        // tekken.json (404), tokenizer.json and its blob, six companions.
        while Instant::now() < end && served.len() < 9 {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = request.split_whitespace().nth(1).unwrap_or("").to_owned();
            let (head, body): (String, String) = match path.as_str() {
                "/org/model/resolve/main/tokenizer.json" => (
                    format!(
                        "HTTP/1.1 302 Found\r\nlocation: /cdn/blob1\r\nx-repo-commit: {COMMIT}\r\nx-linked-etag: \"abc123\"\r\ncontent-length: 0\r\n"
                    ),
                    String::new(),
                ),
                "/cdn/blob1" => (
                    "HTTP/1.1 200 OK\r\n".into(),
                    bpe_json(r#"{"a":0,"b":1,"ab":2}"#, r#""a b""#, ""),
                ),
                p if p == format!("/org/model/resolve/{COMMIT}/tokenizer_config.json") => (
                    format!("HTTP/1.1 200 OK\r\nx-repo-commit: {COMMIT}\r\netag: \"def456\"\r\n"),
                    r#"{"tokenizer_class":"PreTrainedTokenizerFast","eos_token":"ab"}"#.into(),
                ),
                _ => ("HTTP/1.1 404 Not Found\r\n".into(), String::new()),
            };
            let head = if head.contains("content-length") {
                head
            } else {
                format!("{head}content-length: {}\r\n", body.len())
            };
            let _ = stream.write_all(format!("{head}connection: close\r\n\r\n{body}").as_bytes());
            served.push(path);
        }
        served
    });
    let cache = scratch_dir("download-cache");
    let options = LoadOptions::default()
        .with_endpoint(endpoint)
        .with_offline(false)
        .with_cache_dir(cache.clone())
        .with_bypass_registry(true);
    let tok = options.load("org/model").unwrap();
    assert_eq!(tok.encode("ab", false).unwrap().ids(), [2]);
    let served = server.join().unwrap();
    assert!(served.iter().any(|p| p == "/cdn/blob1"), "{served:?}");
    assert_eq!(
        served.first().map(String::as_str),
        Some("/org/model/resolve/main/tekken.json")
    );
    let folder = cache.join("models--org--model");
    assert_eq!(
        std::fs::read_to_string(folder.join("refs/main")).unwrap(),
        COMMIT
    );
    assert!(folder.join("blobs/abc123").is_file());
    let snapshot = folder.join("snapshots").join(COMMIT);
    assert!(snapshot.join("tokenizer.json").is_file());
    assert!(snapshot.join("tokenizer_config.json").is_file());
    // Offline, from the cache just written.
    // `options` without the endpoint.
    let offline = LoadOptions::default()
        .with_offline(true)
        .with_cache_dir(cache.clone())
        .with_bypass_registry(true);
    let again = offline.load("org/model").unwrap();
    assert_eq!(again.eos_token_ids(), [2]);
}
