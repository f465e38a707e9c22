//! [`Tokenizer`]: the one handle a router holds, over any backend.

mod budget;

use rayon::prelude::*;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::backend::{self, DecodeStyle};
use crate::cache::prefix::L1Cache;
use crate::cache::{L0Cache, PromptCacheOptions};
use crate::chat::{ChatRequest, ChatTemplate, LazyChatTemplate};
use crate::contract::Format;
use crate::encode::parallel::ParallelEncoder;
use crate::encode::{EncodeOptions, ParallelOptions, Parallelism, SplitFamily};
use crate::encoding::Encoding;
use crate::error::Result;
use crate::metrics::{Labels, Metrics};
use crate::request::{ChatFormat, RequestFacts};
use crate::special::{ControlTokens, SpecialToken, SpecialTokens};

/// Facts about where a tokenizer came from, kept for metadata and chat templates.
#[derive(Debug, Clone)]
pub(crate) struct TokenizerInfo {
    pub source: String,
    pub format: Format,
    /// The folder the tokenizer and its configs were read from.
    pub dir: Option<PathBuf>,
    pub eos_token_ids: Vec<u32>,
    /// `tokenizer_config.json`, for the chat template loader.
    pub config: Option<Arc<Value>>,
    pub chat_template_override: Option<PathBuf>,
    /// A `tekken.json`'s `config.version` (`v3`, `v7`, …): the instruct
    /// version mistral-common encodes requests with.
    pub tekken_version: Option<String>,
}

#[derive(Clone)]
struct Inner {
    backend: Arc<dyn backend::Tokenizer>,
    info: TokenizerInfo,
    metrics: Metrics,
    parallel: ParallelEncoder,
    chat: Arc<ChatSlot>,
    budget: Arc<BudgetFacts>,
    /// What `encode_chat` learns once (special-token texts, BOS/EOS ids).
    request: Arc<RequestFacts>,
    /// The chat format `encode_chat` uses when its options name none.
    chat_format: Option<ChatFormat>,
    /// The L0 prompt cache (shared by clones and by handles that differ only
    /// in parallel options, chat template or context length).
    l0: Option<Arc<L0Cache>>,
    /// The L1 prefix cache, shared like L0.
    l1: Option<Arc<L1Cache>>,
    cache_options: PromptCacheOptions,
}

/// What the token-budget operations learn about a tokenizer once.
#[derive(Default)]
struct BudgetFacts {
    /// The model's context length (configs, or set by the loader).
    context_length: Option<usize>,
    /// Ids `add_special_tokens` adds to a non-empty text.
    special_overhead: OnceLock<usize>,
    /// Whether no vocabulary entry joins an ASCII graphic char to a following
    /// space symbol (invariant `restart-point-additive`, whole-text BPE).
    space_starts_tokens: OnceLock<bool>,
}

/// The chat template: found and compiled on first use, or set explicitly.
enum ChatSlot {
    Lazy(LazyChatTemplate),
    Ready(ChatTemplate),
}

impl ChatSlot {
    fn for_info(info: &TokenizerInfo, backend: &dyn backend::Tokenizer) -> Self {
        Self::Lazy(
            LazyChatTemplate::new(
                info.dir.clone().unwrap_or_default(),
                info.chat_template_override.clone(),
                info.config.as_deref().cloned(),
            )
            .with_fallback(template_fallback(info, backend)),
        )
    }
}

/// What a template sees as `bos_token`, `eos_token`, ... where no
/// `tokenizer_config.json` names them: a bare SentencePiece model's or GGUF
/// file's own tokens (the pieces of its `bos_id`, `eos_id`, ...), as
/// transformers' slow tokenizers give `<s>`, `</s>`, `<unk>` with no config;
/// nothing for the other formats, which have none without a config.
fn template_fallback(
    info: &TokenizerInfo,
    backend: &dyn backend::Tokenizer,
) -> crate::chat::TemplateSpecialTokens {
    let mut out = crate::chat::TemplateSpecialTokens::new();
    if info.config.is_none() && matches!(info.format, Format::SentencePiece | Format::Gguf) {
        for (role, token) in backend.special_tokens().named() {
            out.set(format!("{role}_token"), token.content.clone());
        }
    }
    out
}

