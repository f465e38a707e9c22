//! What every command shares: which tokenizer to load and how, and where the input comes from.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use router_tokenizer::{
    LoadOptions, ModelAliases, ParallelMode, ParallelOptions, SpecialTokenPolicy, Tokenizer,
};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Args)]
pub(crate) struct Source {
    /// A path, tiktoken encoding, OpenAI model name, or hub id `org/name[@rev]`.
    #[arg(long, short = 't', default_value = "o200k_base")]
    pub(crate) tokenizer: String,
    /// Encode special-token text in the input as plain text.
    #[arg(long)]
    specials_as_text: bool,
    /// A model alias `NAME=SOURCE` (repeatable); `--tokenizer NAME` then loads SOURCE.
    #[arg(long = "alias", value_name = "NAME=SOURCE")]
    aliases: Vec<String>,
    /// A JSON (`{"name": "source"}`) or TOML (`name = "source"`) file of aliases.
    #[arg(long = "aliases", value_name = "FILE")]
    alias_file: Option<PathBuf>,
}

impl Source {
    /// The aliases from `--aliases FILE`, then each `--alias` (later ones win).
    fn aliases(&self) -> Result<ModelAliases> {
        let mut aliases = ModelAliases::new();
        if let Some(file) = &self.alias_file {
            aliases.extend_from_file(file)?;
        }
        for pair in &self.aliases {
            aliases.insert_pair(pair)?;
        }
        Ok(aliases)
    }

    /// The tokenizer, encoding long inputs in parallel as the library decides by default.
    pub(crate) fn load(&self) -> Result<Tokenizer> {
        self.load_with(ParallelOptions::default())
    }

    pub(crate) fn load_with(&self, parallel: ParallelOptions) -> Result<Tokenizer> {
        self.options(parallel)?
            .load(&self.tokenizer)
            .with_context(|| format!("loading tokenizer {:?}", self.tokenizer))
    }

    /// The load options the flags describe; `rtok chat` loads only a template with them.
    pub(crate) fn options(&self, parallel: ParallelOptions) -> Result<LoadOptions> {
        Ok(LoadOptions::default()
            .with_parallel(parallel)
            .with_special_tokens(if self.specials_as_text {
                SpecialTokenPolicy::PlainText
            } else {
                SpecialTokenPolicy::Parse
            })
            .with_progress(true)
            .with_aliases(self.aliases()?))
    }
}

#[derive(Args)]
pub(crate) struct Input {
    /// Input file; `-` or absent reads stdin.
    #[arg(long, short = 'i')]
    pub(crate) input: Option<PathBuf>,
    /// The input itself, instead of a file or stdin (the ids for `decode`).
    #[arg(long, conflicts_with = "input")]
    pub(crate) text: Option<String>,
}

impl Input {
    /// `--text`, else the file, else stdin; it must be UTF-8.
    pub(crate) fn read(&self) -> Result<String> {
        if let Some(text) = &self.text {
            return Ok(text.clone());
        }
        let mut bytes = Vec::new();
        match &self.input {
            Some(path) if path.as_os_str() != "-" => {
                bytes =
                    std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            }
            _ => {
                std::io::stdin()
                    .read_to_end(&mut bytes)
                    .context("reading stdin")?;
            }
        }
        String::from_utf8(bytes).context("input is not valid UTF-8")
    }
}

/// Whitespace-separated token ids.
pub(crate) fn parse_ids(text: &str) -> Result<Vec<u32>> {
    text.split_whitespace()
        .map(|t| {
            t.parse::<u32>()
                .with_context(|| format!("not a token id: {t:?}"))
        })
        .collect()
}

/// When long inputs are encoded in parallel chunks.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ParallelArg {
    /// Above the measured size threshold, with two or more threads.
    Auto,
    /// Whenever the tokenizer's family allows it.
    Always,
    /// Never.
    Never,
}

#[derive(Args)]
pub(crate) struct Parallel {
    /// Parallel encoding of long inputs.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) parallel: ParallelArg,
    /// Threads for parallel encoding (a pool of this size, made once); default all cores.
    #[arg(long)]
    pub(crate) threads: Option<usize>,
}

impl Parallel {
    pub(crate) fn options(&self) -> Result<ParallelOptions> {
        let mode = match self.parallel {
            ParallelArg::Auto => ParallelMode::Auto,
            ParallelArg::Always => ParallelMode::Always,
            ParallelArg::Never => ParallelMode::Never,
        };
        let pool = match self.threads {
            Some(0) => anyhow::bail!("--threads must be at least 1"),
            Some(n) => Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .build()
                    .context("building the thread pool")?,
            )),
            None => None,
        };
        Ok(ParallelOptions {
            mode,
            pool,
            ..ParallelOptions::default()
        })
    }
}
