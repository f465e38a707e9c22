//! Special tokens, the policy for special-token text in the input, and the eos
//! ids a router stops on. Shared by backends and the loader (below both).

/// What to do with special-token text (`<|im_start|>`) found inside the input.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SpecialTokenPolicy {
    /// Parse it as that special token, as Hugging Face tokenizers do.
    #[default]
    Parse,
    /// Encode it as ordinary text (safe for untrusted user input).
    PlainText,
}

/// Corrections to which added tokens a chat request may not forge
/// ([`LoadOptions::with_control_tokens`](crate::LoadOptions::with_control_tokens)),
/// for a model whose file marks them wrongly.
///
/// By default every `special` added token is a control marker, and so is a
/// non-special one that the chat template writes literally or that has a
/// marker's shape (`<|…|>`, `<｜…｜>`, `[INST]`); under
/// [`ChatSpecialTokens::PlainText`](crate::ChatSpecialTokens::PlainText) a
/// marker typed into a request is encoded as text, and
/// [`Reject`](crate::ChatSpecialTokens::Reject) refuses it (DESIGN.md,
/// "markers stay text").
///
/// ```
/// use router_tokenizer::ControlTokens;
/// let fix = ControlTokens::default()
///     .with_marker("<|my_role|>")
///     .with_text("<table>");
/// assert_eq!(fix.markers(), ["<|my_role|>"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ControlTokens {
    markers: Vec<String>,
    text: Vec<String>,
}

impl ControlTokens {
    /// Also treat this added token as a control marker.
    pub fn with_marker(mut self, token: impl Into<String>) -> Self {
        self.markers.push(token.into());
        self
    }

    /// Treat this added token as ordinary vocabulary: typed by a user it is
    /// its id, as `encode` gives it (special or not).
    pub fn with_text(mut self, token: impl Into<String>) -> Self {
        self.text.push(token.into());
        self
    }

    /// The added tokens made markers.
    pub fn markers(&self) -> &[String] {
        &self.markers
    }

    /// The added tokens made ordinary vocabulary.
    pub fn text(&self) -> &[String] {
        &self.text
    }
}

/// One special token: its text and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpecialToken {
    /// The token's text, e.g. `<|eot_id|>`.
    pub content: String,
    /// Its id.
    pub id: u32,
}

/// The named special tokens of a tokenizer plus any additional ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SpecialTokens {
    /// Beginning of sequence.
    pub bos: Option<SpecialToken>,
    /// End of sequence (the tokenizer's own; see [`Tokenizer::eos_token_ids`](crate::Tokenizer::eos_token_ids) for all stop ids).
    pub eos: Option<SpecialToken>,
    /// Unknown.
    pub unk: Option<SpecialToken>,
    /// Padding.
    pub pad: Option<SpecialToken>,
    /// Separator (BERT).
    pub sep: Option<SpecialToken>,
    /// Classifier (BERT).
    pub cls: Option<SpecialToken>,
    /// Mask (BERT).
    pub mask: Option<SpecialToken>,
    /// Every other special token, in id order.
    pub additional: Vec<SpecialToken>,
}

impl SpecialTokens {
    /// The named tokens that are set, in the order bos, eos, unk, pad, sep, cls, mask.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, &SpecialToken)> {
        [
            ("bos", &self.bos),
            ("eos", &self.eos),
            ("unk", &self.unk),
            ("pad", &self.pad),
            ("sep", &self.sep),
            ("cls", &self.cls),
            ("mask", &self.mask),
        ]
        .into_iter()
        .filter_map(|(name, t)| t.as_ref().map(|t| (name, t)))
    }
}

/// Merges eos ids in the order routers check them: `generation_config.json`,
/// then `config.json`, then the tokenizer's eos token; duplicates dropped.
pub(crate) fn merge_eos_ids(
    generation_config: &[u32],
    model_config: &[u32],
    tokenizer_eos: Option<u32>,
) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    for id in generation_config
        .iter()
        .chain(model_config)
        .copied()
        .chain(tokenizer_eos)
    {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eos_ids_merge_in_order_without_duplicates() {
        assert_eq!(
            merge_eos_ids(&[200002, 199999], &[200002], Some(200002)),
            vec![200002, 199999]
        );
        assert_eq!(merge_eos_ids(&[], &[], Some(2)), vec![2]);
        assert!(merge_eos_ids(&[], &[], None).is_empty());
    }
}