/// A loaded tokenizer. Cheap to clone (one `Arc`), `Send + Sync`.
///
/// ```no_run
/// let tok = router_tokenizer::create_tokenizer("o200k_base")?;
/// let enc = tok.encode("hello world", false)?;
/// assert_eq!(tok.decode(enc.ids(), false)?, "hello world");
/// # Ok::<(), router_tokenizer::Error>(())
/// ```
#[derive(Clone)]
pub struct Tokenizer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("source", &self.inner.info.source)
            .field("format", &self.inner.info.format)
            .field("backend", &self.inner.backend.backend_name())
            .field("vocab_size", &self.inner.backend.vocab_size())
            .finish()
    }
}

impl Tokenizer {
    pub(crate) fn build(backend: Arc<dyn backend::Tokenizer>, info: TokenizerInfo) -> Self {
        let backend_name = backend.backend_name();
        let metrics = Metrics::new(Labels::new(&info.source, backend_name));
        let parallel = ParallelEncoder::new(ParallelOptions::default(), metrics.labels());
        let l0 = L0Cache::new(&PromptCacheOptions::default(), metrics.labels()).map(Arc::new);
        let l1 = L1Cache::new(&PromptCacheOptions::default(), metrics.labels()).map(Arc::new);
        let chat = Arc::new(ChatSlot::for_info(&info, &*backend));
        let budget = Arc::new(BudgetFacts {
            context_length: crate::config::context_length(
                info.dir.as_deref(),
                info.config.as_deref(),
            ),
            ..BudgetFacts::default()
        });
        Self {
            inner: Arc::new(Inner {
                backend,
                info,
                metrics,
                parallel,
                chat,
                budget,
                request: Arc::default(),
                chat_format: None,
                l0,
                l1,
                cache_options: PromptCacheOptions::default(),
            }),
        }
    }

    /// The same tokenizer (shared backend, metrics and metadata) with other
    /// parallel-encoding options. Cheap: no reload.
    pub fn with_parallel(&self, options: ParallelOptions) -> Self {
        if self.inner.parallel.options() == &options {
            return self.clone();
        }
        self.derive(|inner| inner.parallel = inner.parallel.with_options(options))
    }

