//! Differential tests of the parallel encoder (LoPT): for every shared
//! tokenizer, parallel encoding returns exactly the sequential ids (and
//! offsets), on the corpus, on the adversarial generator's output, on the
//! named hard cases of issue 3, under proptest, and down each fallback path.
//!
//! Chunks are forced small (64–4,096 bytes, random starts) so every file
//! gives hundreds of merges; each test prints how many cuts it checked.

use crate::common;

use proptest::prelude::*;
use router_tokenizer::{
    EncodeOptions, Encoding, LoadOptions, ParallelMode, ParallelOptions, ParallelReport,
    Parallelism, SplitFamily, Tokenizer,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

// ---------------------------------------------------------------- data ----

use common::{shared_dir, tokenizer as tok};

const LLAMA3: &str = "meta-llama/Meta-Llama-3-8B-Instruct";
const QWEN3: &str = "Qwen/Qwen3-8B";
const MISTRAL: &str = "mistralai/Mistral-7B-v0.1";
const GEMMA: &str = "google/gemma-3-4b-it";
const DEEPSEEK: &str = "deepseek-ai/DeepSeek-V3";
const MINILM: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// SentencePiece BPE `.model` files (the native backend), and a Unigram one.
const SPM_V1: &str = "fixtures/sentencepiece/mistral-tokenizer.model.v1";
const SPM_V3: &str = "fixtures/sentencepiece/mistral_instruct_tokenizer_240323.model.v3";
const SPM_V7: &str = "fixtures/sentencepiece/mistral_instruct_tokenizer_241114.model.v7";
const SPM_UNIGRAM: &str = "fixtures/sentencepiece/spm-test_model.model";

/// Every shared tokenizer: the 11 hub ones and two tiktoken encodings.
const ALL: &[&str] = &[
    LLAMA3,
    "meta-llama/Llama-3.2-1B-Instruct",
    MISTRAL,
    "mistralai/Mistral-Nemo-Instruct-2407",
    QWEN3,
    DEEPSEEK,
    GEMMA,
    "openai/gpt-oss-20b",
    "CohereForAI/c4ai-command-r-plus",
    "Xenova/gpt-3.5-turbo",
    MINILM,
    "o200k_base",
    "cl100k_base",
];

/// Byte-level BPE tokenizers (regex family).
const BYTE_LEVEL: &[&str] = &[
    LLAMA3,
    QWEN3,
    DEEPSEEK,
    "openai/gpt-oss-20b",
    "o200k_base",
    "cl100k_base",
];

fn corpus_files() -> Vec<PathBuf> {
    let root = shared_dir().join("corpus");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).unwrap() {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).unwrap() {
                out.push(f.unwrap().path());
            }
        }
    }
    out.sort();
    assert!(
        out.len() >= 30,
        "corpus incomplete under {}",
        root.display()
    );
    out
}

/// The adversarial generator's output (a quarter of its default size).
static ADVERSARIAL: LazyLock<Vec<PathBuf>> = LazyLock::new(|| {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("adversarial-lopt");
    if !out.join("index.tsv").exists() {
        let script = shared_dir().join("corpus/make_adversarial.py");
        let status = std::process::Command::new("python3")
            .arg(&script)
            .args(["--scale", "0.25"])
            .arg(&out)
            .status()
            .unwrap_or_else(|e| {
                panic!(
                    "python3 is needed to run {} (adversarial inputs): {e}",
                    script.display()
                )
            });
        assert!(status.success(), "{} failed", script.display());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    files
});

// ------------------------------------------------------------- helpers ----

/// xorshift64: deterministic randomness without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A slice of at most `len` bytes of `text` starting near `start`.
fn slice(text: &str, start: usize, len: usize) -> &str {
    let s = floor_boundary(text, start);
    let e = floor_boundary(text, s.saturating_add(len));
    &text[s..e]
}

/// Random chunk starts with gaps in `[min, max]` bytes.
fn random_starts(rng: &mut Rng, len: usize, min: usize, max: usize) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut p = 0;
    loop {
        p += min + rng.below(max - min + 1);
        if p >= len {
            return starts;
        }
        starts.push(p);
    }
}

fn with_overlap(t: &Tokenizer, overlap_chars: usize) -> Tokenizer {
    t.with_parallel(ParallelOptions {
        mode: ParallelMode::Always,
        overlap_chars,
        ..ParallelOptions::default()
    })
}

/// Encodes `text` in parallel with chunks starting near `starts` and asserts
/// the result is the sequential one, id for id (and offset for offset).
fn check(
    t: &Tokenizer,
    name: &str,
    text: &str,
    starts: &[usize],
    add_special_tokens: bool,
    offsets: bool,
) -> ParallelReport {
    let got = t
        .encode_with(text, &split(add_special_tokens, offsets, Some(starts)))
        .unwrap_or_else(|e| panic!("{name}: parallel encode failed: {e}"));
    let report = report_of(&got);
    let want = if offsets {
        t.encode_with(text, &common::sequential_offsets(add_special_tokens))
    } else {
        t.encode_with(text, &common::sequential(add_special_tokens))
    }
    .unwrap();
    assert_same(name, text, &got, &want, &report, starts);
    report
}

