//! [`LoadOptions`]' builder: a `with_…` setter per option (consuming and
//! returning the options), and getters where callers read one, so the
//! struct can stay
//! `#[non_exhaustive]` with private fields and gain options without
//! breaking callers.

use std::path::PathBuf;

use super::{HubTimeouts, LoadOptions, ModelAliases};
use crate::cache::PromptCacheOptions;
use crate::encode::ParallelOptions;
use crate::request::ChatFormat;
use crate::special::{ControlTokens, SpecialTokenPolicy};

impl LoadOptions {
    /// The defaults: every option from the environment or its documented
    /// default, as [`create_tokenizer`](crate::create_tokenizer) loads.
    pub fn new() -> Self {
        Self::default()
    }

    /// With a hub revision (branch, tag or commit hash); a `@rev` suffix on
    /// the id wins.
    pub fn with_revision(mut self, revision: impl Into<String>) -> Self {
        self.revision = Some(revision.into());
        self
    }

    /// With a chat template file that replaces the one shipped with the
    /// tokenizer.
    pub fn with_chat_template(mut self, path: impl Into<PathBuf>) -> Self {
        self.chat_template = Some(path.into());
        self
    }

    /// With a hub token, instead of `HF_TOKEN`, then `$HF_HOME/token`.
    /// Never logged (the options' `Debug` redacts it).
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Never touching the network (`true`) or allowed to (`false`), instead
    /// of what `HF_HUB_OFFLINE` says.
    pub fn with_offline(mut self, offline: bool) -> Self {
        self.offline = Some(offline);
        self
    }

    /// With another hub cache (the folder holding `models--org--name`),
    /// instead of `HF_HUB_CACHE`, then `$HF_HOME/hub`, then
    /// `~/.cache/huggingface/hub`.
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// With another policy for special-token text inside the input (default
    /// [`SpecialTokenPolicy::Parse`]).
    pub fn with_special_tokens(mut self, policy: SpecialTokenPolicy) -> Self {
        self.special_tokens = policy;
        self
    }

    /// Keeping padding/truncation switched on in a `tokenizer.json` (off by
    /// default: a router encodes whole prompts).
    pub fn with_keep_padding_and_truncation(mut self, on: bool) -> Self {
        self.keep_padding_and_truncation = on;
        self
    }

    /// Kept for compatibility: downloads draw no progress bar either way
    /// (tokenizer files are small).
    pub fn with_progress(mut self, on: bool) -> Self {
        self.progress = on;
        self
    }

    /// Loading a fresh copy instead of sharing the process-wide one (or
    /// not, the default).
    pub fn with_bypass_registry(mut self, on: bool) -> Self {
        self.bypass_registry = on;
        self
    }

    /// With model names mapped to sources, resolved before anything else
    /// (an alias may shadow a built-in OpenAI model name).
    pub fn with_aliases(mut self, aliases: ModelAliases) -> Self {
        self.aliases = aliases;
        self
    }

    /// With other parallel-encoding options (by default long inputs are
    /// split above a measured size on the global rayon pool).
    pub fn with_parallel(mut self, parallel: ParallelOptions) -> Self {
        self.parallel = parallel;
        self
    }

    /// With another hub endpoint (a mirror), instead of `HF_ENDPOINT`, then
    /// `https://huggingface.co`.
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// With other hub network limits (timeouts and retries).
    pub fn with_hub(mut self, hub: HubTimeouts) -> Self {
        self.hub = hub;
        self
    }

    /// With other prompt caches (the L0 exact cache is on by default).
    /// Shared by every clone of the handle.
    pub fn with_prompt_cache(mut self, prompt_cache: PromptCacheOptions) -> Self {
        self.prompt_cache = prompt_cache;
        self
    }

    /// Loading `tokenizer.json` where a folder or hub repo also has
    /// Mistral's `tekken.json` (by default `tekken.json` wins, as in vLLM:
    /// Mistral's converted `tokenizer.json` files once shipped a wrong
    /// pattern).
    pub fn with_prefer_tokenizer_json(mut self, on: bool) -> Self {
        self.prefer_tokenizer_json = on;
        self
    }

    /// With the chat format `encode_chat` uses when its options name none
    /// (see [`Tokenizer::chat_format`](crate::Tokenizer::chat_format)),
    /// instead of the tokenizer's own.
    pub fn with_chat_format(mut self, format: ChatFormat) -> Self {
        self.chat_format = Some(format);
        self
    }

    /// With corrections to the added tokens a chat request may not forge
    /// ([`ControlTokens`]).
    pub fn with_control_tokens(mut self, control: ControlTokens) -> Self {
        self.control_tokens = control;
        self
    }

    /// Loading local paths only from inside `dirs` (or the hub cache).
    /// `vec![]` allows none, so a source string taken from a client can
    /// only name a hub id or an encoding; by default any path loads.
    pub fn with_allowed_dirs(mut self, dirs: Vec<PathBuf>) -> Self {
        self.allowed_dirs = Some(dirs);
        self
    }
}
