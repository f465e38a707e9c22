//! The SentencePiece route for `tokenizer.json` conversions (DESIGN.md
//! invariant `spm-route-same-merges`): which files take it, and that it gives the ids of the
//! general `tokenizers` path on every corpus and adversarial file and on
//! hostile texts. Python `tokenizers` goldens for the routed file are
//! checked by `tests/it/parity.rs` (`parity_mistral7b`), which loads it routed.

use crate::common;

use common::*;
use proptest::prelude::*;
use router_tokenizer::__testing::{hf_json, spm_route};
use router_tokenizer::{SpecialTokenPolicy, Tokenizer};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::LazyLock;

const MISTRAL: &str = "mistralai/Mistral-7B-v0.1";

fn mistral_json() -> PathBuf {
    snapshot_file(MISTRAL, "tokenizer.json")
}

/// (routed, general) for one policy, loaded once.
struct Pair {
    routed: Tokenizer,
    general: Tokenizer,
}

fn pair(policy: SpecialTokenPolicy) -> Pair {
    Pair {
        routed: hf_json(&mistral_json(), policy, true).unwrap(),
        general: hf_json(&mistral_json(), policy, false).unwrap(),
    }
}

static PARSE: LazyLock<Pair> = LazyLock::new(|| pair(SpecialTokenPolicy::Parse));
static PLAIN: LazyLock<Pair> = LazyLock::new(|| pair(SpecialTokenPolicy::PlainText));

/// Every way the facade encodes, routed vs general; `None` when equal.
fn differs(p: &Pair, text: &str) -> Option<String> {
    for add in [false, true] {
        let a = p
            .routed
            .encode_with(text, &crate::common::sequential(add))
            .unwrap();
        let b = p
            .general
            .encode_with(text, &crate::common::sequential(add))
            .unwrap();
        if a.ids() != b.ids() {
            let at = first_difference(a.ids(), b.ids());
            return Some(format!(
                "add_special_tokens={add}: {} vs {} ids, first difference at id {at}",
                a.len(),
                b.len()
            ));
        }
    }
    // Offsets stay on the general walk; their ids must still be the route's.
    let a = p
        .routed
        .encode_with(text, &crate::common::sequential_offsets(false))
        .unwrap();
    let b = p
        .routed
        .encode_with(text, &crate::common::sequential(false))
        .unwrap();
    (a.ids() != b.ids()).then(|| "encode_with_offsets ids differ from encode".to_owned())
}

#[test]
fn mistral_takes_the_route_and_nothing_else_does() {
    let text = std::fs::read_to_string(mistral_json()).unwrap();
    assert_eq!(spm_route(&text).unwrap(), Ok(()));
    for model in [
        "google/gemma-3-4b-it",
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "meta-llama/Llama-3.2-1B-Instruct",
        "mistralai/Mistral-Nemo-Instruct-2407",
        "Qwen/Qwen3-8B",
        "deepseek-ai/DeepSeek-V3",
        "CohereForAI/c4ai-command-r-plus",
        "Xenova/gpt-3.5-turbo",
        "openai/gpt-oss-20b",
        "sentence-transformers/all-MiniLM-L6-v2",
    ] {
        let text = std::fs::read_to_string(snapshot_file(model, "tokenizer.json")).unwrap();
        let verdict = spm_route(&text).unwrap();
        assert!(verdict.is_err(), "{model} must stay on the general path");
    }
}