/// Options for a forced split (the report's path): chunks starting near
/// `starts` when given, else where the handle's options put them.
fn split(add_special_tokens: bool, offsets: bool, starts: Option<&[usize]>) -> EncodeOptions {
    let parallelism = match starts {
        Some(starts) => Parallelism::SplitAt(starts.to_vec()),
        None => Parallelism::Split,
    };
    EncodeOptions::new()
        .with_add_special_tokens(add_special_tokens)
        .with_offsets(offsets)
        .with_parallelism(parallelism)
}

/// The report a forced split's encoding carries.
fn report_of(encoding: &Encoding) -> ParallelReport {
    encoding
        .parallel_report()
        .cloned()
        .expect("a forced split carries its report")
}

fn assert_same(
    name: &str,
    text: &str,
    got: &Encoding,
    want: &Encoding,
    report: &ParallelReport,
    starts: &[usize],
) {
    if got == want {
        return;
    }
    let i = got
        .ids()
        .iter()
        .zip(want.ids())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let context = |e: &Encoding| e.ids()[i.saturating_sub(3)..(i + 3).min(e.len())].to_vec();
    let shown: String = text.chars().take(120).collect();
    panic!(
        "{name}: parallel != sequential at id {i} ({} vs {} ids; ids equal: {}): parallel {:?}, \
         sequential {:?}; {report:?}; {} starts (first {:?}); text starts {shown:?}",
        got.len(),
        want.len(),
        got.ids() == want.ids(),
        context(got),
        context(want),
        starts.len(),
        &starts[..starts.len().min(8)],
    );
}

#[derive(Default)]
struct Tally {
    runs: usize,
    cuts: usize,
    intra: usize,
    grows: usize,
    fallbacks: usize,
}

impl Tally {
    fn add(&mut self, r: &ParallelReport) {
        self.runs += 1;
        self.cuts += r.cuts;
        self.intra += r.intra_word_cuts;
        self.grows += r.grows;
        self.fallbacks += usize::from(r.fallback.is_some());
    }

    fn print(&self, what: &str) {
        println!(
            "{what}: {} runs, {} cuts checked ({} intra-word), {} grows, {} sequential fallbacks, 0 mismatches",
            self.runs, self.cuts, self.intra, self.grows, self.fallbacks
        );
    }
}

/// Small-chunk differential runs over `files` (a slice of each) for one tokenizer.
fn differential(source: &str, files: &[PathBuf], slice_len: usize, seed: u64) -> Tally {
    let base = tok(source);
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    // (chunk gap range, overlap chars, with offsets)
    let configs = [
        ((64, 400), 1024, false),
        ((300, 4096), 128, false),
        ((400, 1600), 512, true),
    ];
    for path in files {
        let full = std::fs::read_to_string(path).unwrap();
        let text = slice(
            &full,
            rng.below(full.len().saturating_sub(slice_len).max(1)),
            slice_len,
        );
        for &((min, max), overlap, offsets) in &configs {
            let t = with_overlap(&base, overlap);
            let starts = random_starts(&mut rng, text.len(), min, max);
            let name = format!(
                "{source} {} chunks {min}-{max} overlap {overlap}",
                path.display()
            );
            let r = check(&t, &name, text, &starts, !offsets, offsets);
            tally.add(&r);
        }
    }
    tally
}

// ------------------------------------------------- corpus differential ----

macro_rules! corpus_tests {
    ($($name:ident => $source:expr,)*) => {$(
        #[test]
        fn $name() {
            let mut files = corpus_files();
            files.extend(ADVERSARIAL.iter().cloned());
            let tally = differential($source, &files, 48 * 1024, 0x9e37_79b9_7f4a_7c15);
            tally.print(concat!("corpus+adversarial ", stringify!($name)));
            if tok($source).split_family().is_parallel() {
                assert!(tally.cuts > 100 * files.len(), "too few cuts: {}", tally.cuts);
            }
        }
    )*};
}

corpus_tests! {
    corpus_llama3 => LLAMA3,
    corpus_llama32 => "meta-llama/Llama-3.2-1B-Instruct",
    corpus_mistral7b => MISTRAL,
    corpus_mistral_nemo => "mistralai/Mistral-Nemo-Instruct-2407",
    corpus_qwen3 => QWEN3,
    corpus_deepseek_v3 => DEEPSEEK,
    corpus_gemma3 => GEMMA,
    corpus_gpt_oss => "openai/gpt-oss-20b",
    corpus_command_r => "CohereForAI/c4ai-command-r-plus",
    corpus_gpt35_hf => "Xenova/gpt-3.5-turbo",
    corpus_minilm => MINILM,
    corpus_o200k => "o200k_base",
    corpus_cl100k => "cl100k_base",
    corpus_spm_mistral_v1 => SPM_V1,
    corpus_spm_mistral_v3 => SPM_V3,
    corpus_spm_mistral_v7 => SPM_V7,
}