    /// A new handle sharing everything with this one but what `change` sets
    /// (the backend, caches and lazily built facts stay shared).
    fn derive(&self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = (*self.inner).clone();
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The chat template, found with transformers' precedence (the loader's
    /// override file, `chat_template.jinja`, `chat_template.json`,
    /// `tokenizer_config.json`) and compiled once, on first use.
    pub fn chat_template(&self) -> Result<&ChatTemplate> {
        match &*self.inner.chat {
            ChatSlot::Lazy(lazy) => Ok(lazy.get()?),
            ChatSlot::Ready(t) => Ok(t),
        }
    }

    /// [`chat_template`](Self::chat_template) with the chat layer's error, so callers can
    /// tell "no template" apart.
    pub(crate) fn chat_template_raw(
        &self,
    ) -> std::result::Result<&ChatTemplate, crate::chat::ChatTemplateError> {
        match &*self.inner.chat {
            ChatSlot::Lazy(lazy) => lazy.get(),
            ChatSlot::Ready(t) => Ok(t),
        }
    }

    /// Renders a chat request into the prompt string, exactly as transformers'
    /// `apply_chat_template(..., tokenize=False)` does.
    pub fn apply_chat_template(&self, request: &ChatRequest) -> Result<String> {
        Ok(self.chat_template()?.render(request)?)
    }

    /// The same tokenizer with another chat template (Jinja text), compiled now.
    pub fn with_chat_template(&self, template: &str) -> Result<Self> {
        let mut specials = crate::chat::TemplateSpecialTokens::from_dir(
            self.inner
                .info
                .dir
                .as_deref()
                .unwrap_or(std::path::Path::new("")),
            self.inner.info.config.as_deref(),
        )?;
        specials.fill_from(&template_fallback(&self.inner.info, &*self.inner.backend));
        let compiled = ChatTemplate::from_text(template, &specials)?;
        Ok(self.derive(|inner| {
            inner.chat = Arc::new(ChatSlot::Ready(compiled));
            // The control markers depend on the template's literals.
            inner.request = Arc::new(inner.request.fresh());
        }))
    }

    /// This handle's parallel-encoding options.
    pub fn parallel_options(&self) -> &ParallelOptions {
        self.inner.parallel.options()
    }

    /// Which merge rule lets this tokenizer's encodes be cut into chunks, or
    /// why they are always sequential.
    pub fn split_family(&self) -> SplitFamily {
        self.inner.backend.split_spec().map_or(
            SplitFamily::Sequential("backend declares no split family"),
            |s| s.family,
        )
    }

    /// Wraps a tokenizer of your own ([`Backend`](crate::traits::Backend)):
    /// the handle adds metrics, prompt caches, chat templates, budgets and
    /// streaming; `format` is what [`format`](Self::format) reports (and
    /// picks the chat template fallbacks). It encodes sequentially.
    pub fn from_backend(backend: Arc<dyn crate::traits::Backend>, format: Format) -> Self {
        Self::from_engine(Arc::new(backend::plugin::Plugged(backend)), format)
    }

    /// [`from_backend`](Self::from_backend) for one of the crate's own
    /// backends, with all its fast paths.
    pub(crate) fn from_engine(backend: Arc<dyn backend::Tokenizer>, format: Format) -> Self {
        let eos = backend
            .special_tokens()
            .eos
            .as_ref()
            .map(|t| t.id)
            .into_iter()
            .collect();
        Self::build(
            backend,
            TokenizerInfo {
                source: String::new(),
                format,
                dir: None,
                eos_token_ids: eos,
                config: None,
                chat_template_override: None,
                tekken_version: None,
            },
        )
    }

    /// Whether two handles share one loaded tokenizer (as concurrent loads of
    /// one source do).
    pub fn same_handle(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Encodes `text`; `add_special_tokens` adds BOS/EOS as the model expects.
    ///
    /// Long inputs (see [`ParallelOptions`]) are encoded in parallel chunks
    /// when the tokenizer's [`split_family`](Self::split_family) allows; the
    /// ids are always exactly [`Parallelism::Sequential`]'s. For offsets,
    /// another path or a report, see [`encode_with`](Self::encode_with).
    ///
    /// Texts of at least [`PromptCacheOptions::l0_min_bytes`] go through the
    /// handle's L0 cache when it is on, and on an L0 miss texts of at least
    /// [`PromptCacheOptions::l1_min_bytes`] through the L1 prefix cache: the
    /// ids are the same either way.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let inner = &*self.inner;
        inner.metrics.encode(|| match &inner.l0 {
            Some(cache) if cache.applies(text) => {
                let flags = u8::from(add_special_tokens)
                    | (u8::from(inner.backend.parses_special_text()) << 1);
                cache
                    .get_or_encode(text, flags, || {
                        self.encode_through_l1(text, add_special_tokens)
                            .map(Encoding::into_ids)
                    })
                    .map(Encoding::from_ids)
            }
            _ => self.encode_through_l1(text, add_special_tokens),
        })
    }

    /// `encode` below L0: through the L1 cache when it applies, else the
    /// parallel encoder (which encodes short texts sequentially).
    fn encode_through_l1(&self, text: &str, add_special_tokens: bool) -> Result<Encoding> {
        let inner = &*self.inner;
        if let Some(l1) = &inner.l1
            && l1.applies(text)
            && let Some(encoding) =
                l1.encode(&inner.parallel, &*inner.backend, text, add_special_tokens)?
        {
            return Ok(encoding);
        }
        inner
            .parallel
            .encode(&*inner.backend, text, add_special_tokens, false)
    }

    /// Builds what the backend builds in the background after a load (the
    /// tiktoken backend's byte-level engine, under a second for o200k; a
    /// `tokenizer.json`'s model, about a third of a second for Llama-3),
    /// blocking until it is ready. Never needed for correctness: encodes
    /// before it give the same ids, on a slower path. It also finds and
    /// compiles the chat template and the request path's tables (control
    /// markers, BOS/EOS ids), so the first `encode_chat` pays none of it. A
    /// router can call it once at startup so the first requests run at full
    /// speed ([`warm_up_async`](Self::warm_up_async) on a tokio runtime).
    pub fn warm_up(&self) {
        self.inner.backend.warm_up();
        if let Ok(template) = self.chat_template() {
            self.inner.request.warm(&*self.inner.backend, template);
        }
    }

    /// The same tokenizer with other prompt caches (a fresh cache unless the
    /// options are this handle's). Cheap: no reload.
    pub fn with_prompt_cache(&self, options: PromptCacheOptions) -> Self {
        if self.inner.cache_options == options {
            return self.clone();
        }
        self.derive(|inner| {
            let labels = inner.metrics.labels();
            inner.l0 = L0Cache::new(&options, labels).map(Arc::new);
            inner.l1 = L1Cache::new(&options, labels).map(Arc::new);
            inner.cache_options = options;
        })
    }

    /// The chat format [`encode_chat`](Self::encode_chat) uses when its
    /// options name none: the one set by [`with_chat_format`](Self::with_chat_format)
    /// (or `LoadOptions::chat_format`), else [`ChatFormat::MistralCommon`]
    /// for a `tekken.json` without a Jinja template beside it, else
    /// [`ChatFormat::Jinja`] (transformers' `apply_chat_template`).
    pub fn chat_format(&self) -> ChatFormat {
        if let Some(format) = self.inner.chat_format {
            return format;
        }
        if self.format() == Format::Tekken && self.chat_template().is_err() {
            return ChatFormat::MistralCommon;
        }
        ChatFormat::Jinja
    }

    /// The same tokenizer with another default chat format. Cheap: no reload.
    pub fn with_chat_format(&self, format: ChatFormat) -> Self {
        self.derive(|inner| inner.chat_format = Some(format))
    }

    /// The same tokenizer with corrected control markers ([`ControlTokens`]).
    /// Cheap: no reload.
    pub fn with_control_tokens(&self, control: ControlTokens) -> Self {
        if *self.inner.request.control() == control {
            return self.clone();
        }
        self.derive(|inner| inner.request = Arc::new(RequestFacts::new(control)))
    }

    /// The added tokens a chat request may not forge, in id order: what
    /// [`encode_chat`](Self::encode_chat) keeps as text under
    /// [`ChatSpecialTokens::PlainText`](crate::ChatSpecialTokens::PlainText)
    /// and refuses under `Reject` (see [`ControlTokens`] for the rule).
    /// Fails where the tokenizer has no chat template.
    pub fn control_markers(&self) -> Result<Vec<SpecialToken>> {
        let template = self.chat_template()?;
        let st = self.inner.request.special(&*self.inner.backend, template)?;
        Ok(st.markers())
    }

    /// This handle's prompt-cache options.
    pub fn prompt_cache_options(&self) -> &PromptCacheOptions {
        &self.inner.cache_options
    }

    /// A `tekken.json`'s instruct version (`v3`, `v7`, …); `None` for
    /// every other format.
    pub fn tekken_version(&self) -> Option<&str> {
        self.inner.info.tekken_version.as_deref()
    }

    /// The backend, for the request path.
    pub(crate) fn backend_dyn(&self) -> &dyn backend::Tokenizer {
        &*self.inner.backend
    }

    /// What `encode_chat` learned about this tokenizer.
    pub(crate) fn request_facts(&self) -> &RequestFacts {
        &self.inner.request
    }

    /// Encodes `text` as `options` say: special tokens, offsets, and the
    /// encode path ([`Parallelism`]). `encode(text, b)` is
    /// `encode_with(text, &EncodeOptions::new().with_add_special_tokens(b))`.
    ///
    /// Every path gives the same ids and offsets. A forced split
    /// ([`Parallelism::Split`], [`Parallelism::SplitAt`]) also returns what
    /// it did, on the encoding ([`Encoding::parallel_report`]) rather than
    /// beside it: one call and one result type for every combination, and
    /// the report, which only that path has, costs the others a null
    /// pointer.
    ///
    /// ```
    /// use router_tokenizer::{EncodeOptions, Parallelism};
    /// let tok = router_tokenizer::create_tokenizer("o200k_base")?;
    /// let text = "hello world ".repeat(100);
    /// let split = EncodeOptions::new().with_parallelism(Parallelism::SplitAt(vec![600]));
    /// let enc = tok.encode_with(&text, &split)?;
    /// assert_eq!(enc, tok.encode(&text, false)?);
    /// assert_eq!(enc.parallel_report().map(|r| r.chunks), Some(2));
    /// # Ok::<(), router_tokenizer::Error>(())
    /// ```
    pub fn encode_with(&self, text: &str, options: &EncodeOptions) -> Result<Encoding> {
        let (special, offsets) = (options.add_special_tokens(), options.offsets());
        let starts = match options.parallelism() {
            Parallelism::Auto if !offsets => return self.encode(text, special),
            Parallelism::Auto => {
                let inner = &*self.inner;
                return inner
                    .metrics
                    .encode(|| inner.parallel.encode(&*inner.backend, text, special, true));
            }
            Parallelism::Sequential => return self.encode_sequential(text, special, offsets),
            Parallelism::Split => None,
            Parallelism::SplitAt(starts) => Some(&starts[..]),
        };
        let inner = &*self.inner;
        inner.metrics.encode(|| {
            let (encoding, report) =
                inner
                    .parallel
                    .encode_report(&*inner.backend, text, special, offsets, starts)?;
            Ok(encoding.with_report(report))
        })
    }

    /// [`Parallelism::Sequential`]: the backend on the calling thread, no
    /// chunks, no prompt caches.
    fn encode_sequential(
        &self,
        text: &str,
        add_special_tokens: bool,
        offsets: bool,
    ) -> Result<Encoding> {
        let backend = &self.inner.backend;
        self.inner.metrics.encode(|| {
            if offsets {
                backend.encode_with_offsets(text, add_special_tokens)
            } else {
                backend.encode(text, add_special_tokens)
            }
        })
    }

    /// Encodes many texts on the rayon pool.
    pub fn encode_batch(&self, texts: &[&str], add_special_tokens: bool) -> Result<Vec<Encoding>> {
        texts
            .par_iter()
            .map(|t| self.encode(t, add_special_tokens))
            .collect()
    }

    /// Decodes ids. Unknown ids are an [`ErrorKind::UnknownTokenId`](crate::ErrorKind::UnknownTokenId).
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        let backend = &self.inner.backend;
        self.inner
            .metrics
            .decode(|| backend.decode(ids, skip_special_tokens))
    }

