//! The tokenizer file formats the loader reads (detected in `load::detect`).

/// A tokenizer file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Format {
    /// Hugging Face `tokenizer.json`.
    HfJson,
    /// tiktoken rank file or built-in encoding.
    Tiktoken,
    /// SentencePiece `ModelProto` (`tokenizer.model`).
    SentencePiece,
    /// GGUF model or vocab file.
    Gguf,
    /// Mistral's `tekken.json` (mistral-common's `Tekkenizer`).
    Tekken,
}

impl Format {
    /// A human-readable name.
    pub fn name(self) -> &'static str {
        match self {
            Self::HfJson => "HF tokenizer.json",
            Self::Tiktoken => "tiktoken",
            Self::SentencePiece => "SentencePiece protobuf",
            Self::Gguf => "GGUF",
            Self::Tekken => "Mistral tekken.json",
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