/// Whole corpus files with the default options (one chunk per thread), ids
/// and offsets, for a regex, a whole-text and a tiktoken tokenizer.
#[test]
fn whole_files_default_options() {
    let mut tally = Tally::default();
    for source in [LLAMA3, MISTRAL, "o200k_base", SPM_V1] {
        let t = tok(source).with_parallel(ParallelOptions {
            mode: ParallelMode::Always,
            chunks: Some(4),
            ..ParallelOptions::default()
        });
        for path in corpus_files() {
            let text = std::fs::read_to_string(&path).unwrap();
            let got = t.encode_with(&text, &split(true, false, None)).unwrap();
            let report = report_of(&got);
            let want = t.encode_with(&text, &common::sequential(true)).unwrap();
            assert_same(
                &format!("{source} {}", path.display()),
                &text,
                &got,
                &want,
                &report,
                &[],
            );
            tally.add(&report);
        }
    }
    tally.print("whole files");
}

// ---------------------------------------------------------- named cases ----

/// Every single chunk start at each char boundary of `text`, with each overlap.
fn every_split(source: &str, text: &str, overlaps: &[usize]) -> Tally {
    let base = tok(source);
    let mut tally = Tally::default();
    for &overlap in overlaps {
        let t = with_overlap(&base, overlap);
        for (i, _) in text.char_indices().skip(1) {
            let r = check(
                &t,
                &format!("{source} split {i} overlap {overlap}"),
                text,
                &[i],
                false,
                false,
            );
            tally.add(&r);
        }
    }
    tally
}

/// Every pair of chunk starts (short strings).
fn every_pair(source: &str, text: &str, overlap: usize) -> Tally {
    let t = with_overlap(&tok(source), overlap);
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let mut tally = Tally::default();
    for (k, &a) in bounds.iter().enumerate() {
        for &b in &bounds[k + 1..] {
            let r = check(
                &t,
                &format!("{source} pair {a},{b}"),
                text,
                &[a, b],
                false,
                true,
            );
            tally.add(&r);
        }
    }
    tally
}

#[test]
fn counterexample_fullwidth_digit_phase() {
    // Weaker rules accept a cut inside the fullwidth run: 99 identical tokens,
    // yet the \p{N}{1,3} groups are out of phase and the tail splits 234|5.
    let text = format!("1{}2345", "１".repeat(100));
    for source in [LLAMA3, "cl100k_base", "o200k_base"] {
        let tally = every_split(source, &text, &[8, 64, 1024]);
        tally.print(&format!("fullwidth digits {source}"));
    }
}

#[test]
fn counterexample_combining_mark_at_chunk_start() {
    // Qwen3: a chunk starting at a bare combining mark splits words
    // differently although the tokens look identical.
    let texts = [
        "e\u{301}<bos".to_owned(),
        format!(
            "word e\u{301}<bos and e\u{301}\u{301}x {}",
            "cafe\u{301} ".repeat(20)
        ),
    ];
    for text in &texts {
        every_split(QWEN3, text, &[2, 8, 64]).print("combining marks qwen3");
        every_pair(QWEN3, &text.chars().take(24).collect::<String>(), 8);
    }
}

#[test]
fn byte_tokens_inside_one_char() {
    // U+1D34 and U+3000 become several byte-level or byte-fallback tokens
    // sharing one char's span; no cut may fall between them.
    let text = format!(
        "a\u{1d34}\u{1d34}b \u{3000}\u{3000}c{}x",
        "\u{1d34}\u{3000}".repeat(30)
    );
    for source in [LLAMA3, QWEN3, "o200k_base", MISTRAL, GEMMA] {
        every_split(source, &text, &[3, 16, 1024]).print(&format!("byte tokens {source}"));
        every_pair(source, &text.chars().take(14).collect::<String>(), 6);
    }
}

#[test]
fn nfc_decomposed_accents_and_hangul_jamo() {
    let decomposed = "Vie\u{323}\u{302}t Nam, cafe\u{301}, A\u{30a}ngstro\u{308}m, \u{1100}\u{1161}\u{11a8}\u{1100}\u{1161} \u{1112}\u{1161}\u{11ab}\u{1100}\u{1173}\u{11af} ";
    let text = decomposed.repeat(12);
    for source in [QWEN3, "CohereForAI/c4ai-command-r-plus", MISTRAL, MINILM] {
        every_split(source, &text, &[4, 32, 1024]).print(&format!("nfc/jamo {source}"));
    }
    every_pair(QWEN3, &decomposed.chars().take(30).collect::<String>(), 5);
}

