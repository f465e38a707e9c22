//! The pre-tokens of ASCII text for the byte-level pattern families, found
//! 64 bytes at a time on bit masks; the rest of a text goes to the native
//! grammar.
//!
//! Performance notes (`docs/perf/byte_engine_2026-12-03.md`, third
//! session): on text seen once the native grammar (`bitcannon`'s bit
//! streams, Unicode classes) was 15–27 % of encoding code, 2.4–3.1 ns a
//! byte; a scanner that walks the pieces one at a time was slower still
//! (3.9 ns a byte: a mispredicted branch or two a piece, whatever the
//! piece is). Prose and code are nearly all ASCII, where every class of
//! these patterns is a byte compare, so [`bulk`] classifies a block of 64
//! bytes into one bit mask per class (SSE2) and derives every piece start
//! of the block with whole-mask operations; only the rare shapes whose
//! starts the masks do not settle (a run of four digits or more where
//! numbers group by three, a blank line's whitespace between two
//! newlines) are cut again by the piece-at-a-time [`scan`], between safe
//! boundaries around them. The blocks are classified and their starts
//! derived in one pass (a block behind the classification; the fills
//! carry a bit between blocks), and the pieces come from the start bits
//! into a reserved vector: 0.8 ns a byte on ASCII code and prose against
//! the native grammar's 1.0–1.1 (cl100k family) and 2.0–2.1 (o200k).
//!
//! Invariant `ascii-pieces-equal-regex`: on ASCII text each [`Grammar`]'s
//! pieces are its regex's (`pieces_match_the_regex` and
//! `bulk_equals_scan` check both scanners on random text of the bytes the
//! patterns tell apart). A text holding other bytes is cut at **safe
//! boundaries**: a space right after a printable, non-space ASCII byte. No
//! piece of these patterns holds such a pair (a piece is whitespace only,
//! or starts with at most one space or prefix byte and holds no space
//! after its first byte), and none looks behind, so each side of a safe
//! boundary splits alone as it does in the whole text. The regions between
//! safe boundaries that hold a non-ASCII byte go to the caller's splitter.

use std::cell::RefCell;

use tokenizers::pipeline::Span;

/// A pattern family the scanners know, with its variants' parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grammar {
    /// cl100k / Llama-3 (`digits` 3) and Qwen2 (1):
    /// `(?i:'s|…|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
    Words { digits: usize },
    /// o200k / gpt-oss (`digits` 3, `contractions`) and Tekken (1, none):
    /// letters split by case (`[\p{Lu}…]*[\p{Ll}…]+` then `[\p{Lu}…]+[\p{Ll}…]*`,
    /// each with an optional prefix byte and `(?i:'s|…|'d)?`), and
    /// punctuation trailed by `[\r\n/]*`.
    CaseWords { digits: usize, contractions: bool },
}

/// The patterns each grammar reproduces, as the crate's tables spell them
/// (`tokenizer.json` files and tiktoken's sources).
const PATTERNS: &[(&str, Grammar)] = &[
    (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        Grammar::Words { digits: 3 },
    ),
    (
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        Grammar::Words { digits: 1 },
    ),
    (
        crate::contract::family::O200K_TIKTOKEN_PATTERN,
        Grammar::CaseWords {
            digits: 3,
            contractions: true,
        },
    ),
    (
        crate::contract::family::TEKKEN_PATTERN,
        Grammar::CaseWords {
            digits: 1,
            contractions: false,
        },
    ),
];

impl Grammar {
    /// The grammar of `pattern` (literal CR and LF read as their escapes),
    /// if the scanners know it.
    pub(crate) fn of(pattern: &str) -> Option<Self> {
        let pattern = pattern.replace('\r', "\\r").replace('\n', "\\n");
        PATTERNS
            .iter()
            .find(|(known, _)| *known == pattern)
            .map(|&(_, g)| g)
    }

    fn digits(self) -> usize {
        match self {
            Self::Words { digits } | Self::CaseWords { digits, .. } => digits,
        }
    }
}

// ---------------------------------------------------------------------
// The piece-at-a-time scanner: the reference the masks are checked
// against, and the cutter of the shapes they leave.

// Byte classes (ASCII only: the scanners never see a byte past 0x7F).
const LETTER: u8 = 1;
const UPPER: u8 = 2;
const LOWER: u8 = 4;
const DIGIT: u8 = 8;
const SPACE: u8 = 16;
const NEWLINE: u8 = 32;

/// Each ASCII byte's classes; `\s` is Unicode's White_Space (TAB to CR and
/// the space).
const CLASS: [u8; 128] = {
    let mut class = [0u8; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        class[b] = if c.is_ascii_uppercase() {
            LETTER | UPPER
        } else if c.is_ascii_lowercase() {
            LETTER | LOWER
        } else if c.is_ascii_digit() {
            DIGIT
        } else if c == b'\r' || c == b'\n' {
            SPACE | NEWLINE
        } else if (c >= 0x09 && c <= 0x0d) || c == b' ' {
            SPACE
        } else {
            0
        };
        b += 1;
    }
    class
};

#[inline(always)]
fn class(bytes: &[u8], at: usize) -> u8 {
    bytes
        .get(at)
        .and_then(|&b| CLASS.get(usize::from(b)))
        .copied()
        .unwrap_or(0)
}

/// The end of the run of bytes with any of `classes` from `at`.
#[inline(always)]
fn run(bytes: &[u8], mut at: usize, classes: u8) -> usize {
    while at < bytes.len() && class(bytes, at) & classes != 0 {
        at += 1;
    }
    at
}

/// The end of the run of punctuation (`[^\s\p{L}\p{N}]`) from `at`.
#[inline(always)]
fn punct_run(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && class(bytes, at) & (LETTER | DIGIT | SPACE) == 0 {
        at += 1;
    }
    at
}