/// Slices of every corpus and adversarial file (the general path is slow in
/// a debug build, so not whole files: `parity_mistral7b` covers those
/// against Python): the first 48 KiB and 16 KiB from the middle.
#[test]
fn route_equals_general_on_every_input() {
    let mut bad = Vec::new();
    for (key, path) in all_inputs() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut slices = vec![common::char_slice(&text, 0, 48 << 10)];
        if text.len() > 64 << 10 {
            slices.push(common::char_slice(&text, text.len() / 2, 16 << 10));
        }
        for s in slices {
            for (name, p) in [("parse", &*PARSE), ("plain", &*PLAIN)] {
                if let Some(d) = differs(p, s) {
                    bad.push(format!("{key} ({name}, {} bytes): {d}", s.len()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} differences:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// On the route the load leaves `tokenizers`' pipeline building on a thread
/// of its own (DESIGN.md invariant `background-build-invisible`). Right after a fresh load, before
/// `warm_up`, offsets and decode (both served by that pipeline) equal the
/// general load's, which builds it during the load; so do they after it.
#[test]
fn deferred_pipeline_serves_offsets_and_decode() {
    let general = &PARSE.general;
    let mut inputs: Vec<String> = all_inputs()
        .into_iter()
        .map(|(_, path)| {
            let text = std::fs::read_to_string(path).unwrap();
            common::char_slice(&text, text.len() / 3, 4 << 10).to_owned()
        })
        .collect();
    inputs.push("<s>[INST] Hi </s>\u{00e9}\t\n  x".to_owned());
    for warm in [false, true] {
        let routed = hf_json(&mistral_json(), SpecialTokenPolicy::Parse, true).unwrap();
        if warm {
            routed.warm_up();
        }
        for text in &inputs {
            let a = routed
                .encode_with(text, &crate::common::sequential_offsets(true))
                .unwrap();
            let b = general
                .encode_with(text, &crate::common::sequential_offsets(true))
                .unwrap();
            assert_eq!(a.ids(), b.ids(), "warm={warm}: ids of {text:?}");
            assert_eq!(a.offsets(), b.offsets(), "warm={warm}: offsets of {text:?}");
            for skip in [false, true] {
                assert_eq!(
                    routed.decode(b.ids(), skip).unwrap(),
                    general.decode(b.ids(), skip).unwrap(),
                    "warm={warm}, skip={skip}: decode of {text:?}"
                );
            }
        }
    }
}

/// Parallel encodes on the route (chunks from the SentencePiece engine's
/// windows) give the sequential ids.
#[test]
fn parallel_chunks_on_the_route() {
    use router_tokenizer::{ParallelMode, ParallelOptions};
    let forced = ParallelOptions {
        mode: ParallelMode::Always,
        chunk_bytes: Some(8 << 10),
        ..ParallelOptions::default()
    };
    for (key, path) in all_inputs().into_iter().step_by(5) {
        let text = std::fs::read_to_string(&path).unwrap();
        let text = common::char_slice(&text, 0, 256 << 10);
        for p in [&*PARSE, &*PLAIN] {
            let seq = p
                .routed
                .encode_with(text, &crate::common::sequential(true))
                .unwrap();
            let par = p
                .routed
                .with_parallel(forced.clone())
                .encode(text, true)
                .unwrap();
            assert_eq!(seq.ids(), par.ids(), "{key}");
        }
    }
}

/// The Mistral file with `edit` applied to its parsed JSON.
fn edited(edit: impl FnOnce(&mut Value)) -> String {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(mistral_json()).unwrap()).unwrap();
    edit(&mut v);
    serde_json::to_string(&v).unwrap()
}

fn merges(v: &mut Value) -> &mut Vec<Value> {
    v["model"]["merges"].as_array_mut().unwrap()
}

fn merge_index(v: &mut Value, merge: &str) -> usize {
    merges(v).iter().position(|m| m == merge).unwrap()
}

/// Each recognition condition, broken one at a time, keeps the file on the
/// general path.
#[test]
fn broken_conditions_stay_general() {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "pre-tokenizer",
            Box::new(|v| {
                v["pre_tokenizer"] = serde_json::json!({"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "first", "split": false});
            }),
        ),
        (
            "no Prepend",
            Box::new(|v| {
                v["normalizer"] = serde_json::json!({"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"});
            }),
        ),
        (
            "no byte fallback",
            Box::new(|v| v["model"]["byte_fallback"] = false.into()),
        ),
        ("dropout", Box::new(|v| v["model"]["dropout"] = 0.1.into())),
        (
            "ignore_merges",
            Box::new(|v| v["model"]["ignore_merges"] = true.into()),
        ),
        (
            "decoder",
            Box::new(|v| {
                v["decoder"]["decoders"].as_array_mut().unwrap().pop();
            }),
        ),
        (
            "lstrip added token",
            Box::new(|v| v["added_tokens"][1]["lstrip"] = true.into()),
        ),
        (
            "normalized added token",
            Box::new(|v| v["added_tokens"][1]["normalized"] = true.into()),
        ),
        (
            "duplicate merge",
            Box::new(|v| {
                let first = merges(v)[0].clone();
                merges(v).push(first);
            }),
        ),
        (
            "merge into a special token",
            Box::new(|v| {
                merges(v).push("<s >".into());
                v["model"]["vocab"]["<s"] = 32000.into();
            }),
        ),
    ];
    for (name, edit) in cases {
        let json = edited(edit);
        // A file that does not load at all is not routed either.
        if let Ok(verdict) = spm_route(&json) {
            assert!(verdict.is_err(), "{name}: routed");
        }
    }
}

/// Writes `json` as a `tokenizer.json` and loads it routed and general.
fn load_edited(name: &str, json: &str) -> (Tokenizer, Tokenizer) {
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("spm_json_route/{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokenizer.json");
    std::fs::write(&path, json).unwrap();
    (
        hf_json(&path, SpecialTokenPolicy::Parse, true).unwrap(),
        hf_json(&path, SpecialTokenPolicy::Parse, false).unwrap(),
    )
}

const SAMPLE: &str = "the theory of the thing: then there, at the theatre, The end.";

/// A merge missing from the list (`▁t` + `he`, the last merge of `▁the`):
/// sentencepiece would still make `▁the` there, `tokenizers` cannot. The
/// check refuses the file, which then encodes as `tokenizers` does.
#[test]
fn missing_merge_is_refused() {
    let json = edited(|v| {
        let i = merge_index(v, "\u{2581}t he");
        merges(v).remove(i);
    });
    let verdict = spm_route(&json).unwrap();
    assert!(
        verdict.is_err(),
        "a file missing a merge must not be routed"
    );
    let (routed, general) = load_edited("missing", &json);
    let ids = routed.encode(SAMPLE, false).unwrap();
    assert_eq!(ids.ids(), general.encode(SAMPLE, false).unwrap().ids());
    // The merge matters: the ids are not the original file's.
    assert_ne!(ids.ids(), PARSE.routed.encode(SAMPLE, false).unwrap().ids());
}

/// A reordered merge list (`e` + `a` moved first, which changes the ids
/// of `theatre`) is still a complete one: the route's scores come from the
/// file's ranks, not from a `.model`, so it stays routed and follows the
/// new order.
#[test]
fn reordered_merges_are_followed() {
    let json = edited(|v| {
        let i = merge_index(v, "e a");
        let m = merges(v).remove(i);
        merges(v).insert(0, m);
    });
    assert_eq!(spm_route(&json).unwrap(), Ok(()));
    let (routed, general) = load_edited("reordered", &json);
    let text = std::fs::read_to_string(shared_dir().join("corpus/en-prose/botchan.txt")).unwrap();
    let text = common::char_slice(&text, 0, 32 << 10);
    for t in [SAMPLE, text] {
        let ids = routed.encode(t, false).unwrap();
        assert_eq!(ids.ids(), general.encode(t, false).unwrap().ids());
    }
    let ids = routed.encode(SAMPLE, false).unwrap();
    assert_ne!(ids.ids(), PARSE.routed.encode(SAMPLE, false).unwrap().ids());
}

/// Pieces of hostile texts: spaces and `▁`, byte-fallback characters,
/// added-token texts and their fragments, control characters.
fn hostile() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        " ",
        "  ",
        "\u{2581}",
        "\u{2581}\u{2581}",
        "\t",
        "\n",
        "\r\n",
        "\u{3000}",
        "\u{a0}",
        "<s>",
        "</s>",
        "<unk>",
        "<s",
        "s>",
        "</",
        "<0x41>",
        "<0xE4>",
        "a",
        "the",
        "\u{2581}the",
        "The",
        "ing",
        "é",
        "e\u{301}",
        "日本",
        "語",
        "🦀",
        "\u{1F3F3}\u{FE0F}\u{200D}\u{1F308}",
        "\u{0}",
        "\u{FFFD}",
        "\u{10FFFF}",
        "\u{E000}",
        "x",
        "1234",
        "«»",
        "ْ",
        "ก",
        "٣",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(256)))]

    #[test]
    fn route_equals_general_on_hostile_texts(text in hostile()) {
        for p in [&*PARSE, &*PLAIN] {
            prop_assert_eq!(differs(p, &text), None);
        }
    }

    #[test]
    fn route_equals_general_on_random_unicode(text in "\\PC{0,64}") {
        for p in [&*PARSE, &*PLAIN] {
            prop_assert_eq!(differs(p, &text), None);
        }
    }
}