#[test]
fn digit_runs_mixed_scripts() {
    let mut rng = Rng(7);
    let digits = ['1', '2', '3', '１', '２', '٣', '٤', '७'];
    let mut text = String::new();
    for len in [
        1, 2, 3, 4, 5, 6, 7, 9, 10, 16, 31, 32, 33, 64, 100, 127, 128, 129, 200, 255, 256, 301,
    ] {
        for _ in 0..len {
            text.push(digits[rng.below(digits.len())]);
        }
        text.push_str(if len % 2 == 0 { " x " } else { "a" });
    }
    let pure: String = (0..100_000)
        .map(|i| char::from(b'0' + (i * 7 % 10) as u8))
        .collect();
    for source in BYTE_LEVEL.iter().copied().chain([MISTRAL, GEMMA, MINILM]) {
        let base = tok(source);
        let mut tally = Tally::default();
        for overlap in [16, 128, 1024] {
            let t = with_overlap(&base, overlap);
            for _ in 0..6 {
                let starts = random_starts(&mut rng, text.len(), 20, 400);
                tally.add(&check(
                    &t,
                    &format!("{source} digits"),
                    &text,
                    &starts,
                    false,
                    false,
                ));
            }
        }
        let t = with_overlap(&base, 1024);
        let starts = random_starts(&mut rng, pure.len(), 4000, 12000);
        tally.add(&check(
            &t,
            &format!("{source} 100 KB digits"),
            &pure,
            &starts,
            false,
            false,
        ));
        tally.print(&format!("digit runs {source}"));
    }
}

#[test]
fn whitespace_runs() {
    let units = [" ", "\n", "\r\n", "\t", " \n \n", "\u{3000}", "\u{a0}"];
    let mut text = String::new();
    for (k, unit) in units.iter().enumerate() {
        for n in [1, 2, 3, 7, 16, 31, 64, 100, 199, 200] {
            text.push_str(&unit.repeat(n));
            text.push_str(if (n + k) % 2 == 0 { "word" } else { ".x" });
        }
    }
    let mut rng = Rng(11);
    for &source in ALL {
        let base = tok(source);
        let mut tally = Tally::default();
        for overlap in [8, 64, 512] {
            let t = with_overlap(&base, overlap);
            for _ in 0..4 {
                let starts = random_starts(&mut rng, text.len(), 16, 300);
                tally.add(&check(
                    &t,
                    &format!("{source} whitespace"),
                    &text,
                    &starts,
                    false,
                    overlap == 64,
                ));
            }
        }
        tally.print(&format!("whitespace runs {source}"));
    }
}

#[test]
fn long_strings_without_whitespace() {
    const N: usize = 100_000;
    let mut rng = Rng(13);
    let letters: String = (0..N)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect();
    let printable: String = (0..N)
        .map(|_| char::from(b'!' + rng.below(94) as u8))
        .collect();
    let cases = [
        ("a".repeat(N), "a*N"),
        ("ab".repeat(N / 2), "ab*N"),
        (letters, "letters"),
        (printable, "printable"),
    ];
    for source in [LLAMA3, QWEN3, "o200k_base", MISTRAL, GEMMA, MINILM] {
        let mut tally = Tally::default();
        for (text, what) in &cases {
            let t = with_overlap(&tok(source), 1024);
            let starts = random_starts(&mut rng, text.len(), 8000, 30000);
            let r = check(&t, &format!("{source} {what}"), text, &starts, false, false);
            if source == LLAMA3 && *what == "letters" {
                assert!(
                    r.intra_word_cuts > 0,
                    "the intra-word rule should cut random letters: {r:?}"
                );
            }
            tally.add(&r);
        }
        tally.print(&format!("no whitespace {source}"));
    }
}

#[test]
fn punctuation_runs() {
    let mut text = String::new();
    for unit in [".", "-", "=", "…"] {
        for n in [1, 2, 3, 4, 10, 16, 50, 100, 255, 256, 500] {
            text.push_str(&unit.repeat(n));
            text.push_str(" and ");
        }
    }
    let mut rng = Rng(17);
    for &source in ALL {
        let t = with_overlap(&tok(source), 1024);
        let mut tally = Tally::default();
        for _ in 0..4 {
            let starts = random_starts(&mut rng, text.len(), 32, 600);
            tally.add(&check(
                &t,
                &format!("{source} punctuation"),
                &text,
                &starts,
                false,
                false,
            ));
        }
        tally.print(&format!("punctuation runs {source}"));
    }
}

#[test]
fn command_r_fold_fixups_at_chunk_edges() {
    // Command-R+'s plain-character vocabulary entries (☪ …) are replaced by
    // their merge results after the model runs; chunks must do the same.
    let text = "a ☪ b☪c ☪☪ ✡ ☯x ".repeat(8);
    every_split("CohereForAI/c4ai-command-r-plus", &text, &[3, 32, 1024])
        .print("fold fix-ups command-r");
}

#[test]
fn emoji_sequences() {
    let pieces = [
        "👨\u{200d}👩\u{200d}👧\u{200d}👦",
        "🇯🇵🇺🇸🇫",
        "👍🏻👍🏿",
        "🏴\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}",
        "1\u{fe0f}\u{20e3}",
        "\u{200d}",
    ];
    let text = pieces
        .iter()
        .cycle()
        .take(60)
        .map(|p| format!("{p} x"))
        .collect::<String>();
    for source in [LLAMA3, QWEN3, "o200k_base", MISTRAL, GEMMA, MINILM] {
        every_split(source, &text, &[4, 64]).print(&format!("emoji {source}"));
    }
}

