//! Hostile `.model` files: truncations of real models, wrong wire types,
//! absurd lengths, a vocabulary claiming 2^31 pieces, random corruption and
//! semantic violations. Every case must give a typed error (or a model that
//! works), never panic, and never make an allocation out of proportion to
//! the input (checked with a counting global allocator).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "it/spm_common/mod.rs"]
mod spm_common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use router_tokenizer::sentencepiece::{SentencePieceModel, SpmError};
use spm_common::*;

/// Tracks the largest single allocation made by the current thread.
struct Counting;

thread_local! {
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; it only
// records the requested size in a const-initialized thread-local `Cell`,
// which does not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(layout.size())));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = LARGEST.try_with(|l| l.set(l.get().max(new_size)));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Loads `data`, exercises the model if it loads, and checks that no single
/// allocation exceeded `64 * len + 1 MiB`.
fn load_bounded(data: &[u8]) -> Result<SentencePieceModel, SpmError> {
    LARGEST.with(|l| l.set(0));
    let r = SentencePieceModel::from_bytes(data);
    if let Ok(m) = &r {
        let _ = m.encode("Hello world ▁ \u{0} 日本語 ﬁ");
        let mut ids = Vec::new();
        let mut offs = Vec::new();
        m.encode_with_offsets("  x  y ", &mut ids, &mut offs);
        let all: Vec<u32> = (0..m.vocab_size().min(300) as u32).collect();
        let _ = m.decode(&all, true);
        let _ = m.decode(&all, false);
        for id in 0..m.vocab_size().min(300) as u32 {
            let _ = m.piece_bytes(id);
        }
    }
    let largest = LARGEST.with(Cell::get);
    let bound = 64 * data.len() + (1 << 20);
    assert!(
        largest <= bound,
        "allocation of {largest} bytes for a {}-byte input",
        data.len()
    );
    r
}

// --- a tiny protobuf writer -------------------------------------------------

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}
fn tag(field: u32, wt: u8, out: &mut Vec<u8>) {
    varint((u64::from(field) << 3) | u64::from(wt), out);
}
fn len_field(field: u32, payload: &[u8], out: &mut Vec<u8>) {
    tag(field, 2, out);
    varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}
fn varint_field(field: u32, v: u64, out: &mut Vec<u8>) {
    tag(field, 0, out);
    varint(v, out);
}
fn float_field(field: u32, v: f32, out: &mut Vec<u8>) {
    tag(field, 5, out);
    out.extend_from_slice(&v.to_le_bytes());
}
fn piece(p: &[u8], score: f32, ty: u64) -> Vec<u8> {
    let mut m = Vec::new();
    len_field(1, p, &mut m);
    float_field(2, score, &mut m);
    varint_field(3, ty, &mut m);
    let mut out = Vec::new();
    len_field(1, &m, &mut out);
    out
}
/// A small valid model: <unk>, <s>, </s> and a few normal pieces.
fn small_model(model_type: u64, extra: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend(piece(b"<unk>", 0.0, 2));
    out.extend(piece(b"<s>", 0.0, 3));
    out.extend(piece(b"</s>", 0.0, 3));
    for (i, p) in ["\u{2581}", "a", "b", "\u{2581}a", "ab"].iter().enumerate() {
        out.extend(piece(p.as_bytes(), -(i as f32) - 1.0, 1));
    }
    for e in extra {
        out.extend_from_slice(e);
    }
    let mut ts = Vec::new();
    varint_field(3, model_type, &mut ts);
    len_field(2, &ts, &mut out);
    out
}

// --- cases -------------------------------------------------------------------

#[test]
fn small_models_load() {
    for ty in [1, 2, 3, 4] {
        let m = load_bounded(&small_model(ty, &[])).unwrap();
        assert_eq!(m.vocab_size(), 8);
        assert!(!m.encode("ab ba").is_empty());
    }
}

#[test]
fn truncated_real_models() {
    for name in [MODELS[0], MODELS[3]] {
        let data = model_bytes(name);
        let mut lens: Vec<usize> = (0..2048).collect();
        lens.extend((2048..data.len()).step_by(4099));
        lens.extend((1..64).map(|k| data.len() - k));
        let mut loaded = 0;
        for len in lens {
            match load_bounded(&data[..len]) {
                Ok(_) => loaded += 1,
                Err(e) => {
                    let _ = e.to_string();
                }
            }
        }
        // Truncating inside a field must fail; a cut at a field boundary may
        // leave a loadable (smaller) model.
        assert!(load_bounded(&data).is_ok());
        eprintln!("{name}: {loaded} truncations loaded");
    }
}

