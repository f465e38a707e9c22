//! Shared test helpers: finding `../shared`, loading each tokenizer once, corpus files.
#![allow(dead_code)]

use router_tokenizer::{EncodeOptions, LoadOptions, Parallelism, Tokenizer};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};

/// The shared data folder: `RTOK_SHARED_DIR`, else `../shared` beside the repo.
/// Panics with instructions when it is missing: tests never pass without data.
pub fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("RTOK_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    assert!(
        dir.join("hf-cache/hub").is_dir()
            && dir.join("corpus").is_dir()
            && dir.join("fixtures").is_dir(),
        "test data not found at {}: check out the project's shared/ folder beside the repository \
         (it holds hf-cache/, fixtures/ and corpus/), or point RTOK_SHARED_DIR at it",
        dir.display()
    );
    dir
}

/// `file` in a hub model's snapshot folder of the shared cache.
pub fn snapshot_file(model: &str, file: &str) -> PathBuf {
    let dir = shared_dir()
        .join("hf-cache/hub")
        .join(format!("models--{}", model.replace('/', "--")));
    let commit = std::fs::read_to_string(dir.join("refs/main")).unwrap();
    dir.join("snapshots").join(commit.trim()).join(file)
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char boundary.
pub fn prefix(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A seeded xorshift64 generator: reproducible picks without a dependency.
pub struct Xorshift(pub u64);

impl Xorshift {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound.max(1) as u64) as usize
    }
}

