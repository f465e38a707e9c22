//! GGUF through the loader: every shared file loads; paths, folders and hub
//! repos (with `org/name/file.gguf` and the ambiguity error); hostile files
//! give typed errors naming the file and offset; metadata (special tokens,
//! end-of-generation ids, chat template) and llama.cpp-style decode.

use crate::common;

use std::path::{Path, PathBuf};

use router_tokenizer::chat::{ChatRequest, Message};
use router_tokenizer::{ErrorKind, Format, LoadOptions, SpecialTokenPolicy, Tokenizer};

fn fixture(name: &str) -> PathBuf {
    common::shared_dir().join(format!("fixtures/gguf/ggml-vocab-{name}.gguf"))
}

fn options() -> LoadOptions {
    common::offline_options().with_bypass_registry(true)
}

fn load(path: &Path) -> Tokenizer {
    options().load(path.to_str().unwrap()).unwrap()
}

fn load_err(path: &Path) -> ErrorKind {
    options()
        .load(path.to_str().unwrap())
        .unwrap_err()
        .kind()
        .clone()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtok-gguf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn every_shared_gguf_loads() {
    for name in [
        "baichuan",
        "bert-bge",
        "deepseek-coder",
        "deepseek-llm",
        "falcon",
        "gpt-2",
        "gpt-neox",
        "llama-spm",
        "mpt",
        "phi-3",
        "refact",
        "starcoder",
    ] {
        let tok = load(&fixture(name));
        assert_eq!(tok.format(), Format::Gguf, "{name}");
        assert_eq!(tok.backend_name(), "gguf");
        assert!(tok.vocab_size() > 30000, "{name}");
        let ids = tok.encode("Hello world, 日本語!", false).unwrap();
        assert!(!ids.is_empty(), "{name}");
        tok.decode(ids.ids(), false).unwrap();
    }
}

#[test]
fn folder_and_hub_repo() {
    // A folder holding one GGUF.
    let dir = scratch("folder");
    std::fs::copy(fixture("llama-spm"), dir.join("model.gguf")).unwrap();
    let tok = load(&dir);
    assert_eq!(tok.format(), Format::Gguf);

    // A hub cache with a repo of two GGUFs.
    let cache = scratch("hub");
    let repo = cache.join("models--org--two");
    let snap = repo.join("snapshots/0123456789abcdef0123456789abcdef01234567");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(
        repo.join("refs/main"),
        "0123456789abcdef0123456789abcdef01234567",
    )
    .unwrap();
    std::fs::copy(fixture("llama-spm"), snap.join("a-Q4_K_M.gguf")).unwrap();
    std::fs::copy(fixture("gpt-2"), snap.join("b-Q8_0.gguf")).unwrap();
    let opts = LoadOptions::default()
        .with_cache_dir(cache.clone())
        .with_offline(true)
        .with_bypass_registry(true);
    let err = opts.load("org/two").unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidSource { .. })
            && msg.contains("a-Q4_K_M.gguf")
            && msg.contains("b-Q8_0.gguf"),
        "{msg}"
    );
    let a = opts.load("org/two/a-Q4_K_M.gguf").unwrap();
    let b = opts.load("org/two/b-Q8_0.gguf").unwrap();
    assert_eq!(a.vocab_size(), 32000);
    assert_eq!(b.vocab_size(), 50257);
    let err = opts.load("org/two/c.gguf").unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotFound { .. }), "{err}");
    assert!(err.to_string().contains("a-Q4_K_M.gguf"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&cache);
}

/// A GGUF v3 file from raw key/values.
fn gguf_file(kvs: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend((kvs.len() as u64).to_le_bytes());
    for (k, tag, v) in kvs {
        b.extend((k.len() as u64).to_le_bytes());
        b.extend(k.as_bytes());
        b.extend(tag.to_le_bytes());
        b.extend(v);
    }
    b
}

fn gstr(s: &str) -> Vec<u8> {
    let mut b = (s.len() as u64).to_le_bytes().to_vec();
    b.extend(s.as_bytes());
    b
}

