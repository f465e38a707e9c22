//! The streaming table ([`StreamTable`]) of the decoders that concatenate
//! per-token bytes with a rule at the start, and `tokenizers`' WordPiece
//! `cleanup` it applies token by token.

use super::{ModelKind, StreamTable};
use crate::backend::StartRule;

/// The streaming table of the decoders that concatenate per-token bytes with
/// a rule at the start: `Replace(▁, " ")`, `ByteFallback`, `Fuse` and an
/// optional final `Strip(" ", 1, 0)` (Llama-2, Mistral, Gemma), and
/// `WordPiece` (its `cleanup` rewrites each token on its own). Every other
/// decoder is left to the windowed stream. `tests/it/stream.rs` checks each
/// table entry against `decode`.
pub(super) fn stream_table(
    decoder: &serde_json::Value,
    kind: ModelKind,
    tokens: &[Option<Box<str>>],
    byte_pieces: &[(u32, u8)],
) -> Option<StreamTable> {
    let ty = |d: &serde_json::Value| {
        d.get("type")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    match ty(decoder).as_deref()? {
        "Sequence" => {
            let steps = decoder.get("decoders")?.as_array()?;
            let names: Vec<String> = steps.iter().map(ty).collect::<Option<_>>()?;
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let rule = match names.as_slice() {
                ["Replace", "ByteFallback", "Fuse"] => StartRule::None,
                ["Replace", "ByteFallback", "Fuse", "Strip"] => {
                    let strip = &steps[3];
                    let ok = strip.get("content").and_then(serde_json::Value::as_str) == Some(" ")
                        && strip.get("start").and_then(serde_json::Value::as_u64) == Some(1)
                        && strip.get("stop").and_then(serde_json::Value::as_u64) == Some(0);
                    if !ok {
                        return None;
                    }
                    StartRule::StripSpace
                }
                _ => return None,
            };
            let replace = &steps[0];
            let pattern = replace.get("pattern")?.get("String")?.as_str()?;
            let content = replace.get("content")?.as_str()?;
            if pattern != "\u{2581}" || content != " " {
                return None;
            }
            let bytes = tokens
                .iter()
                .enumerate()
                .map(|(id, t)| {
                    let Some(t) = t.as_deref() else {
                        return Box::default();
                    };
                    let byte = u32::try_from(id).ok().and_then(|id| {
                        byte_pieces
                            .binary_search_by_key(&id, |&(i, _)| i)
                            .ok()
                            .map(|i| byte_pieces[i].1)
                    });
                    match byte {
                        Some(b) => Box::from([b]),
                        None => t.replace('\u{2581}', " ").into_bytes().into(),
                    }
                })
                .collect();
            Some(StreamTable {
                rule,
                bytes,
                first: Vec::new(),
            })
        }
        "WordPiece" if kind == ModelKind::WordPiece => {
            let prefix = decoder.get("prefix")?.as_str()?;
            let cleanup = decoder.get("cleanup")?.as_bool()?;
            let render = |t: &str| -> Box<[u8]> {
                if cleanup {
                    wordpiece_cleanup(t).into_bytes().into()
                } else {
                    t.as_bytes().into()
                }
            };
            let mut bytes = Vec::with_capacity(tokens.len());
            let mut first = Vec::with_capacity(tokens.len());
            for t in tokens {
                let Some(t) = t.as_deref() else {
                    bytes.push(Box::default());
                    first.push(Box::default());
                    continue;
                };
                first.push(render(t));
                let joined = match t.strip_prefix(prefix) {
                    Some(rest) if !prefix.is_empty() => rest.to_owned(),
                    _ => format!(" {t}"),
                };
                bytes.push(render(&joined));
            }
            Some(StreamTable {
                rule: StartRule::FirstToken,
                bytes,
                first,
            })
        }
        _ => None,
    }
}

/// What `tokenizers`' WordPiece `cleanup` replaces, in its order.
const CLEANUP: [(&str, &str); 11] = [
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
];

/// `tokenizers`' WordPiece `cleanup`, applied to one token's text.
///
/// A text where no pattern occurs comes back unchanged (each replacement
/// then finds nothing, in turn), which is almost every token: checking that
/// at its spaces first saved a third of MiniLM's load (invariant `crate-steps-equal-reference`).
fn wordpiece_cleanup(s: &str) -> String {
    let occurs = s
        .match_indices(' ')
        .any(|(i, _)| CLEANUP.iter().any(|(from, _)| s[i..].starts_with(from)));
    if !occurs {
        return s.to_owned();
    }
    cleanup_chain(s)
}

/// `cleanup` as `tokenizers` writes it: every replacement, in order.
fn cleanup_chain(s: &str) -> String {
    CLEANUP
        .iter()
        .fold(s.to_owned(), |acc, (from, to)| acc.replace(from, to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]
        /// The shortcut (no pattern occurs: unchanged) gives the chain's text.
        #[test]
        fn cleanup_shortcut_equals_the_chain(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(" "), Just("."), Just("?"), Just("!"), Just(","), Just("'"),
                    Just("n't"), Just("m"), Just("do"), Just("not"), Just("s"),
                    Just("ve"), Just("re"), Just("a"), Just("##"), Just("\u{e9}"),
                ],
                0..12,
            )
        ) {
            let s: String = parts.concat();
            prop_assert_eq!(wordpiece_cleanup(&s), cleanup_chain(&s));
            let joined = format!(" {s}");
            prop_assert_eq!(wordpiece_cleanup(&joined), cleanup_chain(&joined));
        }
    }
}
