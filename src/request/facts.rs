//! What the request path learns about a tokenizer once, kept in the handle
//! (below `tokenizer.rs` in the layer map: it sees the backend, never the
//! handle).

use std::sync::OnceLock;

use super::segments;
use super::special_text::SpecialText;
use crate::backend;
use crate::chat::ChatTemplate;
use crate::error::{Error, ErrorKind, Result};
use crate::special::ControlTokens;

/// The ids `add_special_tokens` puts before and after a text.
type BosEos = (Vec<u32>, Vec<u32>);

/// What `encode_chat` learns about a tokenizer once (shared by clones).
#[derive(Default)]
pub(crate) struct RequestFacts {
    control: ControlTokens,
    special: OnceLock<std::result::Result<SpecialText, ErrorKind>>,
    bos_eos: OnceLock<std::result::Result<BosEos, ErrorKind>>,
}

impl RequestFacts {
    pub(crate) fn new(control: ControlTokens) -> Self {
        Self {
            control,
            ..Self::default()
        }
    }

    /// Nothing learned yet, the same corrections.
    pub(crate) fn fresh(&self) -> Self {
        Self::new(self.control.clone())
    }

    pub(crate) fn control(&self) -> &ControlTokens {
        &self.control
    }

    /// The control markers under `template`, the handle's chat template.
    pub(crate) fn special(
        &self,
        backend: &dyn backend::Tokenizer,
        template: &ChatTemplate,
    ) -> Result<&SpecialText> {
        self.special
            .get_or_init(|| {
                let sources: Vec<&str> = template.sources().collect();
                SpecialText::new(backend, &sources, &self.control).map_err(|e| e.kind().clone())
            })
            .as_ref()
            .map_err(|k| Error::new(k.clone()))
    }

    /// Learns everything now (for `warm_up`); errors wait for the request.
    pub(crate) fn warm(&self, backend: &dyn backend::Tokenizer, template: &ChatTemplate) {
        let _ = self.special(backend, template);
        let _ = self.bos_eos(backend);
    }

    pub(crate) fn bos_eos(&self, backend: &dyn backend::Tokenizer) -> Result<&BosEos> {
        self.bos_eos
            .get_or_init(|| segments::bos_eos(backend).map_err(|e| e.kind().clone()))
            .as_ref()
            .map_err(|k| Error::new(k.clone()))
    }
}