fn str_array(items: &[&str]) -> Vec<u8> {
    let mut b = 8u32.to_le_bytes().to_vec();
    b.extend((items.len() as u64).to_le_bytes());
    for s in items {
        b.extend(gstr(s));
    }
    b
}

/// The precompiled charsmap stored in a `t5` GGUF (u8 array after its key).
fn charsmap_of(file: &[u8]) -> Vec<u8> {
    let key = b"tokenizer.ggml.precompiled_charsmap";
    let at = file.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    assert_eq!(&file[at..at + 8], &[9, 0, 0, 0, 0, 0, 0, 0], "array of u8");
    let n = u64::from_le_bytes(file[at + 8..at + 16].try_into().unwrap()) as usize;
    file[at + 16..at + 16 + n].to_vec()
}

fn u8_array(elem: u32, bytes: &[u8]) -> Vec<u8> {
    let size = if elem == 6 { 4 } else { 1 };
    let mut b = elem.to_le_bytes().to_vec();
    b.extend(((bytes.len() / size) as u64).to_le_bytes());
    b.extend(bytes);
    b
}

#[test]
fn hostile_t5_files_are_typed_errors() {
    let dir = scratch("hostile-t5");
    let real = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gguf/t5/t5-test.gguf"),
    )
    .unwrap();
    let good = charsmap_of(&real);
    let t5 = |charsmap: Option<(u32, u32, Vec<u8>)>, tokens: &[&str]| {
        let mut kvs = vec![
            ("tokenizer.ggml.model", 8, gstr("t5")),
            ("tokenizer.ggml.tokens", 9, str_array(tokens)),
        ];
        if let Some((tag, elem, bytes)) = charsmap {
            let v = if tag == 9 {
                u8_array(elem, &bytes)
            } else {
                bytes
            };
            kvs.push(("tokenizer.ggml.precompiled_charsmap", tag, v));
        }
        gguf_file(&kvs)
    };
    let tokens = ["<pad>", "</s>", "<unk>", "\u{2581}", "a", "b"];
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("header only", vec![0, 4, 0, 0]),
        ("trie past the blob", {
            let mut b = (1u32 << 30).to_le_bytes().to_vec();
            b.extend([0; 64]);
            b
        }),
        ("trie not a multiple of 1024", {
            let mut b = 1000u32.to_le_bytes().to_vec();
            b.extend(vec![0; 1100]);
            b
        }),
        ("zeroed double array", {
            let mut b = 1024u32.to_le_bytes().to_vec();
            b.extend(vec![0; 1024]);
            b.push(0);
            b
        }),
        ("replacements not NUL-terminated", {
            let mut b = good.clone();
            *b.last_mut().unwrap() = b'x';
            b
        }),
    ];
    // Units pointing past the array.
    let mut wild = good.clone();
    for i in (8..1024 * 4).step_by(4) {
        wild[i..i + 4].copy_from_slice(&0xFFFF_FEFFu32.to_le_bytes());
    }
    cases.push(("wild units", wild));
    for (what, blob) in cases {
        let p = dir.join("charsmap.gguf");
        std::fs::write(&p, t5(Some((9, 0, blob)), &tokens)).unwrap();
        match load_err(&p) {
            ErrorKind::Parse { path, detail } => {
                assert_eq!(path, p, "{what}");
                assert!(detail.contains("precompiled_charsmap"), "{what}: {detail}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // Wrong types for the charsmap: an f32 array, a string.
    for (tag, elem, bytes) in [(9, 6, vec![0; 8]), (8, 0, gstr("abc"))] {
        let p = dir.join("charsmap-type.gguf");
        std::fs::write(&p, t5(Some((tag, elem, bytes)), &tokens)).unwrap();
        let kind = load_err(&p);
        assert!(
            matches!(&kind, ErrorKind::Parse { detail, .. } if detail.contains("precompiled_charsmap")),
            "{kind:?}"
        );
    }
    // Flipped bytes anywhere in a real charsmap: a typed error or a tokenizer
    // that encodes, never a panic.
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200 {
        let mut blob = good.clone();
        for _ in 0..8 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let i = (rng % blob.len() as u64) as usize;
            blob[i] ^= (rng >> 40) as u8 | 1;
        }
        let p = dir.join("flipped.gguf");
        std::fs::write(&p, t5(Some((9, 0, blob)), &tokens)).unwrap();
        if let Ok(tok) = LoadOptions::default().load(p.to_str().unwrap()) {
            let _ = tok.encode("Ｈｅｌｌｏ ﬁ ① \u{0} x", true).unwrap();
        }
    }
    // No unknown token (two tokens, default unk 2 out of range): a character
    // with no token is a typed error, not an id of -1.
    let p = dir.join("nounk.gguf");
    std::fs::write(&p, t5(None, &["\u{2581}", "a"])).unwrap();
    let tok = load(&p);
    assert_eq!(tok.encode(" a", false).unwrap().ids(), &[0, 1]);
    assert!(tok.encode("z", false).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hostile_files_are_typed_errors() {
    let dir = scratch("hostile");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let real = std::fs::read(fixture("llama-spm")).unwrap();
    // Truncated at several points: a parse error naming the file and an offset.
    for cut in [5, 24, 100, 5000, real.len() / 2, real.len() - 1] {
        let p = write("cut.gguf", &real[..cut]);
        match load_err(&p) {
            ErrorKind::Parse { path, detail } => {
                assert_eq!(path, p);
                assert!(detail.contains("offset"), "{detail}");
            }
            other => panic!("cut {cut}: {other:?}"),
        }
    }
    // 2^60 tokens claimed.
    let mut huge = 8u32.to_le_bytes().to_vec();
    huge.extend((1u64 << 60).to_le_bytes());
    let p = write(
        "huge.gguf",
        &gguf_file(&[
            ("tokenizer.ggml.model", 8, gstr("llama")),
            ("tokenizer.ggml.tokens", 9, huge),
        ]),
    );
    assert!(matches!(load_err(&p), ErrorKind::Parse { detail, .. } if detail.contains("claims")));
    // Nested arrays.
    let mut nested = 9u32.to_le_bytes().to_vec();
    nested.extend(1u64.to_le_bytes());
    let p = write("nested.gguf", &gguf_file(&[("x", 9, nested)]));
    assert!(matches!(load_err(&p), ErrorKind::Parse { detail, .. } if detail.contains("nested")));
    // Wrong type for a known key.
    let p = write(
        "wrongtype.gguf",
        &gguf_file(&[("tokenizer.ggml.model", 4, 7u32.to_le_bytes().to_vec())]),
    );
    assert!(
        matches!(load_err(&p), ErrorKind::Parse { detail, .. } if detail.contains("tokenizer.ggml.model") && detail.contains("u32"))
    );
    let p = write(
        "wrongid.gguf",
        &gguf_file(&[
            ("tokenizer.ggml.model", 8, gstr("llama")),
            (
                "tokenizer.ggml.tokens",
                9,
                str_array(&["<unk>", "<s>", "</s>"]),
            ),
            ("tokenizer.ggml.bos_token_id", 8, gstr("1")),
        ]),
    );
    let kind = load_err(&p);
    assert!(
        matches!(&kind, ErrorKind::Parse { detail, .. } if detail.contains("bos_token_id")),
        "{kind:?}"
    );
    // Scores that do not match the token count.
    let mut scores = 6u32.to_le_bytes().to_vec();
    scores.extend(1u64.to_le_bytes());
    scores.extend(0f32.to_le_bytes());
    let p = write(
        "scores.gguf",
        &gguf_file(&[
            ("tokenizer.ggml.model", 8, gstr("llama")),
            (
                "tokenizer.ggml.tokens",
                9,
                str_array(&["<unk>", "<s>", "</s>"]),
            ),
            ("tokenizer.ggml.scores", 9, scores),
        ]),
    );
    assert!(matches!(load_err(&p), ErrorKind::Parse { detail, .. } if detail.contains("scores")));
    // Unknown vocabulary type and pre-tokenizer: UnsupportedFormat naming them.
    for (model, pre, named) in [
        ("rwkv", "default", "rwkv"),
        ("gpt2", "no-such-pre", "no-such-pre"),
    ] {
        let p = write(
            "unsupported.gguf",
            &gguf_file(&[
                ("tokenizer.ggml.model", 8, gstr(model)),
                ("tokenizer.ggml.pre", 8, gstr(pre)),
                ("tokenizer.ggml.tokens", 9, str_array(&["a", "b"])),
                ("tokenizer.ggml.merges", 9, str_array(&["a b"])),
            ]),
        );
        assert!(
            matches!(load_err(&p), ErrorKind::UnsupportedFormat { detected, .. } if detected.contains(named)),
            "{model} {pre}"
        );
    }
    // Not a tokenizer at all.
    let p = write("empty.gguf", &gguf_file(&[]));
    assert!(matches!(load_err(&p), ErrorKind::Parse { .. }));
    // A multi-gigabyte sparse file with a real header loads (the tensors are never read).
    let p = dir.join("sparse.gguf");
    std::fs::write(&p, &real).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(8 << 30).unwrap();
    drop(f);
    let tok = load(&p);
    assert_eq!(tok.vocab_size(), 32000);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn special_tokens_eog_and_chat_template() {
    let phi = load(&fixture("phi-3"));
    let st = phi.special_tokens();
    assert_eq!(st.bos.as_ref().map(|t| t.id), Some(1));
    assert_eq!(st.eos.as_ref().map(|t| t.id), Some(32000));
    let end = phi.token_to_id("<|end|>").unwrap();
    // llama.cpp's EOG set: eos first, then <|end|> (found by its text).
    assert_eq!(phi.eos_token_ids()[0], 32000);
    assert!(phi.eos_token_ids().contains(&end));
    // add_bos comes from the metadata.
    assert_eq!(phi.encode("Hi", true).unwrap().ids()[0], 1);
    // parse_special: control text is one token under Parse, text under PlainText.
    let ids = phi.encode("<|user|>\nHi<|end|>", false).unwrap();
    assert!(ids.ids().contains(&end), "{:?}", ids.ids());
    let plain = options()
        .with_special_tokens(SpecialTokenPolicy::PlainText)
        .load(fixture("phi-3").to_str().unwrap())
        .unwrap();
    let ids = plain.encode("<|user|>\nHi<|end|>", false).unwrap();
    assert!(!ids.ids().contains(&end), "{:?}", ids.ids());
    // The chat template from tokenizer.chat_template.
    let out = phi
        .apply_chat_template(&ChatRequest::new(vec![Message::new("user", "Hello")]))
        .unwrap();
    assert!(out.contains("<|user|>") && out.contains("Hello"), "{out}");

    let gpt2 = load(&fixture("gpt-2"));
    assert_eq!(gpt2.eos_token_ids(), &[50256]);
}

#[test]
fn decode_is_llama_cpp_detokenize() {
    // SPM: the leading space of the first piece goes (add_space_prefix) unless
    // a BOS came first and was removed.
    let spm = load(&fixture("llama-spm"));
    let ids = spm.encode("Hello world", false).unwrap();
    assert_eq!(spm.decode(ids.ids(), false).unwrap(), "Hello world");
    let with_bos = spm.encode("Hello world", true).unwrap();
    assert_eq!(with_bos.ids()[0], 1);
    assert_eq!(spm.decode(with_bos.ids(), true).unwrap(), " Hello world");
    assert_eq!(
        spm.decode(with_bos.ids(), false).unwrap(),
        "<s> Hello world"
    );
    // Byte fallback pieces come back as bytes.
    let ids = spm.encode("🦙 llama", false).unwrap();
    assert_eq!(spm.decode(ids.ids(), false).unwrap(), "🦙 llama");
    // BPE with clean_spaces: " ," loses its space, as in llama.cpp.
    let gpt2 = load(&fixture("gpt-2"));
    let ids = gpt2.encode("a , b", false).unwrap();
    assert_eq!(gpt2.decode(ids.ids(), false).unwrap(), "a, b");
    // Round trips on the test-vector inputs where no clean-up applies.
    let inp = std::fs::read_to_string(fixture("llama-spm").with_extension("gguf.inp")).unwrap();
    for text in inp.split("\n__ggml_vocab_test__\n") {
        let ids = spm.encode(text, false).unwrap();
        assert_eq!(spm.decode(ids.ids(), false).unwrap(), text, "{text:?}");
        let ids = load_deepseek().encode(text, false).unwrap();
        assert_eq!(load_deepseek().decode(ids.ids(), false).unwrap(), text);
    }
    assert!(matches!(
        spm.decode(&[99_999], false).unwrap_err().kind(),
        ErrorKind::UnknownTokenId { .. }
    ));
}

/// The `t5` GGUFs of `tests/golden/gguf/t5/` (`make_t5_gguf.py`).
const T5: [&str; 3] = ["t5-test", "t5-test-ja", "t5-test-identity"];

fn t5_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/golden/gguf/t5/{name}.gguf"))
}

fn load_deepseek() -> Tokenizer {
    common::tokenizer("fixtures/gguf/ggml-vocab-deepseek-coder.gguf")
}

#[test]
fn offsets_cover_the_text() {
    let paths = ["llama-spm", "gpt-2", "falcon", "bert-bge"]
        .map(fixture)
        .into_iter()
        .chain(T5.map(t5_fixture));
    for path in paths {
        let name = path.display();
        let tok = load(&path);
        let text = "Hello  world, ünïcode 日本 🦙\n\tend ﬁ①  <extra_id_1>x";
        let enc = tok
            .encode_with(text, &crate::common::offsets(false))
            .unwrap();
        assert_eq!(enc.ids(), tok.encode(text, false).unwrap().ids(), "{name}");
        let offs = enc.offsets().unwrap();
        let mut last = 0;
        for &(s, e) in offs {
            assert!(s <= e && e <= text.len() && s >= last, "{name}: {offs:?}");
            last = s;
        }
    }
}

#[test]
fn streams_reproduce_decode() {
    use router_tokenizer::DecodeStream;
    let text = "Hello world, 🦙 llamas!\n  日本語 don't <|end|> x";
    // Not bert-bge: llama.cpp's clean_spaces turns "don ' t" into "don't",
    // removing a space the stream has already emitted (see the report in
    // DESIGN.md, "Engines").
    let paths = ["llama-spm", "phi-3", "gpt-2", "deepseek-coder", "falcon"]
        .map(fixture)
        .into_iter()
        .chain(T5.map(t5_fixture));
    for path in paths {
        let name = path.display();
        let tok = load(&path);
        let ids = tok.encode(text, false).unwrap().into_ids();
        for skip in [false, true] {
            let mut stream = DecodeStream::new(&tok, &[], skip);
            let mut out = String::new();
            for &id in &ids {
                if let Some(s) = stream.step(id).unwrap() {
                    out.push_str(&s);
                }
            }
            if let Some(s) = stream.flush().unwrap() {
                out.push_str(&s);
            }
            assert_eq!(out, tok.decode(&ids, skip).unwrap(), "{name} skip={skip}");
        }
    }
}

/// A seeded mutation loop over the fuzz hook (the cargo-fuzz target runs the
/// same hook without limits): byte flips, truncations and huge counts in a
/// tiny valid `llama` vocabulary never panic.
#[test]
fn mutated_files_never_panic() {
    let seed = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/gguf/tiny_llama.gguf"),
    )
    .unwrap();
    router_tokenizer::__fuzz::gguf(&seed);
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..common::proptest_cases(3000) {
        let mut data = seed.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % data.len();
            match next() % 4 {
                0 => data[at] ^= 1 << (next() % 8),
                1 => data[at] = 0xff,
                2 => data.truncate(at),
                _ => {
                    let end = (at + 8).min(data.len());
                    let big = next().to_le_bytes();
                    data[at..end].copy_from_slice(&big[..end - at]);
                }
            }
            if data.is_empty() {
                break;
            }
        }
        router_tokenizer::__fuzz::gguf(&data);
    }
}
