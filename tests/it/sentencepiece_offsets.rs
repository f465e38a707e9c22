//! Offsets: for every fixture model and every corpus and adversarial file,
//! `encode_with_offsets` gives the same ids as `encode`, and its spans are in
//! bounds, on character boundaries, contiguous, and cover the whole input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::spm_common;

use router_tokenizer::sentencepiece::SentencePieceModel;
use spm_common::*;

fn check(model: &SentencePieceModel, name: &str, key: &str, text: &str) -> Result<(), String> {
    let mut ids = Vec::new();
    let mut offs = Vec::new();
    model.encode_with_offsets(text, &mut ids, &mut offs);
    let plain = model.encode(text);
    if ids != plain {
        return Err(format!(
            "{name} {key}: ids differ from encode ({} vs {})",
            ids.len(),
            plain.len()
        ));
    }
    if ids.len() != offs.len() {
        return Err(format!(
            "{name} {key}: {} ids but {} spans",
            ids.len(),
            offs.len()
        ));
    }
    if ids.is_empty() {
        return Ok(());
    }
    let mut expect = 0usize;
    for (i, &(s, e)) in offs.iter().enumerate() {
        if s != expect || e < s || e > text.len() {
            return Err(format!(
                "{name} {key}: span {i} = {s}..{e}, expected start {expect}, len {}",
                text.len()
            ));
        }
        if !text.is_char_boundary(s) || !text.is_char_boundary(e) {
            return Err(format!(
                "{name} {key}: span {i} = {s}..{e} not on char boundaries"
            ));
        }
        expect = e;
    }
    if expect != text.len() {
        return Err(format!(
            "{name} {key}: spans end at {expect}, input has {} bytes",
            text.len()
        ));
    }
    spans_spell_pieces(model, name, key, text, &ids, &offs)
}

/// With the identity normalizer (the Mistral models), each ordinary piece
/// spells its span with spaces as U+2581, the dummy prefix aside: a check of
/// where the spans fall, not only that they tile.
fn spans_spell_pieces(
    model: &SentencePieceModel,
    name: &str,
    key: &str,
    text: &str,
    ids: &[u32],
    offs: &[(usize, usize)],
) -> Result<(), String> {
    let settings = model.settings();
    if settings.has_charsmap || settings.remove_extra_whitespaces || !settings.escape_whitespaces {
        return Ok(());
    }
    for (i, (&id, &(s, e))) in ids.iter().zip(offs).enumerate() {
        if model.is_byte(id) || model.is_unknown(id) || model.is_control(id) {
            continue;
        }
        let piece = model.id_to_piece(id).unwrap_or_default();
        let piece = if i == 0 && settings.add_dummy_prefix {
            piece.strip_prefix('\u{2581}').unwrap_or(piece)
        } else {
            piece
        };
        let spelled = text[s..e].replace(' ', "\u{2581}");
        if spelled != piece {
            return Err(format!(
                "{name} {key}: token {i} (id {id}, {piece:?}) spans {s}..{e} = {spelled:?}"
            ));
        }
    }
    Ok(())
}

#[test]
fn offsets_cover_every_file() {
    let keys = corpus_keys();
    let texts: Vec<(String, String)> = keys
        .iter()
        .map(|k| (k.clone(), String::from_utf8(read_input(k)).unwrap()))
        .collect();
    let mut failures = Vec::new();
    for name in MODELS {
        let model = SentencePieceModel::from_bytes(&model_bytes(name)).unwrap();
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let hs: Vec<_> = texts
                .chunks(texts.len().div_ceil(2))
                .map(|chunk| {
                    let model = &model;
                    s.spawn(move || {
                        chunk
                            .iter()
                            .map(|(k, t)| check(model, name, k, t))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        failures.extend(results.into_iter().filter_map(Result::err));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn offsets_on_short_edge_cases() {
    let cases = [
        "",
        " ",
        "   ",
        "a",
        " a",
        "a ",
        "  a  b  ",
        "\u{2581}",
        "\u{2581}\u{2581}x",
        "ﬁ ﬂ",
        "①",
        "ｶﾞ",
        "e\u{301}",
        "\u{0}",
        "日本語",
        "👨\u{200d}👩",
        "\r\n",
        "[INST]x[REF]y",
        "\u{3000}x\u{3000}",
        "Hello world",
    ];
    let mut failures = Vec::new();
    for name in MODELS {
        let model = SentencePieceModel::from_bytes(&model_bytes(name)).unwrap();
        for t in cases {
            if let Err(e) = check(&model, name, &format!("{t:?}"), t) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn byte_fallback_and_dummy_prefix_spans() {
    // Mistral v1: byte fallback, dummy prefix.
    let model = SentencePieceModel::from_bytes(&model_bytes(MODELS[0])).unwrap();
    let mut ids = Vec::new();
    let mut offs = Vec::new();
    // "Hello" -> "▁Hello": the dummy space mark has no input bytes, so the
    // first piece starts at 0.
    model.encode_with_offsets("Hello", &mut ids, &mut offs);
    assert_eq!(offs.first().map(|o| o.0), Some(0));
    assert_eq!(offs.last().map(|o| o.1), Some(5));
    // A character with no piece becomes byte pieces: all but the last have
    // an empty span at the character's start, the last spans the character.
    let text = "a\u{10FFFF}b";
    model.encode_with_offsets(text, &mut ids, &mut offs);
    let bytes: Vec<usize> = ids
        .iter()
        .enumerate()
        .filter(|(_, id)| model.is_byte(**id))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(bytes.len(), 4, "{ids:?}");
    let (c0, c1) = (1usize, 5usize);
    for &i in &bytes[..3] {
        assert_eq!(offs[i], (c0, c0));
    }
    assert_eq!(offs[bytes[3]], (c0, c1));
}