    /// Number of ids (one past the largest).
    pub fn vocab_size(&self) -> usize {
        self.inner.backend.vocab_size()
    }

    /// The id of a token in the tokenizer's own spelling.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.backend.token_to_id(token)
    }

    /// The token of an id in the tokenizer's own spelling.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.backend.id_to_token(id)
    }

    /// Whether `id` is a special token.
    pub fn is_special_id(&self, id: u32) -> bool {
        self.inner.backend.is_special_id(id)
    }

    /// bos/eos/unk/pad/… and additional special tokens.
    pub fn special_tokens(&self) -> &SpecialTokens {
        self.inner.backend.special_tokens()
    }

    /// Every id that ends generation: `generation_config.json`'s `eos_token_id`,
    /// then `config.json`'s, then the tokenizer's eos token, without duplicates.
    pub fn eos_token_ids(&self) -> &[u32] {
        &self.inner.info.eos_token_ids
    }

    /// The detected file format.
    pub fn format(&self) -> Format {
        self.inner.info.format
    }

    /// The backend's name (`"hf"`, `"tiktoken"`, …).
    pub fn backend_name(&self) -> &'static str {
        self.inner.backend.backend_name()
    }

    /// The source string this tokenizer was loaded from.
    pub fn source(&self) -> &str {
        &self.inner.info.source
    }

    /// The folder the tokenizer files were read from, if any.
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.inner.info.dir.as_deref()
    }

    /// How decoding combines tokens; decides the streaming algorithm.
    pub fn decode_style(&self) -> DecodeStyle {
        self.inner.backend.decode_style()
    }

    /// The bytes an id decodes to, for the byte styles ([`DecodeStyle::ByteConcat`],
    /// [`DecodeStyle::ByteConcatWithStart`], away from the start of the text).
    pub fn token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.inner.backend.token_bytes(id)
    }

    /// The bytes an id renders as at the start of a text (see [`StartRule`](crate::traits::StartRule)).
    pub(crate) fn first_token_bytes(&self, id: u32) -> Option<&[u8]> {
        self.inner.backend.first_token_bytes(id)
    }

    /// This tokenizer's metrics (streams and stop decoders report through it).
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The byte a byte-fallback piece stands for (see [`Decoder::byte_piece`](crate::backend::Decoder::byte_piece)).
    pub(crate) fn byte_piece(&self, id: u32) -> Option<u8> {
        self.inner.backend.byte_piece(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn metrics_count_requests_tokens_and_errors() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let tok = metrics::with_local_recorder(&recorder, || {
            Tokenizer::from_engine(
                Arc::new(crate::backend::mock::MockTokenizer::default()),
                Format::HfJson,
            )
        });
        tok.encode("hello", false).unwrap();
        tok.encode("<s>hi", true).unwrap();
        tok.decode(&[104, 105], false).unwrap();
        assert!(tok.decode(&[9999], false).is_err());
        let mut seen = std::collections::HashMap::new();
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            // A custom backend has no source: its backend names it.
            let labels: Vec<(&str, &str)> = key
                .key()
                .labels()
                .take(2)
                .map(|l| (l.key(), l.value()))
                .collect();
            assert_eq!(labels, [("tokenizer", "mock"), ("backend", "mock")]);
            seen.insert(key.key().name().to_owned(), value);
        }
        assert_eq!(seen["rtok_encode_requests_total"], DebugValue::Counter(2));
        assert_eq!(seen["rtok_decode_requests_total"], DebugValue::Counter(2));
        assert_eq!(seen["rtok_decode_errors_total"], DebugValue::Counter(1));
        match &seen["rtok_encode_tokens"] {
            DebugValue::Histogram(v) => assert_eq!(
                v.iter().map(|x| x.into_inner()).collect::<Vec<_>>(),
                vec![5.0, 4.0]
            ),
            other => panic!("{other:?}"),
        }
        // Durations are sampled; the first call on a thread is always timed.
        assert!(
            matches!(&seen["rtok_encode_duration_seconds"], DebugValue::Histogram(v) if !v.is_empty())
        );
    }

    #[test]
    fn clones_share_the_l0_cache() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let tok = metrics::with_local_recorder(&recorder, || {
            Tokenizer::from_engine(
                Arc::new(crate::backend::mock::MockTokenizer::default()),
                Format::HfJson,
            )
            .with_prompt_cache(PromptCacheOptions::l0(1 << 20, 8))
        });
        let text = "a long enough <s> text";
        let first = tok.encode(text, true).unwrap();
        // Stored on the second miss.
        assert_eq!(tok.encode(text, true).unwrap(), first);
        let clone = tok.clone();
        assert_eq!(clone.encode(text, true).unwrap(), first);
        // Other parallel options: the same cache.
        let other = clone.with_parallel(ParallelOptions::never());
        assert_eq!(other.encode(text, true).unwrap(), first);
        assert_eq!(tok.encode("short", false).unwrap().len(), 5);
        let hits = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .find(|(k, _, _, _)| k.key().name() == "rtok_cache_hits_total")
            .map(|(_, _, _, v)| v);
        assert_eq!(hits, Some(DebugValue::Counter(2)));
    }

    #[test]
    fn handle_is_send_sync() {
        assert_send_sync::<Tokenizer>();
        assert_send_sync::<Encoding>();
        assert_send_sync::<crate::Error>();
    }
}