/// `text[start..start + len]`, both ends moved back to char boundaries.
pub fn char_slice(text: &str, start: usize, len: usize) -> &str {
    let floor = |mut i: usize| {
        i = i.min(text.len());
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    &text[floor(start)..floor(start + len)]
}

/// A hub model's `tokenizer.json` as `tokenizers` 1.0 builds it, for
/// differential tests against its own pipeline.
pub fn pipeline(model: &str) -> tokenizers::pipeline::PipelineTokenizer {
    let json = std::fs::read_to_string(snapshot_file(model, "tokenizer.json")).unwrap();
    let json = tokenizers::canonicalize_str(&json).unwrap();
    tokenizers::from_json(&json).unwrap()
}

/// `text`'s ids from `tokenizers`' own `PipelineTokenizer::encode_into`
/// (padding and truncation off).
pub fn pipeline_ids(
    pipe: &tokenizers::pipeline::PipelineTokenizer,
    text: &str,
    specials: bool,
    as_text: bool,
) -> Vec<u32> {
    use tokenizers::pipeline::{EncodeOptions, Override, PipelineToken};
    let options = EncodeOptions {
        add_special_tokens: specials,
        encode_special_tokens: as_text,
        padding: Override::Off,
        truncation: Override::Off,
    };
    let mut out: Vec<PipelineToken> = Vec::new();
    pipe.encode_into(text, &options, &mut out).unwrap();
    out.into_iter().map(u32::from).collect()
}

/// How many leading ids two encodings share: where they first differ.
pub fn first_difference(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Options for the reference encode: the backend on the calling thread,
/// never in chunks, never through the prompt caches.
pub fn sequential(add_special_tokens: bool) -> EncodeOptions {
    EncodeOptions::new()
        .with_add_special_tokens(add_special_tokens)
        .with_parallelism(Parallelism::Sequential)
}

/// [`sequential`] with one byte span per id.
pub fn sequential_offsets(add_special_tokens: bool) -> EncodeOptions {
    sequential(add_special_tokens).with_offsets(true)
}

/// Options for `encode` with offsets (the handle's parallel policy).
pub fn offsets(add_special_tokens: bool) -> EncodeOptions {
    EncodeOptions::new()
        .with_add_special_tokens(add_special_tokens)
        .with_offsets(true)
}

/// The same ids (plain) and ids and offsets (with special tokens) from two
/// loads of one file, one with a fast route and one without.
pub fn assert_same_encodes(model: &str, what: &str, on: &Tokenizer, off: &Tokenizer, text: &str) {
    let a = on.encode_with(text, &sequential(false)).unwrap();
    let b = off.encode_with(text, &sequential(false)).unwrap();
    if a.ids() != b.ids() {
        let at = first_difference(a.ids(), b.ids());
        panic!(
            "{model} {what}: {} vs {} ids, first difference at {at}",
            a.len(),
            b.len()
        );
    }
    let a = on.encode_with(text, &sequential_offsets(true)).unwrap();
    let b = off.encode_with(text, &sequential_offsets(true)).unwrap();
    assert_eq!(a.ids(), b.ids(), "{model} {what}: ids with specials");
    assert_eq!(a.offsets(), b.offsets(), "{model} {what}: offsets");
}

/// Options that resolve hub ids in the shared cache, offline, with the L0
/// prompt cache off: tests that encode one text several ways (parallel
/// options, offsets) must reach the encoder every time. `tests/it/prompt_cache.rs`
/// turns the cache on explicitly.
pub fn offline_options() -> LoadOptions {
    LoadOptions::default()
        .with_cache_dir(shared_dir().join("hf-cache/hub"))
        .with_offline(true)
        .with_prompt_cache(router_tokenizer::PromptCacheOptions::off())
}

/// Cases per proptest: `default`, or `PROPTEST_CASES` when set (for long
/// local runs; CI uses the defaults).
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

static LOADED: LazyLock<Mutex<HashMap<String, Tokenizer>>> = LazyLock::new(Default::default);

/// Loads (once per test binary) a tokenizer by source, offline from the shared
/// cache; `fixtures/…` names a file in the shared folder.
pub fn tokenizer(source: &str) -> Tokenizer {
    if let Some(t) = LOADED.lock().unwrap().get(source) {
        return t.clone();
    }
    if source == WINDOWED_MISTRAL {
        let tok = windowed_mistral();
        LOADED
            .lock()
            .unwrap()
            .insert(source.to_owned(), tok.clone());
        return tok;
    }
    // `fixtures/…` names a file in the shared folder, `tests/…` one in this repository.
    let path = if source.starts_with("fixtures/") {
        Some(shared_dir().join(source))
    } else if source.starts_with("tests/") {
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join(source))
    } else {
        None
    };
    let name = match &path {
        Some(p) => p.to_str().expect("shared dir path is UTF-8"),
        None => source,
    };
    let tok = offline_options()
        .load(name)
        .unwrap_or_else(|e| panic!("loading {source} (offline, from the shared folder): {e}"));
    LOADED
        .lock()
        .unwrap()
        .insert(source.to_owned(), tok.clone());
    tok
}

/// A source name for Mistral-7B's `tokenizer.json` with one more decoder
/// step (a second `Replace ▁`, a no-op on real text): no byte style
/// expresses it, so it streams on the `Windowed` path, which no shared
/// tokenizer uses any more.
pub const WINDOWED_MISTRAL: &str = "windowed/mistral-7b";

fn windowed_mistral() -> Tokenizer {
    let snapshots = shared_dir().join("hf-cache/hub/models--mistralai--Mistral-7B-v0.1/snapshots");
    let snap = std::fs::read_dir(&snapshots)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(snap.join("tokenizer.json")).unwrap()).unwrap();
    json["decoder"]["decoders"].as_array_mut().unwrap().push(
        serde_json::json!({"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "}),
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("windowed-mistral");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    let tok = offline_options().load(path.to_str().unwrap()).unwrap();
    assert_eq!(
        tok.decode_style(),
        router_tokenizer::traits::DecodeStyle::Windowed
    );
    tok
}

/// One tokenizer per split family the prompt-cache tests cover: regex BPE
/// (HF Llama-3.2 and Qwen3, tiktoken o200k), whole-text BPE (Gemma-3),
/// WordPiece (MiniLM).
pub const CACHE_MODELS: &[&str] = &[
    "meta-llama/Llama-3.2-1B-Instruct",
    "Qwen/Qwen3-8B",
    "google/gemma-3-4b-it",
    "sentence-transformers/all-MiniLM-L6-v2",
    "o200k_base",
];

/// The 11 hub tokenizers in the shared cache.
pub const HUB_MODELS: &[&str] = &[
    "meta-llama/Meta-Llama-3-8B-Instruct",
    "meta-llama/Llama-3.2-1B-Instruct",
    "mistralai/Mistral-7B-v0.1",
    "mistralai/Mistral-Nemo-Instruct-2407",
    "Qwen/Qwen3-8B",
    "deepseek-ai/DeepSeek-V3",
    "google/gemma-3-4b-it",
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "Xenova/gpt-3.5-turbo",
    "sentence-transformers/all-MiniLM-L6-v2",
];

/// Every corpus file, keyed as `dir/name` relative to `corpus/`.
pub fn corpus_files() -> Vec<(String, PathBuf)> {
    let root = shared_dir().join("corpus");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let key = format!(
                "{}/{}",
                dir.file_name().unwrap().to_string_lossy(),
                f.file_name().unwrap().to_string_lossy()
            );
            out.push((key, f));
        }
    }
    out.sort();
    out
}

