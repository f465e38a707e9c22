//! Token counts and budgets on the handle: `count`, the longest prefix or suffix within a
//! token budget (the searches of `encode::budget`), `truncate`, and the context length.

use std::sync::Arc;

use super::{BudgetFacts, Tokenizer};
use crate::encode::budget::Search;
use crate::encode::{EdgeRule, Side, SplitFamily};
use crate::error::Result;

impl Tokenizer {
    /// The number of tokens [`encode`](Self::encode) returns for `text`,
    /// without handing out an id vector (long texts are counted in parallel
    /// like `encode`). Not recorded in the encode metrics.
    pub fn count(&self, text: &str, add_special_tokens: bool) -> Result<usize> {
        let inner = &*self.inner;
        inner
            .parallel
            .encode(&*inner.backend, text, add_special_tokens, false)
            .map(|e| e.len())
    }

    /// `count(text, false)`: the counter the budget searches use.
    pub(crate) fn count_raw(&self, text: &str) -> Result<usize> {
        self.count(text, false)
    }

    /// How many ids `add_special_tokens` adds to a non-empty text (BOS, EOS,
    /// a template's `[CLS]`/`[SEP]`).
    pub(crate) fn special_overhead(&self, text: &str, add_special_tokens: bool) -> Result<usize> {
        if !add_special_tokens || text.is_empty() {
            return Ok(0);
        }
        if let Some(&k) = self.inner.budget.special_overhead.get() {
            return Ok(k);
        }
        let k = self
            .count("a", true)?
            .saturating_sub(self.count("a", false)?);
        Ok(*self.inner.budget.special_overhead.get_or_init(|| k))
    }

    /// The added-token edge rule when this tokenizer's family has restart
    /// points for the budget searches (DESIGN.md, invariant `restart-point-additive`); `None` when
    /// the searches re-encode char by char.
    pub(crate) fn budget_edges(&self) -> Option<&EdgeRule> {
        let spec = self.inner.backend.split_spec()?;
        match spec.family {
            SplitFamily::RegexBpe | SplitFamily::WordPiece => Some(&spec.edges),
            SplitFamily::WholeTextBpe => {
                let ok = *self
                    .inner
                    .budget
                    .space_starts_tokens
                    .get_or_init(|| self.no_token_joins_space());
                ok.then_some(&spec.edges)
            }
            _ => None,
        }
    }

    /// Whether no vocabulary entry holds an ASCII graphic char followed by a
    /// space symbol (`▁`, `Ġ` or a space): then BPE never merges across such
    /// a space.
    fn no_token_joins_space(&self) -> bool {
        let backend = &self.inner.backend;
        (0..backend.vocab_size()).all(|id| {
            let Some(token) = u32::try_from(id)
                .ok()
                .and_then(|id| backend.id_to_token(id))
            else {
                return true;
            };
            let mut prev_graphic = false;
            for c in token.chars() {
                if prev_graphic && matches!(c, '▁' | 'Ġ' | ' ') {
                    return false;
                }
                prev_graphic = c.is_ascii_graphic();
            }
            true
        })
    }

    /// The longest prefix of `text`, ending on a character boundary, whose
    /// own encoding has at most `max_tokens` tokens, and that count. Empty
    /// when not even one character fits.
    pub(crate) fn prefix_within_counted(
        &self,
        text: &str,
        max_tokens: usize,
        add_special_tokens: bool,
    ) -> Result<(usize, usize)> {
        let k = self.special_overhead(text, add_special_tokens)?;
        if text.is_empty() || max_tokens < k {
            return Ok((0, self.count("", add_special_tokens)?));
        }
        let mut search = Search::new(text, self.budget_edges(), |t: &str| self.count_raw(t));
        match search.prefix(max_tokens - k)? {
            (0, _) => Ok((0, self.count("", add_special_tokens)?)),
            (end, tokens) => Ok((end, tokens + k)),
        }
    }