/// The length of the contraction (`'s 't 're 've 'm 'll 'd`, any case) at
/// `at`, a quote; 0 for none.
#[inline(always)]
fn contraction(bytes: &[u8], at: usize) -> usize {
    let (Some(&a), b) = (bytes.get(at + 1), bytes.get(at + 2).copied()) else {
        return 0;
    };
    match (a.to_ascii_lowercase(), b.map(|b| b.to_ascii_lowercase())) {
        (b's' | b't' | b'm' | b'd', _) => 2,
        (b'r' | b'v', Some(b'e')) | (b'l', Some(b'l')) => 3,
        _ => 0,
    }
}

/// `\s*[\r\n]+|\s+(?!\S)|\s+` at `at`, a whitespace byte.
#[inline(always)]
fn whitespace(bytes: &[u8], at: usize) -> usize {
    let end = run(bytes, at, SPACE);
    // `\s*` takes the run, then gives bytes back to the last newline.
    let mut last = end;
    while last > at {
        last -= 1;
        if class(bytes, last) & NEWLINE != 0 {
            return last + 1;
        }
    }
    // `\s+(?!\S)` leaves the run's last byte to the piece after it; a run
    // of one before a non-space is `\s+`'s.
    if end == bytes.len() || end - at == 1 {
        end
    } else {
        end - 1
    }
}

/// The end of the piece of `grammar` that starts at `at` in `bytes`
/// (ASCII).
#[inline(always)]
fn piece_end(grammar: Grammar, bytes: &[u8], at: usize) -> usize {
    let c = class(bytes, at);
    let next = class(bytes, at + 1);
    let prefixed = c & (LETTER | DIGIT | NEWLINE) == 0 && next & LETTER != 0;
    // At most `digits` bytes: a long number is cut a group at a time,
    // never scanned to its end once a group.
    let digits = |at: usize| {
        let most = bytes.len().min(at + grammar.digits());
        run(bytes.get(..most).unwrap_or_default(), at + 1, DIGIT)
    };
    match grammar {
        Grammar::Words { .. } => {
            if c & LETTER != 0 {
                return run(bytes, at + 1, LETTER);
            }
            if bytes.get(at) == Some(&b'\'') {
                let n = contraction(bytes, at);
                if n > 0 {
                    return at + n;
                }
            }
            if prefixed {
                return run(bytes, at + 2, LETTER);
            }
            if c & DIGIT != 0 {
                return digits(at);
            }
            punct_or_space(bytes, at, c, next, false)
        }
        Grammar::CaseWords { contractions, .. } => {
            let letters = if c & LETTER != 0 {
                Some(at)
            } else if prefixed {
                Some(at + 1)
            } else {
                None
            };
            if let Some(from) = letters {
                // `[\p{Lu}…]*[\p{Ll}…]+`, or failing it `[\p{Lu}…]+`.
                let upper = run(bytes, from, UPPER);
                let mut end = run(bytes, upper, LOWER).max(upper);
                if contractions && bytes.get(end) == Some(&b'\'') {
                    end += contraction(bytes, end);
                }
                return end;
            }
            if c & DIGIT != 0 {
                return digits(at);
            }
            punct_or_space(bytes, at, c, next, true)
        }
    }
}

/// ` ?[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*`), else the whitespace
/// alternatives.
#[inline(always)]
fn punct_or_space(bytes: &[u8], at: usize, c: u8, next: u8, slash: bool) -> usize {
    let from = if c & SPACE == 0 {
        at
    } else if bytes.get(at) == Some(&b' ')
        && at + 1 < bytes.len()
        && next & (LETTER | DIGIT | SPACE) == 0
    {
        at + 1
    } else {
        return whitespace(bytes, at);
    };
    let mut end = punct_run(bytes, from + 1);
    while let Some(&b) = bytes.get(end) {
        if class(bytes, end) & NEWLINE != 0 || (slash && b == b'/') {
            end += 1;
        } else {
            break;
        }
    }
    end
}

/// The piece starts of `bytes` (ASCII, a whole text for the pattern), one
/// at a time, into `starts` (bit `i` of word `i / 64`, `offset` added).
fn scan(grammar: Grammar, bytes: &[u8], offset: usize, starts: &mut [u64]) {
    let mut at = 0;
    while at < bytes.len() {
        set(starts, offset + at);
        // Every byte starts a piece of these patterns: the end moves on.
        at = piece_end(grammar, bytes, at).max(at + 1);
    }
}

#[inline]
fn set(bits: &mut [u64], at: usize) {
    if let Some(word) = bits.get_mut(at / 64) {
        *word |= 1 << (at % 64);
    }
}

#[inline]
fn clear(bits: &mut [u64], at: usize) {
    if let Some(word) = bits.get_mut(at / 64) {
        *word &= !(1 << (at % 64));
    }
}

// ---------------------------------------------------------------------
// The masks.

/// One 64-byte block's class masks (bit `i`: byte `i` of the block).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Block {
    /// Bytes of the text (the last block may be short).
    valid: u64,
    upper: u64,
    lower: u64,
    digit: u64,
    space: u64,
    newline: u64,
    blank: u64,
    quote: u64,
    slash: u64,
}

impl Block {
    fn letter(&self) -> u64 {
        self.upper | self.lower
    }

    /// `[^\s\p{L}\p{N}]`.
    fn punct(&self) -> u64 {
        self.valid & !(self.letter() | self.digit | self.space)
    }
}

/// How a block's bytes are classified: one instruction set's compares.
/// [`bulk_with`] is compiled once per classifier, each copy with its
/// instruction set enabled, so the classifier inlines into the pass.
trait Classify {
    /// The masks of `chunk` (ASCII; bytes past `len` are not the text's).
    fn classify(chunk: &[u8; 64], len: usize) -> Block;
}