/// Chinese text seen again and changed (the memo tests): the first
/// `per_file` bytes of each `corpus/zh` file joined, and the same with one
/// CJK char in nine replaced by `文`.
pub fn chinese_repeats(per_file: usize) -> (String, String) {
    let mut text = String::new();
    for (key, path) in corpus_files() {
        if key.starts_with("zh/") {
            text.push_str(prefix(&std::fs::read_to_string(path).unwrap(), per_file));
        }
    }
    let changed = text
        .chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 9 == 4 && c > '\u{3000}' {
                '文'
            } else {
                c
            }
        })
        .collect();
    (text, changed)
}

/// The rounds the repeat tests encode: `text` five
/// times (remembered at its second sighting, answered from its third),
/// `changed` three times, then alternating.
pub fn memo_rounds<'a>(text: &'a str, changed: &'a str) -> impl Iterator<Item = &'a str> {
    std::iter::repeat_n(text, 5)
        .chain(std::iter::repeat_n(changed, 3))
        .chain([text, changed, text])
}

/// [`memo_rounds`] of `text` and `changed` on `on` and `off`, whose ids must
/// agree on every round (`what` names the pair in a failure). Run it on a
/// thread of its own: the memos are per thread.
pub fn assert_memo_rounds(what: &str, on: &Tokenizer, off: &Tokenizer, text: &str, changed: &str) {
    for (round, t) in memo_rounds(text, changed).enumerate() {
        let a = on.encode_with(t, &sequential(false)).unwrap();
        let b = off.encode_with(t, &sequential(false)).unwrap();
        assert!(
            a.ids() == b.ids(),
            "{what} round {round}: first difference at {}",
            first_difference(a.ids(), b.ids())
        );
    }
}

/// Lines seen again and changed: the first `per_file`
/// bytes of every corpus file joined, and a copy with one line in seven
/// changed where the line cut rules bite: `/` or a space-then-newline run
/// after the newline, trailing spaces before it, CR LF, U+3000 indents, a
/// special token's text at a line start, a digit run across the break.
pub fn line_repeats(per_file: usize) -> (String, String) {
    let mut text = String::new();
    for (_, path) in corpus_files() {
        text.push_str(prefix(&std::fs::read_to_string(path).unwrap(), per_file));
        text.push('\n');
    }
    const EDITS: [&str; 10] = [
        "\n/",
        "\n \n",
        "  \n",
        "\r\n",
        "\n\u{3000}\u{3000}",
        "\n<|eot_id|>",
        "\n\n\n",
        "\t\n",
        "12\n34",
        ".\n/x",
    ];
    let mut changed = String::with_capacity(text.len() + text.len() / 16);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i % 7 == 3 {
            let edit = EDITS[(i / 7) % EDITS.len()];
            let body = line.strip_suffix('\n').unwrap_or(line);
            changed.push_str(body);
            changed.push_str(edit);
        } else {
            changed.push_str(line);
        }
    }
    (text, changed)
}

