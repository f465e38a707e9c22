//! The facade's view of a [`SentencePieceModel`]: BOS/EOS from the config
//! beside the file, the special-token policy, typed errors.

use aho_corasick::{AhoCorasick, MatchKind};

use super::{SentencePieceModel, SpmError};
use crate::backend::{DecodeStyle, Decoder, Encoder, Tokenizer};
use crate::encoding::Encoding;
use crate::error::{Error, Result};
use crate::load::SpecialTokenPolicy;
use crate::load::config::TokenizerConfig;
use crate::special::{SpecialToken, SpecialTokens};

const NAME: &str = "sentencepiece";

pub(crate) struct SpmBackend {
    model: SentencePieceModel,
    special_tokens: SpecialTokens,
    /// Control and unknown pieces (`<s>`, `[INST]`, `<unk>`), matched in the
    /// text with the `Parse` policy as tokenizer.json's added tokens are.
    control_matcher: Option<(AhoCorasick, Vec<u32>)>,
    prefix: Vec<u32>,
    suffix: Vec<u32>,
}

impl SpmBackend {
    pub(crate) fn new(
        model: SentencePieceModel,
        config: &TokenizerConfig,
        policy: SpecialTokenPolicy,
    ) -> Result<Self> {
        let piece = |id: Option<u32>| -> Option<SpecialToken> {
            let id = id?;
            Some(SpecialToken {
                content: model.id_to_piece(id)?.to_owned(),
                id,
            })
        };
        let by_role = |role: &str, fallback: Option<u32>| -> Option<SpecialToken> {
            match config.special_token(role) {
                Some(content) => model
                    .piece_to_id(&content)
                    .map(|id| SpecialToken { content, id }),
                None => piece(fallback),
            }
        };
        let mut special_tokens = SpecialTokens {
            bos: by_role("bos", model.bos_id()),
            eos: by_role("eos", model.eos_id()),
            unk: by_role("unk", model.unk_id()),
            pad: by_role("pad", model.pad_id()),
            ..SpecialTokens::default()
        };
        let n = u32::try_from(model.vocab_size())
            .map_err(|_| Error::backend(NAME, "vocabulary too large"))?;
        let controls: Vec<u32> = (0..n)
            .filter(|&id| model.is_control(id) || model.is_unknown(id))
            .collect();
        special_tokens.additional = controls.iter().filter_map(|&id| piece(Some(id))).collect();
        let control_matcher = if policy == SpecialTokenPolicy::Parse && !controls.is_empty() {
            let texts: Vec<&str> = controls
                .iter()
                .filter_map(|&id| model.id_to_piece(id))
                .collect();
            let matcher = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&texts)
                .map_err(|e| Error::backend(NAME, format!("control-piece matcher: {e}")))?;
            Some((matcher, controls))
        } else {
            None
        };
        // No config: sentencepiece adds nothing. A config follows transformers'
        // slow tokenizers: add_bos_token defaults to true, add_eos_token to false.
        let has_config = config.raw.is_some();
        let add_bos = config.add_bos_token.unwrap_or(has_config);
        let add_eos = config.add_eos_token.unwrap_or(false);
        let prefix = special_tokens
            .bos
            .as_ref()
            .filter(|_| add_bos)
            .map(|t| t.id)
            .into_iter()
            .collect();
        let suffix = special_tokens
            .eos
            .as_ref()
            .filter(|_| add_eos)
            .map(|t| t.id)
            .into_iter()
            .collect();
        Ok(Self {
            model,
            special_tokens,
            control_matcher,
            prefix,
            suffix,
        })
    }

    /// Encodes `text`, control pieces split out first when the policy parses them.
    fn encode_segments(
        &self,
        text: &str,
        ids: &mut Vec<u32>,
        mut offsets: Option<&mut Vec<(usize, usize)>>,
    ) {
        let mut seg_ids = Vec::new();
        let mut seg_offsets = Vec::new();
        let mut encode = |s: usize,
                          e: usize,
                          ids: &mut Vec<u32>,
                          offsets: &mut Option<&mut Vec<(usize, usize)>>| {
            if s == e {
                return;
            }
            match offsets {
                Some(offsets) => {
                    self.model
                        .encode_with_offsets(&text[s..e], &mut seg_ids, &mut seg_offsets);
                    ids.extend_from_slice(&seg_ids);
                    offsets.extend(seg_offsets.iter().map(|&(a, b)| (a + s, b + s)));
                }
                None => {
                    self.model.encode_into(&text[s..e], &mut seg_ids);
                    ids.extend_from_slice(&seg_ids);
                }
            }
        };
        let mut pos = 0;
        if let Some((matcher, control_ids)) = &self.control_matcher {
            for m in matcher.find_iter(text) {
                encode(pos, m.start(), ids, &mut offsets);
                ids.push(control_ids[m.pattern().as_usize()]);
                if let Some(o) = offsets.as_mut() {
                    o.push((m.start(), m.end()));
                }
                pos = m.end();
            }
        }
        encode(pos, text.len(), ids, &mut offsets);
    }

    /// The engine itself, for `rtok inspect` and tests.
    #[allow(dead_code)]
    pub(crate) fn model(&self) -> &SentencePieceModel {
        &self.model
    }
}

fn decode_error(e: SpmError, vocab_size: usize) -> Error {
    match e {
        SpmError::UnknownId(id) => Error::unknown_id(id, vocab_size),
        other => Error::backend(NAME, other.to_string()),
    }
}

impl Encoder for SpmBackend {
    fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let mut ids = Vec::with_capacity(text.len() / 3 + 4);
        if add_special_tokens {
            ids.extend_from_slice(&self.prefix);
        }
        self.encode_segments(text, &mut ids, None);
        if add_special_tokens {
            ids.extend_from_slice(&self.suffix);
        }
        Ok(Encoding::from_ids(ids))
    }

    fn encode_with_offsets(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let mut ids = Vec::with_capacity(text.len() / 3 + 4);
        let mut offsets = Vec::with_capacity(text.len() / 3 + 4);
        if add_special_tokens {
            ids.extend_from_slice(&self.prefix);
            offsets.resize(ids.len(), (0, 0));
        }
        self.encode_segments(text, &mut ids, Some(&mut offsets));
        if add_special_tokens {
            ids.extend_from_slice(&self.suffix);
            offsets.resize(ids.len(), (text.len(), text.len()));
        }
        Encoding::with_offsets(ids, offsets)
            .ok_or_else(|| Error::backend(NAME, "offsets do not match ids"))
    }
}

impl Decoder for SpmBackend {
    fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.model
            .decode(ids, skip_special_tokens)
            .map_err(|e| decode_error(e, self.model.vocab_size()))
    }

    /// The dummy-prefix space is stripped at the start of a decode, so the
    /// result is not a plain concatenation of pieces.
    fn decode_style(&self) -> DecodeStyle {
        DecodeStyle::Windowed
    }

    fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.model.piece_bytes(id)
    }
}

impl Tokenizer for SpmBackend {
    fn backend_name(&self) -> &'static str {
        NAME
    }

    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.model.piece_to_id(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.model.id_to_piece(id).map(str::to_owned)
    }

    fn is_special_id(&self, id: u32) -> bool {
        self.model.is_control(id)
    }

    fn special_tokens(&self) -> &SpecialTokens {
        &self.special_tokens
    }
}