    /// The longest prefix of `text` that ends on a character boundary and
    /// whose own encoding (`encode(prefix, add_special_tokens)`) has at most
    /// `max_tokens` tokens. Exact, although counts are not monotone (a longer
    /// text may need fewer tokens); empty when not even one character fits.
    ///
    /// ```no_run
    /// let tok = router_tokenizer::create_tokenizer("o200k_base")?;
    /// let head = tok.prefix_within("Hello, world! How are you?", 4, false)?;
    /// assert!(tok.count(head, false)? <= 4);
    /// # Ok::<(), router_tokenizer::Error>(())
    /// ```
    pub fn prefix_within<'t>(
        &self,
        text: &'t str,
        max_tokens: usize,
        add_special_tokens: bool,
    ) -> Result<&'t str> {
        let (end, _) = self.prefix_within_counted(text, max_tokens, add_special_tokens)?;
        Ok(&text[..end])
    }

    /// The longest suffix of `text` that starts on a character boundary and
    /// whose own encoding has at most `max_tokens` tokens (see
    /// [`prefix_within`](Self::prefix_within)).
    pub fn suffix_within<'t>(
        &self,
        text: &'t str,
        max_tokens: usize,
        add_special_tokens: bool,
    ) -> Result<&'t str> {
        let k = self.special_overhead(text, add_special_tokens)?;
        if text.is_empty() || max_tokens < k {
            return Ok(&text[text.len()..]);
        }
        let mut search = Search::new(text, self.budget_edges(), |t: &str| self.count_raw(t));
        let (start, _) = search.suffix(max_tokens - k)?;
        Ok(&text[start..])
    }

    /// `text` cut to at most `max_tokens` tokens on a character boundary:
    /// [`Side::Right`] keeps the longest prefix, [`Side::Left`] the longest
    /// suffix.
    pub fn truncate<'t>(
        &self,
        text: &'t str,
        max_tokens: usize,
        side: Side,
        add_special_tokens: bool,
    ) -> Result<&'t str> {
        match side {
            Side::Right => self.prefix_within(text, max_tokens, add_special_tokens),
            Side::Left => self.suffix_within(text, max_tokens, add_special_tokens),
        }
    }

    /// The model's context length in tokens: `config.json`'s
    /// `max_position_embeddings` (or `n_positions`, `max_seq_len`, …, the
    /// smallest present; `text_config`'s for multimodal models), else
    /// `tokenizer_config.json`'s `model_max_length` unless it is the "no
    /// limit" sentinel, else what the loader set
    /// ([`with_context_length`](Self::with_context_length)).
    pub fn context_length(&self) -> Option<usize> {
        self.inner.budget.context_length
    }

    /// The same tokenizer with another context length (for sources whose
    /// configs lack one; the GGUF loader sets `context_length` here).
    pub fn with_context_length(&self, tokens: usize) -> Self {
        let budget = &self.inner.budget;
        let budget = Arc::new(BudgetFacts {
            context_length: Some(tokens),
            special_overhead: budget.special_overhead.clone(),
            space_starts_tokens: budget.space_starts_tokens.clone(),
        });
        self.derive(|inner| inner.budget = budget)
    }

    /// Checks that a prompt of `prompt_tokens` plus a completion of
    /// `max_tokens` fits the [`context_length`](Self::context_length).
    ///
    /// # Errors
    /// [`ErrorKind::ContextLengthExceeded`](crate::ErrorKind::ContextLengthExceeded),
    /// naming both numbers and the limit (a router's HTTP 400);
    /// [`ErrorKind::ContextLengthUnknown`](crate::ErrorKind::ContextLengthUnknown)
    /// when the configs name no context length (HTTP 500): a budget that
    /// cannot be checked is not reported as fitting. Set one with
    /// [`with_context_length`](Self::with_context_length).
    pub fn check_budget(&self, prompt_tokens: usize, max_tokens: usize) -> Result<()> {
        let Some(context_length) = self.context_length() else {
            return Err(crate::Error::new(crate::ErrorKind::ContextLengthUnknown {
                model: self.source().to_owned(),
            }));
        };
        match prompt_tokens.checked_add(max_tokens) {
            Some(total) if total <= context_length => Ok(()),
            _ => Err(crate::Error::new(crate::ErrorKind::ContextLengthExceeded {
                prompt_tokens,
                max_tokens,
                context_length,
            })),
        }
    }
}