/// The baseline: SSE2 on x86-64, a byte at a time elsewhere.
struct Baseline;

impl Classify for Baseline {
    #[inline(always)]
    fn classify(chunk: &[u8; 64], len: usize) -> Block {
        classify(chunk, len)
    }
}

/// AVX-512BW: a block is one register and each class one compare into a
/// mask register (SSE2 takes four loads, and a compare and a `movemask`
/// per class and quarter).
#[cfg(target_arch = "x86_64")]
struct Avx512;

#[cfg(target_arch = "x86_64")]
impl Classify for Avx512 {
    #[inline(always)]
    fn classify(chunk: &[u8; 64], len: usize) -> Block {
        // SAFETY: `Avx512` is used only in `bulk_avx512`, which runs only
        // where AVX-512BW was detected.
        unsafe { classify_avx512(chunk, len) }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
fn classify_avx512(chunk: &[u8; 64], len: usize) -> Block {
    use std::arch::x86_64::{
        __m512i, _mm512_cmpeq_epi8_mask, _mm512_cmplt_epu8_mask, _mm512_loadu_si512,
        _mm512_set1_epi8, _mm512_sub_epi8,
    };
    // SAFETY: `chunk` is 64 bytes, and the load has no alignment requirement.
    let v = unsafe { _mm512_loadu_si512(chunk.as_ptr().cast::<__m512i>()) };
    let valid = if len >= 64 { u64::MAX } else { (1 << len) - 1 };
    // `lo..lo + n` as one unsigned compare of the bytes less `lo`.
    let within = |lo: u8, n: u8| {
        _mm512_cmplt_epu8_mask(
            _mm512_sub_epi8(v, _mm512_set1_epi8(lo as i8)),
            _mm512_set1_epi8(n as i8),
        ) & valid
    };
    let is = |b: u8| _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b as i8)) & valid;
    let blank = is(b' ');
    Block {
        valid,
        upper: within(b'A', 26),
        lower: within(b'a', 26),
        digit: within(b'0', 10),
        space: within(0x09, 5) | blank,
        newline: is(b'\n') | is(b'\r'),
        blank,
        quote: is(b'\''),
        slash: is(b'/'),
    }
}

/// The masks of `chunk` (ASCII; bytes past `len` are not the text's).
#[cfg(target_arch = "x86_64")]
#[inline]
fn classify(chunk: &[u8; 64], len: usize) -> Block {
    // SAFETY: SSE2 is part of every x86-64 target.
    unsafe { classify_sse2(chunk, len) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn classify_sse2(chunk: &[u8; 64], len: usize) -> Block {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8,
    };
    let mut block = Block {
        valid: if len >= 64 { u64::MAX } else { (1 << len) - 1 },
        ..Block::default()
    };
    for (q, part) in chunk.chunks_exact(16).enumerate() {
        // SAFETY: `part` is 16 bytes (`chunks_exact`), and the load has no
        // alignment requirement.
        let v = unsafe { _mm_loadu_si128(part.as_ptr().cast::<__m128i>()) };
        let bits = |m: __m128i| u64::from(_mm_movemask_epi8(m) as u16) << (16 * q);
        // Bytes are ASCII (non-negative as `i8`), so signed compares order them.
        let within = |lo: u8, hi: u8| {
            _mm_and_si128(
                _mm_cmpgt_epi8(v, _mm_set1_epi8(lo as i8 - 1)),
                _mm_cmpgt_epi8(_mm_set1_epi8(hi as i8 + 1), v),
            )
        };
        let is = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
        block.upper |= bits(within(b'A', b'Z'));
        block.lower |= bits(within(b'a', b'z'));
        block.digit |= bits(within(b'0', b'9'));
        block.space |= bits(_mm_or_si128(within(0x09, 0x0d), is(b' ')));
        block.newline |= bits(_mm_or_si128(is(b'\n'), is(b'\r')));
        block.blank |= bits(is(b' '));
        block.quote |= bits(is(b'\''));
        block.slash |= bits(is(b'/'));
    }
    let valid = block.valid;
    for mask in [
        &mut block.upper,
        &mut block.lower,
        &mut block.digit,
        &mut block.space,
        &mut block.newline,
        &mut block.blank,
        &mut block.quote,
        &mut block.slash,
    ] {
        *mask &= valid;
    }
    block
}

/// The masks of `chunk` (ASCII; bytes past `len` are not the text's), a
/// byte at a time where SSE2 is not there.
#[cfg(not(target_arch = "x86_64"))]
fn classify(chunk: &[u8; 64], len: usize) -> Block {
    classify_by_table(chunk, len)
}

/// The masks of `chunk` a byte at a time from [`CLASS`]: the classifier
/// of other targets, and what the vector ones are tested against.
#[cfg(any(test, not(target_arch = "x86_64")))]
fn classify_by_table(chunk: &[u8; 64], len: usize) -> Block {
    let mut block = Block {
        valid: if len >= 64 { u64::MAX } else { (1 << len) - 1 },
        ..Block::default()
    };
    for (i, &b) in chunk.iter().enumerate().take(len) {
        let bit = 1u64 << i;
        let c = CLASS.get(usize::from(b)).copied().unwrap_or(0);
        let on = |m: &mut u64, yes: bool| *m |= if yes { bit } else { 0 };
        on(&mut block.upper, c & UPPER != 0);
        on(&mut block.lower, c & LOWER != 0);
        on(&mut block.digit, c & DIGIT != 0);
        on(&mut block.space, c & SPACE != 0);
        on(&mut block.newline, c & NEWLINE != 0);
        on(&mut block.blank, b == b' ');
        on(&mut block.quote, b == b'\'');
        on(&mut block.slash, b == b'/');
    }
    block
}

/// `x` one byte later: bit `i` is byte `i - 1`'s (`before` is the block
/// before's mask).
#[inline(always)]
fn after(x: u64, before: u64) -> u64 {
    x << 1 | before >> 63
}

/// `x` `n` bytes later (`n` of 1 to 63).
#[inline(always)]
fn after_n(x: u64, before: u64, n: u32) -> u64 {
    x << n | before >> (64 - n)
}

/// `x` one byte earlier: bit `i` is byte `i + 1`'s (`next` is the block
/// after's mask).
#[inline(always)]
fn before(x: u64, next: u64) -> u64 {
    x >> 1 | next << 63
}

/// The bytes of `runs` reachable from a `seeds` byte through `runs` (each
/// seed is in `runs`), one word of a mask spread over words, `carry` from
/// the word before to the word after.
#[inline(always)]
fn fill_step(runs: u64, seeds: u64, carry: &mut bool) -> u64 {
    let (sum, over) = runs.overflowing_add(seeds);
    let (sum, over_in) = sum.overflowing_add(u64::from(*carry));
    *carry = over || over_in;
    ((sum ^ runs) & runs) | seeds
}

/// The masks of block `k` of `bytes` (past the end: none).
#[inline(always)]
fn block<C: Classify>(bytes: &[u8], k: usize) -> Block {
    let from = k * 64;
    if let Some(chunk) = bytes
        .get(from..from + 64)
        .and_then(|c| <&[u8; 64]>::try_from(c).ok())
    {
        return C::classify(chunk, 64);
    }
    let rest = bytes.get(from..).unwrap_or_default();
    let mut chunk = [0u8; 64];
    if let Some(to) = chunk.get_mut(..rest.len()) {
        to.copy_from_slice(rest);
    }
    C::classify(&chunk, rest.len())
}

/// A thread's buffers for [`bulk`].
#[derive(Default)]
struct Masks {
    starts: Vec<u64>,
    odd: Vec<u64>,
    /// Each contraction the pieces keep: its quote and length.
    contractions: Vec<(usize, usize)>,
    /// The pieces' ends, after the first piece's start.
    ends: Vec<u32>,
}

thread_local! {
    static MASKS: RefCell<Masks> = RefCell::new(Masks::default());
}

/// The pieces of `bytes` (ASCII, a whole text for the pattern) into `out`,
/// offset by `base`.
fn bulk(grammar: Grammar, bytes: &[u8], base: u32, out: &mut Vec<Span>) {
    MASKS.with(|masks| match masks.try_borrow_mut() {
        Ok(mut masks) => bulk_fastest(grammar, bytes, base, out, &mut masks),
        Err(_) => bulk_fastest(grammar, bytes, base, out, &mut Masks::default()),
    });
}

/// [`bulk_with`] on the widest classifier this core has (`std` caches the
/// detection).
fn bulk_fastest(grammar: Grammar, bytes: &[u8], base: u32, out: &mut Vec<Span>, m: &mut Masks) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512bw") {
        // SAFETY: AVX-512BW was just detected.
        return unsafe { bulk_avx512(grammar, bytes, base, out, m) };
    }
    bulk_with::<Baseline>(grammar, bytes, base, out, m);
}