#[test]
fn truncation_inside_a_field_is_typed() {
    let data = model_bytes(MODELS[0]);
    assert!(matches!(
        load_bounded(&data[..5]),
        Err(SpmError::LengthOutOfRange {
            field: "ModelProto.pieces",
            ..
        } | SpmError::Truncated { .. })
    ));
    assert!(matches!(
        load_bounded(&[0x0a]),
        Err(SpmError::Truncated { offset: 1, .. })
    ));
    // unknown field 9 as fixed32 with two bytes left
    assert!(matches!(
        load_bounded(&[0x4d, 0, 0]),
        Err(SpmError::Truncated { .. })
    ));
}

#[test]
fn wrong_wire_types() {
    // pieces as a varint
    let mut d = Vec::new();
    varint_field(1, 5, &mut d);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::WireType {
            field: "ModelProto.pieces",
            expected: 2,
            got: 0,
            ..
        })
    ));
    // trainer_spec as fixed32
    let mut d = Vec::new();
    float_field(2, 1.0, &mut d);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::WireType {
            field: "ModelProto.trainer_spec",
            ..
        })
    ));
    // score as a varint inside a piece
    let mut p = Vec::new();
    len_field(1, b"x", &mut p);
    varint_field(2, 1, &mut p);
    let mut d = Vec::new();
    len_field(1, &p, &mut d);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::WireType {
            field: "SentencePiece.score",
            expected: 5,
            got: 0,
            ..
        })
    ));
    // model_type as a string
    let mut ts = Vec::new();
    len_field(3, b"BPE", &mut ts);
    let mut d = small_model(1, &[]);
    len_field(2, &ts, &mut d);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::WireType {
            field: "TrainerSpec.model_type",
            ..
        })
    ));
    // wire types 6 and 7 and field number 0
    for bad in [[0x0e_u8, 0], [0x0f, 0], [0x00, 0]] {
        assert!(matches!(
            load_bounded(&bad),
            Err(SpmError::InvalidTag { .. })
        ));
    }
    // an end-group without a start (unknown field 9)
    assert!(matches!(
        load_bounded(&[0x4c]),
        Err(SpmError::InvalidTag { .. })
    ));
}

#[test]
fn absurd_lengths() {
    for claim in [1u64 << 31, (1u64 << 32) + 7, 1 << 62, u64::MAX] {
        let mut d = small_model(2, &[]);
        tag(1, 2, &mut d);
        varint(claim, &mut d);
        d.extend_from_slice(b"tiny");
        match load_bounded(&d) {
            Err(SpmError::LengthOutOfRange { len, remaining, .. }) => {
                assert_eq!(len, claim);
                assert_eq!(remaining, 4);
            }
            other => panic!("claim {claim}: {other:?}"),
        }
    }
    // A varint longer than 10 bytes (unknown field 9).
    let mut d = vec![0x48];
    d.extend_from_slice(&[0xff; 11]);
    assert!(matches!(load_bounded(&d), Err(SpmError::Varint { .. })));
    // A length inside a nested message larger than the message.
    let mut inner = Vec::new();
    tag(1, 2, &mut inner);
    varint(100, &mut inner);
    let mut d = Vec::new();
    len_field(1, &inner, &mut d);
    d.extend_from_slice(&[0u8; 200]);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::LengthOutOfRange {
            field: "SentencePiece.piece",
            ..
        })
    ));
}

#[test]
fn vocab_claiming_2_pow_31_pieces() {
    // trainer_spec.vocab_size = 2^31 - 1 with 8 real pieces: only metadata.
    let mut d = small_model(2, &[]);
    let mut ts = Vec::new();
    varint_field(4, (1 << 31) - 1, &mut ts);
    varint_field(40, (1 << 31) - 1, &mut ts); // unk_id
    len_field(2, &ts, &mut d);
    let m = load_bounded(&d).unwrap();
    assert_eq!(m.vocab_size(), 8);
    assert_eq!(m.settings().trainer_vocab_size, i32::MAX);
    // A pieces field whose length prefix claims 2^31 bytes.
    let mut d = Vec::new();
    tag(1, 2, &mut d);
    varint(1 << 31, &mut d);
    d.extend_from_slice(&[0u8; 64]);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::LengthOutOfRange { .. })
    ));
    // Many empty piece messages: each costs two input bytes, nothing more.
    let mut d = Vec::new();
    for _ in 0..200_000 {
        d.extend_from_slice(&[0x0a, 0x00]);
    }
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::EmptyPiece { index: 0 })
    ));
}