#[test]
fn special_tokens_straddling_chunk_edges() {
    let cases: [(&str, &str); 7] = [
        (SPM_V3, "[INST]hi[/INST]there<s>x</s>[INST"),
        (
            QWEN3,
            "hi<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant<|im_",
        ),
        (MISTRAL, "<s>Hello</s> world<s> again <s"),
        (MINILM, "[CLS] one two [SEP] three [CLS][SEP] four"),
        (DEEPSEEK, "<｜User｜>hi<｜Assistant｜>there<｜User｜"),
        (
            LLAMA3,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
        ),
        (
            "o200k_base",
            "a<|endoftext|>b<|endoftext|><|endofprompt|>c<|endof",
        ),
    ];
    for (source, unit) in cases {
        let text = unit.repeat(3);
        every_split(source, &text, &[2, 16, 1024]).print(&format!("special tokens {source}"));
        every_pair(source, unit, 6).print(&format!("special tokens pairs {source}"));
    }
    // Gemma's added tokens include newline and tab runs.
    let text = format!(
        "a{}b{}c{}d",
        "\n".repeat(40),
        "\t".repeat(33),
        "\n\t".repeat(20)
    );
    every_split(GEMMA, &text, &[4, 64]).print("gemma newline/tab runs");
}

#[test]
fn cjk_without_spaces() {
    let full = std::fs::read_to_string(shared_dir().join("corpus/zh/hongloumeng.txt")).unwrap();
    let text: String = slice(&full, 100_000, 60_000)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let mut rng = Rng(19);
    for source in [
        LLAMA3,
        QWEN3,
        DEEPSEEK,
        "o200k_base",
        MISTRAL,
        GEMMA,
        MINILM,
    ] {
        let t = with_overlap(&tok(source), 1024);
        let mut tally = Tally::default();
        for _ in 0..3 {
            let starts = random_starts(&mut rng, text.len(), 1000, 6000);
            tally.add(&check(
                &t,
                &format!("{source} cjk"),
                &text,
                &starts,
                false,
                false,
            ));
        }
        tally.print(&format!("cjk {source}"));
        assert!(tally.cuts > 0, "{source}: no cut in CJK text");
    }
}

#[test]
fn whole_text_bpe_on_english() {
    let full = std::fs::read_to_string(shared_dir().join("corpus/en-prose/botchan.txt")).unwrap();
    let text = slice(&full, 20_000, 200_000);
    for source in [MISTRAL, GEMMA, SPM_V1, SPM_V7] {
        assert_eq!(tok(source).split_family(), SplitFamily::WholeTextBpe);
        let t = tok(source).with_parallel(ParallelOptions {
            mode: ParallelMode::Always,
            chunks: Some(8),
            ..ParallelOptions::default()
        });
        for offsets in [false, true] {
            let got = t.encode_with(text, &split(true, offsets, None)).unwrap();
            let report = report_of(&got);
            let want = if offsets {
                t.encode_with(text, &common::sequential_offsets(true))
            } else {
                t.encode_with(text, &common::sequential(true))
            }
            .unwrap();
            assert_same(source, text, &got, &want, &report, &[]);
            assert_eq!(
                report.cuts, 7,
                "{source}: every chunk should be stitched: {report:?}"
            );
        }
    }
}

#[test]
fn bert_words_longer_than_100_chars() {
    let long = "x".repeat(150);
    let text = format!(
        "short {long} words {}supercalifragilistic {long}y end",
        "ab".repeat(60)
    );
    every_split(MINILM, &text, &[4, 64, 1024]).print("bert long words");
}

#[test]
fn bos_eos_added_once_with_global_offsets() {
    let full =
        std::fs::read_to_string(shared_dir().join("corpus/en-prose/tinyshakespeare.txt")).unwrap();
    let text = slice(&full, 0, 50_000);
    for source in [LLAMA3, MINILM, MISTRAL] {
        let t = with_overlap(&tok(source), 1024);
        let starts: Vec<usize> = (1..10).map(|i| i * text.len() / 10).collect();
        let report = check(&t, source, text, &starts, true, true);
        assert!(report.cuts >= 8, "{source}: {report:?}");
        let enc = t.encode_with(text, &common::offsets(true)).unwrap();
        let offsets = enc.offsets().unwrap();
        assert!(
            offsets.windows(2).all(|w| w[0].0 <= w[1].0),
            "{source}: offsets go backwards"
        );
    }
}