/// [`bulk_with`] compiled with AVX-512BW, so [`Avx512`] inlines into it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512bw")]
fn bulk_avx512(grammar: Grammar, bytes: &[u8], base: u32, out: &mut Vec<Span>, m: &mut Masks) {
    bulk_with::<Avx512>(grammar, bytes, base, out, m);
}

#[inline(always)]
fn bulk_with<C: Classify>(
    grammar: Grammar,
    bytes: &[u8],
    base: u32,
    out: &mut Vec<Span>,
    m: &mut Masks,
) {
    let n = bytes.len();
    if n == 0 {
        return;
    }
    let (case_words, contractions) = match grammar {
        Grammar::Words { .. } => (false, true),
        Grammar::CaseWords { contractions, .. } => (true, contractions),
    };
    m.starts.clear();
    m.odd.clear();
    m.contractions.clear();
    let blocks = n.div_ceil(64);
    let last = n - 1;
    // One pass, a block behind the classification: a block's starts read
    // the block after's first byte, and the two fills carry between blocks.
    let mut p = Block::default();
    let mut b = block::<C>(bytes, 0);
    let (mut tail_before, mut lone_before, mut before_punct_starts) = (0u64, 0u64, 0u64);
    let (mut tail_carry, mut lone_carry) = (false, false);
    for k in 0..blocks {
        let nx = if k + 1 < blocks {
            block::<C>(bytes, k + 1)
        } else {
            Block::default()
        };
        let letter = b.letter();
        let punct = b.punct();
        let punct_before = p.punct();
        let inner = b.space & !b.newline;
        let inner_before = p.space & !p.newline;
        // A punctuation piece's tail: the newlines after it (o200k: and `/`).
        let tail = fill_step(
            b.newline | if case_words { b.slash } else { 0 },
            b.newline & after(punct, punct_before),
            &mut tail_carry,
        );
        // Whitespace runs without a newline that start right after one.
        let lone = fill_step(inner, inner & after(b.newline, p.newline), &mut lone_carry);
        // The text's last byte has no byte after it.
        let has_next = if last / 64 == k {
            !(1u64 << (last % 64))
        } else {
            u64::MAX
        };
        // Punctuation runs (a tail ends one) start a piece, unless a space
        // before takes them (` ?`) or they are a tail's `/`.
        let punct_starts = punct
            & !after(punct & !tail, punct_before & !tail_before)
            & !after(b.blank, p.blank)
            & !tail;
        // Letter runs start a piece, unless the byte before is a prefix
        // that starts one: whitespace other than a newline (a whitespace
        // run's last byte), or a punctuation run of one that starts a piece.
        let letter_runs = letter & !after(letter, p.letter());
        let prefix = after(inner, inner_before) | after(punct_starts, before_punct_starts);
        let letter_starts = letter_runs & !prefix;
        let case_splits = if case_words {
            b.upper & after(b.lower, p.lower)
        } else {
            0
        };
        let digit_starts = if grammar.digits() == 1 {
            b.digit
        } else {
            b.digit & !after(b.digit, p.digit)
        };
        // Whitespace: a run's first byte past any tail; the byte after its
        // last newline; its last byte before a non-space when the bytes
        // since its last newline (or its start) are two or more.
        let spaces = b.space & !tail;
        let space_starts = spaces & !after(spaces, p.space & !tail_before);
        let after_newline = inner & after(b.newline, p.newline);
        let last_of_run =
            inner & !before(b.space, nx.space) & after(inner, inner_before) & has_next;
        m.starts.push(
            (letter_starts
                | case_splits
                | digit_starts
                | punct_starts
                | space_starts
                | after_newline
                | last_of_run)
                & b.valid,
        );
        // What the masks do not settle: a newline right after a whitespace
        // run that started after another newline, and a fourth digit in a
        // row where numbers group by three.
        let mut odd = b.newline & after(lone, lone_before);
        if grammar.digits() > 1 {
            odd |= b.digit
                & after(b.digit, p.digit)
                & after_n(b.digit, p.digit, 2)
                & after_n(b.digit, p.digit, 3);
        }
        m.odd.push(odd);
        before_punct_starts = punct_starts;
        tail_before = tail;
        lone_before = lone;
        // Contractions are rare: settled a quote at a time.
        let mut quotes = if contractions { b.quote } else { 0 };
        while quotes != 0 {
            let i = k * 64 + quotes.trailing_zeros() as usize;
            quotes &= quotes - 1;
            let len = contraction(bytes, i);
            let prev = i
                .checked_sub(1)
                .map(|j| (class(bytes, j), bytes.get(j) == Some(&b' ')));
            let takes = if case_words {
                // `(?i:'s|…)?` after letters: the end of the word before
                // (not after another's letters: its quote starts a piece).
                prev.is_some_and(|(c, _)| c & LETTER != 0)
                    && m.contractions.last().is_none_or(|&(j, len)| j + len != i)
            } else {
                // Its own piece where a piece starts: not inside a
                // punctuation run, nor after a space that takes it.
                prev.is_none_or(|(c, blank)| {
                    c & (LETTER | DIGIT) != 0 || (c & SPACE != 0 && !blank)
                })
            };
            if len > 0 && takes {
                m.contractions.push((i, len));
            }
        }
        p = b;
        b = nx;
    }
    for &(i, len) in &m.contractions {
        if case_words {
            clear(&mut m.starts, i);
        } else {
            set(&mut m.starts, i);
        }
        for j in i + 1..i + len {
            clear(&mut m.starts, j);
        }
        if i + len < n {
            set(&mut m.starts, i + len);
        }
    }
    // The shapes the masks leave: cut again between safe boundaries.
    let mut from = 0;
    for k in 0..m.odd.len() {
        let mut odd = m.odd.get(k).copied().unwrap_or(0);
        while odd != 0 {
            let i = k * 64 + odd.trailing_zeros() as usize;
            odd &= odd - 1;
            if i < from {
                continue;
            }
            let mut lo = i;
            while lo > 0 && !safe(bytes, lo) {
                lo -= 1;
            }
            let mut hi = i + 1;
            while hi < n && !safe(bytes, hi) {
                hi += 1;
            }
            for j in lo..hi {
                clear(&mut m.starts, j);
            }
            scan(
                grammar,
                bytes.get(lo..hi).unwrap_or_default(),
                lo,
                &mut m.starts,
            );
            from = hi;
        }
    }
    // The pieces: from each start to the next (the first byte starts one,
    // so its bit is dropped and every bit left ends a piece).
    if let Some(first) = m.starts.first_mut() {
        *first &= !1;
    }
    let pieces: u32 = m.starts.iter().map(|w| w.count_ones()).sum();
    let ends = &mut m.ends;
    ends.clear();
    ends.resize(pieces as usize + 2 + ENDS_SLACK, 0);
    if let Some(first) = ends.first_mut() {
        *first = base;
    }
    let n = 1 + write_ends(&m.starts, base, ends.get_mut(1..).unwrap_or_default());
    if let Some(last) = ends.get_mut(n) {
        // Fits: the caller's text is under 4 GiB.
        *last = base + bytes.len() as u32;
    }
    out.extend(
        ends.get(..=n)
            .unwrap_or_default()
            .windows(2)
            .map(|w| Span::new(w[0], w[1])),
    );
}