static ADVERSARIAL: LazyLock<PathBuf> = LazyLock::new(|| {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("adversarial");
    if !out.join("index.tsv").exists() {
        let script = shared_dir().join("corpus/make_adversarial.py");
        let status = std::process::Command::new("python3")
            .arg(&script)
            .arg(&out)
            .status()
            .expect("python3 is needed to generate adversarial inputs");
        assert!(status.success(), "{} failed", script.display());
    }
    out
});

/// The adversarial generator's files (default settings), keyed `adversarial/name`.
pub fn adversarial_files() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&*ADVERSARIAL)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| {
            (
                format!("adversarial/{}", p.file_name().unwrap().to_string_lossy()),
                p,
            )
        })
        .collect();
    out.sort();
    out
}

/// Corpus plus adversarial files.
pub fn all_inputs() -> Vec<(String, PathBuf)> {
    let mut v = corpus_files();
    v.extend(adversarial_files());
    v
}

/// sha256 hex of ids as little-endian u32.
pub fn ids_sha256(ids: &[u32]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for id in ids {
        h.update(id.to_le_bytes());
    }
    hex(&h.finalize())
}

/// sha256 hex of bytes.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A `tokenizer.json` from the shared cache loaded with one fast route on
/// and with it off, after checking the route applies to the first and not
/// to the second: `(on, off)`.
pub fn route_pair(
    model: &str,
    policy: router_tokenizer::SpecialTokenPolicy,
    route: router_tokenizer::__testing::FastRoute,
) -> (Tokenizer, Tokenizer) {
    let path = snapshot_file(model, "tokenizer.json");
    let load = |on| router_tokenizer::__testing::hf_json_route(&path, policy, route, on).unwrap();
    let ((on, applies_on), (off, applies_off)) = (load(true), load(false));
    assert!(applies_on, "{model}: {route:?} must apply");
    assert!(!applies_off, "{model}: {route:?} switched off");
    (on, off)
}