/// Long outputs (720 KB of prose, Chinese and code, about 190K ids), where
/// the first chunk's buffer is sized for the whole text and adopted
/// (invariant `lopt-equals-sequential`) or, under a BOS, copied: every shared tokenizer on pools of
/// one, two and five threads, with BOS/EOS and without, in `Auto` and in
/// `Always` with uneven chunks, and with offsets, must equal the
/// sequential encoding (DESIGN.md invariant `lopt-equals-sequential`).
#[test]
fn long_outputs_on_pools_of_every_size() {
    let mut text = String::new();
    for f in [
        "corpus/en-prose/pride-and-prejudice.txt",
        "corpus/zh/hongloumeng.txt",
        "corpus/code/rust.txt",
    ] {
        let full = std::fs::read_to_string(shared_dir().join(f)).unwrap();
        text.push_str(slice(&full, 10_000, 240_000));
    }
    assert!(text.len() > 600 << 10, "{}", text.len());
    for threads in [1, 2, 5] {
        let pool = std::sync::Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap(),
        );
        for &source in ALL {
            let base = tok(source);
            for special in [true, false] {
                let want = base
                    .encode_with(&text, &common::sequential(special))
                    .unwrap();
                for (mode, chunk_bytes) in [
                    (ParallelMode::Auto, None),
                    (ParallelMode::Always, Some(97_001)),
                ] {
                    let t = base.with_parallel(ParallelOptions {
                        mode,
                        chunk_bytes,
                        pool: Some(pool.clone()),
                        ..ParallelOptions::default()
                    });
                    let name = format!("{source}, {threads} threads, {mode:?}, special {special}");
                    let got = t.encode(&text, special).unwrap();
                    assert_same(&name, &text, &got, &want, &ParallelReport::default(), &[]);
                }
            }
        }
        let t = tok(LLAMA3).with_parallel(ParallelOptions {
            mode: ParallelMode::Always,
            pool: Some(pool.clone()),
            ..ParallelOptions::default()
        });
        let want = tok(LLAMA3)
            .encode_with(&text, &common::sequential_offsets(true))
            .unwrap();
        let got = t.encode_with(&text, &common::offsets(true)).unwrap();
        assert_same(
            "offsets",
            &text,
            &got,
            &want,
            &ParallelReport::default(),
            &[],
        );
    }
}

// ------------------------------------------------------------- proptest ----

fn hostile_char() -> impl Strategy<Value = char> {
    prop::sample::select(vec![
        'a', 'b', 'Z', ' ', ' ', '\n', '\r', '\t', '1', '7', '１', '٣', 'e', '\u{301}', '\u{302}',
        '.', '…', '-', '\'', 's', '<', '|', '>', 'é', '한', '\u{1100}', '\u{1161}', '\u{11a8}',
        '中', '文', '👍', '\u{200d}', '🏻', '\u{3000}', '\u{a0}', 'ᴴ', 'Σ', '\u{fe0f}', '_',
    ])
}

fn hostile_string(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(hostile_char(), 0..max).prop_map(|v| v.into_iter().collect())
}

const PROP_TOKENIZERS: &[&str] = &[LLAMA3, QWEN3, MISTRAL, GEMMA, MINILM, "o200k_base", SPM_V3];

proptest! {
    #![proptest_config(ProptestConfig { cases: common::proptest_cases(200), ..ProptestConfig::default() })]

    /// Every pair of chunk starts on short hostile strings.
    #[test]
    fn prop_every_split_pair(text in hostile_string(28), overlap in 1usize..12, which in 0..PROP_TOKENIZERS.len()) {
        every_pair(PROP_TOKENIZERS[which], &text, overlap);
    }

    /// Random chunk sizes on long hostile strings (with offsets).
    #[test]
    fn prop_random_chunks(text in hostile_string(3000), seed in any::<u64>(), overlap in 1usize..200, which in 0..PROP_TOKENIZERS.len()) {
        let mut rng = Rng(seed | 1);
        let starts = random_starts(&mut rng, text.len(), 8, 700);
        let t = with_overlap(&tok(PROP_TOKENIZERS[which]), overlap);
        check(&t, "proptest", &text, &starts, true, seed % 2 == 0);
    }
}

// ------------------------------------------------------- fallback paths ----

/// A 2,000-digit run: Llama-3 groups digits by three from the run's start,
/// so a chunk starting one digit off never shares a boundary with its left
/// neighbour inside the run.
fn digits(n: usize) -> String {
    (0..n)
        .map(|i| char::from(b'0' + (i * 3 % 10) as u8))
        .collect()
}

#[test]
fn fallback_no_cut_grows() {
    let text = format!("{} tail words here", digits(2000));
    let t = tok(LLAMA3).with_parallel(ParallelOptions {
        mode: ParallelMode::Always,
        overlap_chars: 64,
        ..ParallelOptions::default()
    });
    let report = check(&t, "grow", &text, &[1000, 1900], false, false);
    assert!(report.grows >= 1, "expected a grow: {report:?}");
    assert_eq!(report.fallback, None);
}

#[test]
fn fallback_grow_limit_encodes_the_rest_in_one_piece() {
    let text = digits(20_000);
    let t = tok(LLAMA3).with_parallel(ParallelOptions {
        mode: ParallelMode::Always,
        overlap_chars: 32,
        max_retries: 100,
        ..ParallelOptions::default()
    });
    // Starts one digit past a group boundary (501 is a multiple of 3).
    let starts: Vec<usize> = (1..39).map(|i| i * 501 + 1).collect();
    let report = check(&t, "grow limit", &text, &starts, false, true);
    assert!(report.grow_limit, "expected the grow limit: {report:?}");
}