/// Room past the last end that [`write_ends`] may write stale ends into.
const ENDS_SLACK: usize = 64;

/// The positions of the bits of `starts` (bit `i` of word `k` is byte
/// `base + 64k + i`), in order, into `ends`, which has room for them and
/// [`ENDS_SLACK`] more; returns how many.
fn write_ends(starts: &[u64], base: u32, ends: &mut [u32]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512vbmi2") {
        // SAFETY: AVX-512 VBMI2 (and so F and BW) was just detected.
        return unsafe { write_ends_vbmi2(starts, base, ends) };
    }
    write_ends_by_bits(starts, base, ends)
}

/// [`write_ends`] eight bits at a time, whatever a word's count (the slack
/// takes the stale ones): one branch a word, where a loop over its bits
/// mispredicts its exit at nearly every word.
fn write_ends_by_bits(starts: &[u64], base: u32, ends: &mut [u32]) -> usize {
    const AT_ONCE: usize = 8;
    let mut n = 0;
    for (k, &word) in starts.iter().enumerate() {
        // Offsets fit: the caller's text is under 4 GiB.
        let at = base + (k * 64) as u32;
        let count = word.count_ones() as usize;
        let mut word = word;
        let mut from = n;
        while from < n + count {
            if let Some(to) = ends.get_mut(from..from + AT_ONCE) {
                for end in to {
                    *end = at + word.trailing_zeros();
                    word &= word.wrapping_sub(1);
                }
            }
            from += AT_ONCE;
        }
        n += count;
    }
    n
}