#[test]
fn semantic_violations() {
    let dup = piece(b"a", -9.0, 1);
    assert!(matches!(
        load_bounded(&small_model(1, &[dup])),
        Err(SpmError::DuplicatePiece { .. })
    ));
    assert!(matches!(
        load_bounded(&small_model(1, &[piece(b"", 0.0, 1)])),
        Err(SpmError::EmptyPiece { .. })
    ));
    let long = vec![b'x'; 8000];
    assert!(matches!(
        load_bounded(&small_model(1, &[piece(&long, 0.0, 1)])),
        Err(SpmError::PieceTooLong { len: 8000, .. })
    ));
    assert!(load_bounded(&small_model(1, &[piece(&long[..7999], 0.0, 1)])).is_ok());
    assert!(matches!(
        load_bounded(&small_model(1, &[piece(b"x\0y", 0.0, 1)])),
        Err(SpmError::NulInPiece { .. })
    ));
    assert!(matches!(
        load_bounded(&small_model(1, &[piece(b"\xff", 0.0, 1)])),
        Err(SpmError::InvalidUtf8 { .. })
    ));
    assert!(matches!(
        load_bounded(&small_model(1, &[piece(b"<u2>", 0.0, 2)])),
        Err(SpmError::DuplicateUnknown { .. })
    ));
    assert!(matches!(
        load_bounded(&small_model(1, &[piece(b"<0x41>", 0.0, 6)])),
        Err(SpmError::BytePieceWithoutFallback { .. })
    ));
    // byte_fallback with a missing byte piece
    let mut ts = Vec::new();
    varint_field(35, 1, &mut ts);
    let mut d = small_model(2, &[piece(b"<0x00>", 0.0, 6)]);
    len_field(2, &ts, &mut d);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::MissingBytePieces { missing: 1 })
    ));
    // a malformed byte piece
    let mut d = small_model(2, &[piece(b"<0x4g>", 0.0, 6)]);
    len_field(2, &ts, &mut d);
    assert!(matches!(
        load_bounded(&d),
        Err(SpmError::InvalidBytePiece { .. })
    ));
    // NaN score in a Unigram model (BPE accepts it, like sentencepiece)
    assert!(matches!(
        load_bounded(&small_model(1, &[piece(b"zz", f32::NAN, 1)])),
        Err(SpmError::NonFiniteScore { .. })
    ));
    assert!(load_bounded(&small_model(2, &[piece(b"zz", f32::NAN, 1)])).is_ok());
    // no unknown piece and no byte fallback
    let mut d = Vec::new();
    d.extend(piece(b"a", 0.0, 1));
    assert!(matches!(load_bounded(&d), Err(SpmError::MissingUnknown)));
    assert!(matches!(load_bounded(&[]), Err(SpmError::NoPieces)));
    // unknown decode id
    let m = load_bounded(&small_model(2, &[])).unwrap();
    assert_eq!(m.decode(&[8], true), Err(SpmError::UnknownId(8)));
    assert_eq!(
        m.decode(&[u32::MAX], true),
        Err(SpmError::UnknownId(u32::MAX))
    );
}

#[test]
fn malformed_charsmaps() {
    let with_charsmap = |blob: &[u8]| {
        let mut ns = Vec::new();
        len_field(2, blob, &mut ns);
        let mut d = small_model(1, &[]);
        len_field(3, &ns, &mut d);
        d
    };
    let cases: Vec<Vec<u8>> = vec![
        vec![1, 2, 3],
        {
            let mut b = 1024u32.to_le_bytes().to_vec();
            b.extend_from_slice(&[0u8; 10]);
            b
        },
        {
            let mut b = 1000u32.to_le_bytes().to_vec();
            b.extend_from_slice(&[0u8; 1100]);
            b
        },
        {
            // right size, garbage double array
            let mut b = 1024u32.to_le_bytes().to_vec();
            b.extend((0..1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
            b.extend_from_slice(b"x\0");
            b
        },
        {
            // valid-looking but not NUL-terminated
            let mut b = 1024u32.to_le_bytes().to_vec();
            b.extend_from_slice(&[0u8; 1024]);
            b.extend_from_slice(b"abc");
            b
        },
    ];
    for blob in cases {
        assert!(matches!(
            load_bounded(&with_charsmap(&blob)),
            Err(SpmError::Charsmap { .. })
        ));
    }
    // The real charsmap with its last byte (the final NUL) removed.
    let real = model_bytes(MODELS[3]);
    let m = load_bounded(&real).unwrap();
    assert!(m.settings().has_charsmap);
}

#[test]
fn random_corruption_never_panics() {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for name in [MODELS[3], MODELS[0]] {
        let base = model_bytes(name);
        let rounds = if name == MODELS[3] { 300 } else { 60 };
        for _ in 0..rounds {
            let mut d = base.clone();
            for _ in 0..(1 + rnd() % 8) {
                let i = (rnd() as usize) % d.len();
                d[i] = rnd() as u8;
            }
            if rnd() % 4 == 0 {
                let cut = (rnd() as usize) % d.len();
                d.truncate(cut);
            }
            let _ = load_bounded(&d);
        }
    }
    for _ in 0..2000 {
        let len = (rnd() % 256) as usize;
        let d: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
        let _ = load_bounded(&d);
        router_tokenizer::__fuzz::sentencepiece_model(&d);
    }
}