/// `(model, policy, on, off)`: [`route_pair`] for every model under both
/// special-token policies.
pub fn route_pairs(
    models: &[&'static str],
    route: router_tokenizer::__testing::FastRoute,
) -> Vec<(&'static str, String, Tokenizer, Tokenizer)> {
    use router_tokenizer::SpecialTokenPolicy::{Parse, PlainText};
    let mut out = Vec::new();
    for &model in models {
        for policy in [Parse, PlainText] {
            let (on, off) = route_pair(model, policy, route);
            out.push((model, format!("{policy:?}"), on, off));
        }
    }
    out
}

/// Whether a fast route applies to a shared `tokenizer.json`.
pub fn route_applies(model: &str, route: router_tokenizer::__testing::FastRoute) -> bool {
    let path = snapshot_file(model, "tokenizer.json");
    let policy = router_tokenizer::SpecialTokenPolicy::Parse;
    router_tokenizer::__testing::hf_json_route(&path, policy, route, true)
        .unwrap()
        .1
}

/// [`assert_same_encodes`] on every corpus and adversarial file, cut to 3 KiB
/// and to 256 KiB; `what` names the variant in a failure.
pub fn assert_same_on_all_inputs(model: &str, what: &str, on: &Tokenizer, off: &Tokenizer) {
    for (name, path) in all_inputs() {
        let text = std::fs::read_to_string(&path).unwrap();
        for max in [3 << 10, 256 << 10] {
            assert_same_encodes(
                model,
                &format!("{name} {what}"),
                on,
                off,
                prefix(&text, max),
            );
        }
    }
}

/// A golden written by a script under `tests/golden/` (`rel` below it):
/// `texts`, `long`, and per model the reference's ids of each.
pub fn golden(rel: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(rel);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Ids stored in a golden (a JSON array of numbers).
pub fn golden_ids(v: &serde_json::Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| u32::try_from(x.as_u64().unwrap()).unwrap())
        .collect()
}

/// `tok` gives a golden's ids for `want` (one model's entry): each of the
/// golden's `texts` whole and with offsets, and its `long` text whole and in
/// 1 KiB parallel chunks. `what` names the model and variant in a failure.
pub fn assert_matches_golden(
    tok: &Tokenizer,
    what: &str,
    golden: &serde_json::Value,
    want: &serde_json::Value,
) {
    let texts = golden["texts"].as_array().unwrap();
    let wants = want["texts"].as_array().unwrap();
    assert_eq!(texts.len(), wants.len(), "{what}");
    for (text, want) in texts.iter().zip(wants) {
        assert_text_ids(tok, what, text.as_str().unwrap(), &golden_ids(want));
    }
    let long = golden["long"].as_str().unwrap();
    assert_long_ids(tok, what, long, &golden_ids(&want["long"]));
}

/// `tok` encodes `text` as `want`, whole and with offsets.
pub fn assert_text_ids(tok: &Tokenizer, what: &str, text: &str, want: &[u32]) {
    let got = tok
        .encode_with(text, &sequential(false))
        .unwrap_or_else(|e| panic!("{what} {text:?}: {e}"));
    assert_eq!(got.ids(), want, "{what} {text:?}");
    let got = tok
        .encode_with(text, &sequential_offsets(false))
        .unwrap_or_else(|e| panic!("{what} {text:?} with offsets: {e}"));
    assert_eq!(got.ids(), want, "{what} {text:?} with offsets");
}

/// `tok` encodes `long` as `want`, whole and in 1 KiB parallel chunks.
pub fn assert_long_ids(tok: &Tokenizer, what: &str, long: &str, want: &[u32]) {
    let got = tok.encode_with(long, &sequential(false)).unwrap();
    assert_eq!(got.ids(), want, "{what} long");
    let chunked = tok.with_parallel(router_tokenizer::ParallelOptions::always_with_chunk_bytes(
        1 << 10,
    ));
    assert_eq!(
        chunked
            .encode(long, false)
            .unwrap_or_else(|e| panic!("{what} long, chunked: {e}"))
            .ids(),
        want,
        "{what} long, chunked"
    );
}

/// `json` written as `name`.json under `dir` and loaded offline.
pub fn load_json_in(json: &serde_json::Value, dir: &Path, name: &str) -> Tokenizer {
    load_json_with(json, dir, name, offline_options())
}

/// [`load_json_in`] with `options`.
pub fn load_json_with(
    json: &serde_json::Value,
    dir: &Path,
    name: &str,
    options: LoadOptions,
) -> Tokenizer {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, serde_json::to_vec(json).unwrap()).unwrap();
    options
        .load(path.to_str().unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A value the tests of one module share, kept while a test that asked for
/// it runs and built again when a later test asks after they all ended. In
/// the one test binary a `static` would keep it (tokenizers built with a
/// route on and off: 8 GB for `interim`, 4 GB for `char_cuts`) until the
/// process ends, under every other module's tests. Each test runs on a
/// thread of its own, which holds what it got until it ends (between the
/// cases of a proptest too); a module's tests run next to each other, so
/// the value is seldom built twice. Ask from the test's thread, not from a
/// pool's.
pub struct Lease<T> {
    slot: Mutex<std::sync::Weak<T>>,
}

thread_local! {
    /// What this test's thread got from a [`Lease`], dropped when it ends.
    static HELD: std::cell::RefCell<Vec<std::sync::Arc<dyn std::any::Any + Send + Sync>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

impl<T: Send + Sync + 'static> Lease<T> {
    pub const fn new() -> Self {
        Self {
            slot: Mutex::new(std::sync::Weak::new()),
        }
    }

    /// The shared value, made with `make` if no running test holds it. The
    /// lock is held while it is made, so it is never made twice at once.
    pub fn get(&self, make: impl FnOnce() -> T) -> std::sync::Arc<T> {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let value = slot.upgrade().unwrap_or_else(|| {
            let value = std::sync::Arc::new(make());
            *slot = std::sync::Arc::downgrade(&value);
            value
        });
        drop(slot);
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            let ptr = std::sync::Arc::as_ptr(&value).cast::<()>();
            if !held
                .iter()
                .any(|h| std::sync::Arc::as_ptr(h).cast::<()>() == ptr)
            {
                held.push(value.clone());
            }
        });
        value
    }
}