/// [`write_ends`] by AVX-512 VBMI2: a word's bit positions are its byte
/// indices compressed under it, widened sixteen at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi2")]
fn write_ends_vbmi2(starts: &[u64], base: u32, ends: &mut [u32]) -> usize {
    use std::arch::x86_64::{
        __m512i, _mm512_add_epi32, _mm512_castsi512_si128, _mm512_cvtepu8_epi32,
        _mm512_extracti32x4_epi32, _mm512_maskz_compress_epi8, _mm512_set1_epi32,
        _mm512_storeu_si512,
    };
    const INDEX: [u8; 64] = {
        let mut index = [0u8; 64];
        let mut i = 0;
        while i < 64 {
            index[i] = i as u8;
            i += 1;
        }
        index
    };
    // SAFETY: `INDEX` is 64 bytes, and the load has no alignment requirement.
    let index = unsafe { std::arch::x86_64::_mm512_loadu_si512(INDEX.as_ptr().cast::<__m512i>()) };
    let mut n = 0;
    for (k, &word) in starts.iter().enumerate() {
        let count = word.count_ones() as usize;
        let at = _mm512_set1_epi32((base + (k * 64) as u32) as i32);
        let packed = _mm512_maskz_compress_epi8(word, index);
        let quarters = [
            _mm512_cvtepu8_epi32(_mm512_castsi512_si128(packed)),
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32::<1>(packed)),
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32::<2>(packed)),
            _mm512_cvtepu8_epi32(_mm512_extracti32x4_epi32::<3>(packed)),
        ];
        for (q, lanes) in quarters.into_iter().enumerate() {
            // The first quarter is stored whatever the count (a store is
            // cheaper than the branch); the others only when they hold ends.
            if q > 0 && q * 16 >= count {
                break;
            }
            if let Some(to) = ends.get_mut(n + q * 16..n + q * 16 + 16) {
                // SAFETY: `to` is 16 `u32`s, one 64-byte store with no
                // alignment requirement.
                unsafe {
                    _mm512_storeu_si512(
                        to.as_mut_ptr().cast::<__m512i>(),
                        _mm512_add_epi32(lanes, at),
                    )
                };
            }
        }
        n += count;
    }
    n
}

// ---------------------------------------------------------------------
// The driver.