#[test]
fn fallback_retries_exhausted_goes_sequential() {
    let text = digits(6000);
    let t = tok(LLAMA3).with_parallel(ParallelOptions {
        mode: ParallelMode::Always,
        overlap_chars: 32,
        max_retries: 0,
        ..ParallelOptions::default()
    });
    let report = check(&t, "retries", &text, &[2000, 4001], true, false);
    assert_eq!(report.fallback, Some("retries"), "{report:?}");
}

#[test]
fn fallback_no_allowed_edge_goes_sequential() {
    // Gemma has added tokens made of newlines: no chunk edge inside a newline run.
    let text = "\n".repeat(5000);
    let t = with_overlap(&tok(GEMMA), 64);
    let report = check(&t, "edges", &text, &[1000, 2500], false, false);
    assert_eq!(report.fallback, Some("edges"), "{report:?}");
}

#[test]
fn sequential_families_and_never_mode() {
    // 300 KB: above the regex-BPE threshold, so the default handle splits.
    let text = "hello world ".repeat(25_000);
    let t = tok(LLAMA3).with_parallel(ParallelOptions::never());
    let got = t.encode_with(&text, &split(false, false, None)).unwrap();
    let report = report_of(&got);
    assert_eq!(report.fallback, Some("sequential family"));
    assert_eq!(
        got,
        t.encode_with(&text, &common::sequential(false)).unwrap()
    );
    // The default handle splits long inputs and stays exact.
    let t = tok(LLAMA3);
    assert_eq!(
        t.encode(&text, true).unwrap(),
        t.encode_with(&text, &common::sequential(true)).unwrap()
    );
    assert_eq!(
        t.encode_with(&text, &common::offsets(true)).unwrap(),
        t.encode_with(&text, &common::sequential_offsets(true))
            .unwrap()
    );
}

#[test]
fn families_of_the_shared_tokenizers() {
    let expect = [
        (LLAMA3, SplitFamily::RegexBpe),
        (QWEN3, SplitFamily::RegexBpe),
        (DEEPSEEK, SplitFamily::RegexBpe),
        ("openai/gpt-oss-20b", SplitFamily::RegexBpe),
        (
            "mistralai/Mistral-Nemo-Instruct-2407",
            SplitFamily::RegexBpe,
        ),
        ("CohereForAI/c4ai-command-r-plus", SplitFamily::RegexBpe),
        ("Xenova/gpt-3.5-turbo", SplitFamily::RegexBpe),
        ("o200k_base", SplitFamily::RegexBpe),
        ("cl100k_base", SplitFamily::RegexBpe),
        (MISTRAL, SplitFamily::WholeTextBpe),
        (GEMMA, SplitFamily::WholeTextBpe),
        (MINILM, SplitFamily::WordPiece),
        ("r50k_base", SplitFamily::RegexBpe),
        ("p50k_base", SplitFamily::RegexBpe),
        ("o200k_harmony", SplitFamily::RegexBpe),
    ];
    for (source, family) in expect {
        assert_eq!(tok(source).split_family(), family, "{source}");
    }
    // The native SentencePiece backend: BPE models are whole-text BPE,
    // Unigram stays sequential.
    for source in [SPM_V1, SPM_V3, SPM_V7] {
        assert_eq!(
            tok(source).split_family(),
            SplitFamily::WholeTextBpe,
            "{source}"
        );
    }
    let unigram = tok(SPM_UNIGRAM);
    assert!(!unigram.split_family().is_parallel());
    let text = "hello world ".repeat(20_000);
    let got = unigram
        .encode_with(&text, &split(true, false, None))
        .unwrap();
    let report = report_of(&got);
    assert_eq!(report.fallback, Some("sequential family"));
    assert_eq!(
        got,
        unigram
            .encode_with(&text, &common::sequential(true))
            .unwrap()
    );
}

/// The tiktoken encodings not in the corpus runs, and the Llama-3 rank file,
/// on a few files each.
#[test]
fn other_tiktoken_encodings() {
    let llama3_ranks = std::fs::read_dir(
        shared_dir().join("hf-cache/hub/models--meta-llama--Meta-Llama-3-8B-Instruct/snapshots"),
    )
    .unwrap()
    .map(|e| e.unwrap().path().join("original/tokenizer.model"))
    .find(|p| p.is_file())
    .expect("the Meta-Llama-3 snapshot holds original/tokenizer.model");
    let llama3_ranks = llama3_ranks.to_string_lossy().into_owned();
    let files: Vec<PathBuf> = corpus_files()
        .into_iter()
        .filter(|p| {
            [
                "python.txt",
                "ntrex-rus.txt",
                "cmath_testcases.txt",
                "twitter.json",
            ]
            .iter()
            .any(|n| p.ends_with(n))
        })
        .collect();
    for source in [
        "r50k_base",
        "p50k_base",
        "o200k_harmony",
        llama3_ranks.as_str(),
    ] {
        assert_eq!(
            tok(source).split_family(),
            SplitFamily::RegexBpe,
            "{source}"
        );
        differential(source, &files, 32 * 1024, 23).print(&format!("tiktoken {source}"));
    }
}

