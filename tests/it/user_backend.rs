//! A tokenizer of the user's own behind the handle ([`Backend`] and
//! `Tokenizer::from_backend`), written against the public API only: the six
//! required methods and the defaults are enough for every handle feature
//! that does not need offsets.

use router_tokenizer::traits::{Backend, DecodeStyle};
use router_tokenizer::{
    DecodeStream, EncodeOptions, Encoding, Format, Parallelism, SpecialToken, SpecialTokens,
    SplitFamily, Tokenizer,
};
use std::sync::Arc;

/// One id per byte, and `|` (id 256) as an end-of-sequence token.
struct Bytes {
    specials: SpecialTokens,
}

impl Bytes {
    fn new() -> Self {
        let mut specials = SpecialTokens::default();
        specials.eos = Some(SpecialToken {
            content: "|".into(),
            id: 256,
        });
        Self { specials }
    }
}

impl Backend for Bytes {
    fn backend_name(&self) -> &'static str {
        "bytes"
    }

    fn encode(&self, text: &str, add_special_tokens: bool) -> router_tokenizer::Result<Encoding> {
        let mut ids: Vec<u32> = text.bytes().map(u32::from).collect();
        if add_special_tokens {
            ids.push(256);
        }
        Ok(Encoding::from_ids(ids))
    }

    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> router_tokenizer::Result<String> {
        let mut out = Vec::new();
        for &id in ids {
            match u8::try_from(id) {
                Ok(b) => out.push(b),
                Err(_) if id == 256 => {
                    if !skip_special_tokens {
                        out.push(b'|');
                    }
                }
                Err(_) => {
                    return Err(router_tokenizer::Error::from(
                        router_tokenizer::ErrorKind::UnknownTokenId {
                            id,
                            vocab_size: 257,
                        },
                    ));
                }
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn vocab_size(&self) -> usize {
        257
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        match token.as_bytes() {
            [b] => Some(u32::from(*b)),
            _ => None,
        }
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        u8::try_from(id).ok().map(|b| char::from(b).to_string())
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.specials
    }
}

fn handle() -> Tokenizer {
    Tokenizer::from_backend(Arc::new(Bytes::new()), Format::HfJson)
}

#[test]
fn encodes_decodes_and_counts() {
    let tok = handle();
    assert_eq!(tok.backend_name(), "bytes");
    assert_eq!(tok.encode("hi", true).unwrap().ids(), &[104, 105, 256]);
    assert_eq!(tok.count("hi", true).unwrap(), 3);
    assert_eq!(tok.decode(&[104, 105, 256], true).unwrap(), "hi");
    assert_eq!(tok.decode(&[104, 105, 256], false).unwrap(), "hi|");
    assert!(tok.decode(&[999], false).is_err());
    // The defaults: specials from `special_tokens`, eos from it too.
    assert!(tok.is_special_id(256));
    assert!(!tok.is_special_id(104));
    assert_eq!(tok.eos_token_ids(), &[256]);
    assert_eq!(tok.decode_style(), DecodeStyle::Windowed);
    assert_eq!(tok.vocab_size(), 257);
    assert_eq!(tok.token_to_id("a"), Some(97));
}

#[test]
fn is_sequential_on_every_path() {
    let tok = handle();
    assert!(matches!(tok.split_family(), SplitFamily::Sequential(_)));
    let text = "word ".repeat(50_000);
    let want = tok.encode(&text, false).unwrap();
    for parallelism in [Parallelism::Sequential, Parallelism::Split] {
        let options = EncodeOptions::new().with_parallelism(parallelism);
        assert_eq!(tok.encode_with(&text, &options).unwrap(), want);
    }
    let split = EncodeOptions::new().with_parallelism(Parallelism::SplitAt(vec![1000]));
    let enc = tok.encode_with(&text, &split).unwrap();
    assert_eq!(
        enc.parallel_report().and_then(|r| r.fallback),
        Some("sequential family")
    );
}

#[test]
fn offsets_fail_by_default() {
    let tok = handle();
    let err = tok
        .encode_with("hi", &EncodeOptions::new().with_offsets(true))
        .unwrap_err();
    assert!(
        matches!(err.kind(), router_tokenizer::ErrorKind::Backend { .. }),
        "{err}"
    );
}

#[test]
fn streams_and_chat_work() {
    let tok = handle();
    let mut stream = DecodeStream::new(&tok, &[], false);
    let mut out = String::new();
    for id in tok.encode("héllo", false).unwrap().ids() {
        if let Some(piece) = stream.step(*id).unwrap() {
            out.push_str(&piece);
        }
    }
    assert_eq!(out, "héllo");
    let tok = tok
        .with_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}")
        .unwrap();
    let request =
        router_tokenizer::chat::ChatRequest::new(vec![router_tokenizer::chat::Message::new(
            "user", "hi",
        )]);
    let enc = tok
        .encode_chat(&request, &router_tokenizer::EncodeChatOptions::default())
        .unwrap();
    assert_eq!(enc.ids, vec![104, 105]);
}