/// The index of the first byte past 0x7F in `bytes` from `at`, or its
/// length.
#[inline]
fn first_non_ascii(bytes: &[u8], mut at: usize) -> usize {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = bytes.get(at..at + 8) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let high = u64::from_le_bytes(eight) & HIGH;
        if high != 0 {
            return at + (high.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < bytes.len() && bytes.get(at).is_some_and(u8::is_ascii) {
        at += 1;
    }
    at
}

/// Whether `at` is a safe boundary (see the module docs).
#[inline(always)]
fn safe(bytes: &[u8], at: usize) -> bool {
    at > 0
        && bytes.get(at) == Some(&b' ')
        && bytes
            .get(at - 1)
            .is_some_and(|&b| (0x21..=0x7e).contains(&b))
}

/// A region the caller's splitter takes ends at the first safe boundary
/// with no non-ASCII byte this near after it: short ASCII gaps between
/// non-ASCII words stay with the splitter, one call for the cluster.
const ASCII_GAP: usize = 64;

/// The pre-tokens of `text` for `grammar` into `spans` (appended, relative
/// to `text`, which is under 4 GiB): ASCII regions by the masks, the
/// regions between safe boundaries that hold another byte by `other` (its
/// spans relative to the region it is given, appended). `ascii`: the
/// caller knows `text` is all ASCII (one pass over it answers every step
/// that looks for other bytes).
pub(crate) fn split<E>(
    grammar: Grammar,
    text: &str,
    ascii: bool,
    spans: &mut Vec<Span>,
    mut other: impl FnMut(&str, &mut Vec<Span>) -> Result<(), E>,
) -> Result<(), E> {
    let bytes = text.as_bytes();
    if ascii {
        bulk(grammar, bytes, 0, spans);
        return Ok(());
    }
    let n = bytes.len();
    let mut pos = 0;
    while pos < n {
        let first = first_non_ascii(bytes, pos);
        let ascii = |from: usize, to: usize, spans: &mut Vec<Span>| {
            bulk(
                grammar,
                bytes.get(from..to).unwrap_or_default(),
                from as u32,
                spans,
            );
        };
        if first == n {
            ascii(pos, n, spans);
            break;
        }
        // The masks' part ends at the last safe boundary before the
        // non-ASCII byte.
        let cut = memchr::memrchr_iter(b' ', bytes.get(pos..first).unwrap_or_default())
            .map(|i| pos + i)
            .find(|&c| safe(bytes, c))
            .unwrap_or(pos);
        if cut > pos {
            ascii(pos, cut, spans);
        }
        // The splitter's, at a safe boundary past the cluster.
        let mut last = first;
        let end = loop {
            let from = last + 1;
            let Some(boundary) = memchr::memchr_iter(b' ', bytes.get(from..).unwrap_or_default())
                .map(|i| from + i)
                .find(|&c| safe(bytes, c))
            else {
                break n;
            };
            let next = first_non_ascii(bytes, boundary);
            if next >= (boundary + ASCII_GAP).min(n) {
                break boundary;
            }
            last = next;
        };
        let region = text.get(cut..end).unwrap_or_default();
        let from = spans.len();
        other(region, spans)?;
        for span in spans.get_mut(from..).unwrap_or_default() {
            span.start += cut as u32;
            span.end += cut as u32;
        }
        pos = end;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: `pattern`'s matches in `text` by `fancy-regex` (the
    /// tiktoken engine's tests share it).
    pub(crate) fn regex_pieces(pattern: &str, text: &str) -> Vec<(usize, usize)> {
        fancy_regex::Regex::new(pattern)
            .unwrap()
            .find_iter(text)
            .map(|m| m.map(|m| (m.start(), m.end())).unwrap())
            .collect()
    }

    /// `split` with the regex standing for the native grammar.
    fn pieces(pattern: &str, grammar: Grammar, text: &str) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        split::<()>(grammar, text, false, &mut spans, |region, out| {
            out.extend(
                regex_pieces(pattern, region)
                    .into_iter()
                    .map(|(s, e)| Span::new(s as u32, e as u32)),
            );
            Ok(())
        })
        .unwrap();
        spans
            .iter()
            .map(|s| (s.start as usize, s.end as usize))
            .collect()
    }

    /// The piece-at-a-time scanner's pieces of `text` (ASCII).
    fn scanned(grammar: Grammar, text: &[u8]) -> Vec<(usize, usize)> {
        let mut starts = vec![0u64; text.len().div_ceil(64) + 1];
        scan(grammar, text, 0, &mut starts);
        let mut cuts: Vec<usize> = (0..text.len())
            .filter(|&i| starts[i / 64] >> (i % 64) & 1 == 1)
            .collect();
        cuts.push(text.len());
        cuts.windows(2).map(|w| (w[0], w[1])).collect()
    }

    fn masked(grammar: Grammar, text: &[u8]) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        bulk(grammar, text, 0, &mut spans);
        spans
            .iter()
            .map(|s| (s.start as usize, s.end as usize))
            .collect()
    }

    /// The masks' pieces of `text` by every classifier this core runs
    /// (the baseline first).
    fn masked_by_each(grammar: Grammar, text: &[u8]) -> Vec<Vec<(usize, usize)>> {
        let run = |pass: &dyn Fn(&mut Vec<Span>, &mut Masks)| {
            let mut spans = Vec::new();
            pass(&mut spans, &mut Masks::default());
            spans
                .iter()
                .map(|s| (s.start as usize, s.end as usize))
                .collect()
        };
        let mut each = vec![run(&|out, m| {
            bulk_with::<Baseline>(grammar, text, 0, out, m)
        })];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: AVX-512BW was just detected.
            each.push(run(&|out, m| unsafe {
                bulk_avx512(grammar, text, 0, out, m)
            }));
        }
        each
    }

    /// A classifier's function.
    type ClassifyFn = fn(&[u8; 64], usize) -> Block;

    /// Every classifier this core runs, by name.
    fn classifiers() -> Vec<(&'static str, ClassifyFn)> {
        let mut each: Vec<(&'static str, ClassifyFn)> = vec![("baseline", Baseline::classify)];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512bw") {
            each.push(("avx512bw", Avx512::classify));
        }
        each
    }

    /// Every ASCII byte at every position of a block, whole and cut short
    /// (the bytes past a short block's length are zeros, as `block` pads).
    #[test]
    fn every_classifier_equals_the_class_table() {
        for (name, classify) in classifiers() {
            for shift in 0..128usize {
                let mut chunk = [0u8; 64];
                for (i, b) in chunk.iter_mut().enumerate() {
                    *b = ((i * 37 + shift) % 128) as u8;
                }
                for len in [64, 63, 33, 17, 1, 0] {
                    let mut cut = chunk;
                    cut[len..].fill(0);
                    assert_eq!(
                        classify(&cut, len),
                        classify_by_table(&cut, len),
                        "{name}: shift {shift}, length {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_grammar_is_recognized() {
        for &(pattern, grammar) in PATTERNS {
            assert_eq!(Grammar::of(pattern), Some(grammar));
        }
        assert_eq!(Grammar::of(r"\s+"), None);
    }

    const CASES: &[&str] = &[
        "Hello world's HTMLParser getHTTPResponse don't I'M 'll ''s",
        "  \n  x\t\ty\r\n\r\n  z \n ",
        "a1234b 12 // x//\n/\n/y (a .. ..a \u{1}b \u{7f}c",
        "fn main() {\n    let x = vec![1, 2, 3];\n}\n",
        " 's 'S 'Re 'rE 'LL 've x'd  ",
        "ABC's ABCdef'S aBC x'sy x'Sa 5's \t's \n's ;\n's",
        "x;\n\n  y ;\n  \n z \n \n  w 1234567 12 123\n",
        ";\n/x a/\n b//\n//\nc",
        " ",
        "\n",
        "x  ",
        "'s",
        "''",
    ];

    #[test]
    fn known_cases() {
        for &(pattern, grammar) in PATTERNS {
            for text in CASES {
                let want = regex_pieces(pattern, text);
                assert_eq!(pieces(pattern, grammar, text), want, "{grammar:?} {text:?}");
                assert_eq!(
                    scanned(grammar, text.as_bytes()),
                    want,
                    "{grammar:?} {text:?}"
                );
            }
        }
    }

    /// A number of a mebibyte is cut three digits at a time without
    /// scanning to its end for each group (that was quadratic: a minute
    /// for `make_adversarial.py`'s `word-digits.txt`).
    #[test]
    fn long_numbers_split_in_one_pass() {
        let digits: String = (0..1 << 20)
            .map(|i| char::from(b'0' + (i % 10) as u8))
            .collect();
        for text in [
            digits.clone(),
            format!("x{digits} y"),
            digits.replace("890", "8 90"),
        ] {
            for grammar in [
                Grammar::Words { digits: 3 },
                Grammar::CaseWords {
                    digits: 3,
                    contractions: true,
                },
            ] {
                let got = masked(grammar, text.as_bytes());
                assert_eq!(got, scanned(grammar, text.as_bytes()));
                assert!(
                    got.iter()
                        .all(|&(s, e)| e - s <= 3 || !text.as_bytes()[s].is_ascii_digit())
                );
            }
        }
    }

    #[test]
    fn long_texts_cross_blocks() {
        // Every shape at every offset from a block's start.
        for &(pattern, grammar) in PATTERNS {
            let body: String = CASES.concat();
            for pad in 0..70 {
                let text = format!(
                    "{}{body}{body}",
                    "a ".repeat(pad / 2) + &"x".repeat(pad % 2)
                );
                let want = regex_pieces(pattern, &text);
                assert_eq!(
                    masked(grammar, text.as_bytes()),
                    want,
                    "{grammar:?} pad {pad}"
                );
                for got in masked_by_each(grammar, text.as_bytes()) {
                    assert_eq!(got, want, "{grammar:?} pad {pad}");
                }
            }
        }
    }

    #[test]
    fn non_ascii_regions_go_to_the_splitter() {
        for &(pattern, grammar) in PATTERNS {
            for text in [
                "naïve café, déjà vu: x y",
                "中文 and English 混合 text",
                "a\u{a0}b c\u{2009} d é",
                "é",
                "x é",
                "x  é  y",
                "(é) [é] 'é' ∑x = 1",
            ] {
                assert_eq!(
                    pieces(pattern, grammar, text),
                    regex_pieces(pattern, text),
                    "{grammar:?} {text:?}"
                );
            }
        }
    }

    fn alphabet() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            Just(" "),
            Just("  "),
            Just("\t"),
            Just("\n"),
            Just("\r"),
            Just("\u{b}"),
            Just("\u{c}"),
            Just("\u{1}"),
            Just("\u{7f}"),
            Just("a"),
            Just("z"),
            Just("A"),
            Just("Z"),
            Just("Ab"),
            Just("aB"),
            Just("1"),
            Just("123"),
            Just("4567"),
            Just("."),
            Just("/"),
            Just("'"),
            Just("'s"),
            Just("'S"),
            Just("'re"),
            Just("'Ve"),
            Just("'ll"),
            Just("'LL"),
            Just("'d"),
            Just("'m"),
            Just("'t"),
            Just("("),
            Just("_"),
            Just("-"),
            Just(";\n"),
            Just("\n  "),
            Just("x"),
        ]
    }

    /// Every way [`write_ends`] can run on this core: the bit loop, and
    /// the VBMI2 compress where the core has it.
    fn ends_by_each(starts: &[u64], base: u32) -> Vec<Vec<u32>> {
        let room = starts
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
            + ENDS_SLACK;
        let mut each = Vec::new();
        let mut ends = vec![0; room];
        let n = write_ends_by_bits(starts, base, &mut ends);
        each.push(ends[..n].to_vec());
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512vbmi2") {
            let mut ends = vec![0; room];
            // SAFETY: just detected.
            let n = unsafe { write_ends_vbmi2(starts, base, &mut ends) };
            each.push(ends[..n].to_vec());
        }
        each
    }

    #[test]
    fn ends_are_the_start_bits_in_order() {
        let words = [
            0,
            1,
            1 << 63,
            u64::MAX,
            0x5555_5555_5555_5555,
            0xFFFF_0000_0000_FFFF,
        ];
        for (a, &x) in words.iter().enumerate() {
            for &y in &words[a..] {
                let starts = [x, y, x ^ y];
                let want: Vec<u32> = (0..192u32)
                    .filter(|&i| starts[i as usize / 64] >> (i % 64) & 1 == 1)
                    .map(|i| 1000 + i)
                    .collect();
                for got in ends_by_each(&starts, 1000) {
                    assert_eq!(got, want, "{x:#x} {y:#x}");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        #[test]
        fn ends_of_random_bits_are_the_bits(
            starts in proptest::collection::vec(any::<u64>(), 0..12),
            base in 0u32..1 << 20,
        ) {
            let want: Vec<u32> = (0..starts.len() * 64)
                .filter(|&i| starts[i / 64] >> (i % 64) & 1 == 1)
                .map(|i| base + i as u32)
                .collect();
            for got in ends_by_each(&starts, base) {
                prop_assert_eq!(&got, &want);
            }
        }

        #[test]
        fn pieces_match_the_regex(
            parts in proptest::collection::vec(
                prop_oneof![
                    4 => alphabet(),
                    1 => prop_oneof![Just("é"), Just("\u{a0}"), Just("中"), Just("\u{301}"),
                        Just("ǅ"), Just("½"), Just("\u{85}"), Just("\u{3000}")],
                ],
                0..160,
            ),
            which in 0usize..4,
        ) {
            let text: String = parts.concat();
            let (pattern, grammar) = PATTERNS[which];
            prop_assert_eq!(pieces(pattern, grammar, &text), regex_pieces(pattern, &text));
        }

        #[test]
        fn bulk_equals_scan(
            parts in proptest::collection::vec(alphabet(), 0..200),
            which in 0usize..4,
        ) {
            let text: String = parts.concat();
            let (pattern, grammar) = PATTERNS[which];
            let want = scanned(grammar, text.as_bytes());
            prop_assert_eq!(masked(grammar, text.as_bytes()), want.clone());
            for got in masked_by_each(grammar, text.as_bytes()) {
                prop_assert_eq!(got, want.clone());
            }
            prop_assert_eq!(want, regex_pieces(pattern, &text));
        }
    }
}