#[test]
fn metrics_count_parallel_encodes_retries_and_fallbacks() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    // A handle built while the recorder is installed: a fresh one, past the
    // registry (the tests of every file share this process and its registry,
    // and `loader` and `parity` load `cl100k_base` under `PlainText` too).
    let t = metrics::with_local_recorder(&recorder, || {
        LoadOptions::default()
            .with_special_tokens(router_tokenizer::SpecialTokenPolicy::PlainText)
            .with_bypass_registry(true)
            .load("cl100k_base")
            .unwrap()
    });
    let t = t.with_parallel(ParallelOptions {
        mode: ParallelMode::Always,
        overlap_chars: 32,
        max_retries: 0,
        ..ParallelOptions::default()
    });
    let text = "word ".repeat(2000);
    t.encode_with(&text, &split(false, false, Some(&[5000])))
        .unwrap();
    let digits = digits(6000);
    t.encode_with(&digits, &split(false, false, Some(&[2000, 4001])))
        .unwrap();
    let mut counts: HashMap<String, u64> = HashMap::new();
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        if let DebugValue::Counter(n) = value {
            let labels: Vec<String> = key
                .key()
                .labels()
                .map(|l| format!("{}={}", l.key(), l.value()))
                .collect();
            counts.insert(format!("{}{{{}}}", key.key().name(), labels.join(",")), n);
        }
    }
    assert_eq!(
        counts.get("rtok_parallel_encodes_total{tokenizer=cl100k_base,backend=tiktoken}"),
        Some(&2),
        "{counts:?}"
    );
    assert_eq!(
        counts.get(
            "rtok_parallel_retries_total{tokenizer=cl100k_base,backend=tiktoken,reason=no_cut}"
        ),
        Some(&1),
        "{counts:?}"
    );
    assert_eq!(
        counts.get(
            "rtok_parallel_fallbacks_total{tokenizer=cl100k_base,backend=tiktoken,reason=retries}"
        ),
        Some(&1),
        "{counts:?}"
    );
}

/// `rtok_parallel_encodes_total` as a handle made under `recorder` counts
/// it, summed over the snapshots (each reports what the counter gained
/// since the one before).
struct ParallelEncodes {
    snapshotter: metrics_util::debugging::Snapshotter,
    total: u64,
}

impl ParallelEncodes {
    fn new(recorder: &metrics_util::debugging::DebuggingRecorder) -> Self {
        Self {
            snapshotter: recorder.snapshotter(),
            total: 0,
        }
    }

    fn now(&mut self) -> u64 {
        self.total += self
            .snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .find_map(|(key, _, _, value)| match value {
                metrics_util::debugging::DebugValue::Counter(n)
                    if key.key().name() == "rtok_parallel_encodes_total" =>
                {
                    Some(n)
                }
                _ => None,
            })
            .unwrap_or(0);
        self.total
    }
}

/// `Auto`'s threshold follows the engine (`docs/perf/design_log/byte_level.md` (entry 363)):
/// Gemma-3 on the join
/// cuts and Mistral-7B's `tokenizer.json` on the SentencePiece route split
/// from 256 KiB, where a whole-text BPE on neither route (Gemma-3 with the
/// join cuts off, one BPE word per line) keeps the family's 64 KiB.
#[test]
fn the_auto_threshold_follows_the_engine() {
    use metrics_util::debugging::DebuggingRecorder;
    use router_tokenizer::__testing::{FastRoute, hf_json_route};
    // Two texts with no line in common.
    let text =
        std::fs::read_to_string(shared_dir().join("corpus/en-prose/pride-and-prejudice.txt"))
            .unwrap();
    let floor = |mut n: usize| {
        while !text.is_char_boundary(n) {
            n -= 1;
        }
        n
    };
    let (a, b) = (floor(128 << 10), floor(428 << 10));
    let (mid, long) = (&text[..a], &text[a..b]);
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap(),
    );
    let gemma = common::snapshot_file(GEMMA, "tokenizer.json");
    let policy = router_tokenizer::SpecialTokenPolicy::Parse;
    // Loaded under the recorder, so the handle counts into it.
    let load = |which| match which {
        Some(joins) => {
            hf_json_route(&gemma, policy, FastRoute::JoinCuts, joins)
                .unwrap()
                .0
        }
        None => common::offline_options()
            .with_bypass_registry(true)
            .load(MISTRAL)
            .unwrap(),
    };
    for (what, which, splits_mid) in [
        ("Gemma-3 on the join cuts", Some(true), false),
        ("Gemma-3 without them", Some(false), true),
        ("Mistral-7B on the SentencePiece route", None, false),
    ] {
        let recorder = DebuggingRecorder::new();
        let mut count = ParallelEncodes::new(&recorder);
        let t = metrics::with_local_recorder(&recorder, || {
            load(which).with_parallel(ParallelOptions {
                pool: Some(pool.clone()),
                ..ParallelOptions::default()
            })
        });
        t.encode(mid, false).unwrap();
        assert_eq!(count.now(), u64::from(splits_mid), "{what}: 128 KiB");
        t.encode(long, false).unwrap();
        assert_eq!(count.now(), u64::from(splits_mid) + 1, "{what}: 300 KiB");
    }
}
