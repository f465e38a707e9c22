//! `rtok stream`: generated ids through the stop-sequence decoder, one JSON line per step.

use crate::source::{Source, parse_ids};
use anyhow::{Context, Result};
use clap::Args;
use router_tokenizer::{
    MatchedStop, Output, StopConfig, StopReason, StopSequenceDecoder, UnknownIds,
};
use std::io::Write;
use std::path::{Path, PathBuf};

// No doc comment: the `Command` variant's is the command's help.
#[derive(Args)]
pub(crate) struct StreamArgs {
    #[command(flatten)]
    source: Source,
    /// Prompt ids (whitespace-separated), the context for the first token.
    #[arg(long)]
    prompt_ids: Option<PathBuf>,
    /// Generated ids (whitespace-separated).
    #[arg(long, short = 'i')]
    input: PathBuf,
    /// A hidden stop string (repeatable).
    #[arg(long = "stop")]
    stop: Vec<String>,
    /// A visible stop string (repeatable).
    #[arg(long = "visible-stop")]
    visible_stop: Vec<String>,
    /// A hidden stop token id (repeatable).
    #[arg(long = "stop-token")]
    stop_token: Vec<u32>,
    /// A visible stop token id (repeatable).
    #[arg(long = "visible-stop-token")]
    visible_stop_token: Vec<u32>,
    /// A stop id sequence, ids separated by spaces or commas (repeatable):
    /// the stream stops once the generated ids end with it; its text is
    /// emitted, as for a visible stop.
    #[arg(long = "stop-token-sequence", value_name = "IDS")]
    stop_token_sequence: Vec<String>,
    /// An end-of-generation id (repeatable); given at least once, these
    /// replace the tokenizer's own EOS set.
    #[arg(long = "eos-token", value_name = "ID")]
    eos_token: Vec<u32>,
    /// Ignore stops until more than this many tokens.
    #[arg(long, default_value_t = 0)]
    min_tokens: usize,
    /// Leave special tokens out of the text.
    #[arg(long)]
    skip_special_tokens: bool,
    /// Generate past the tokenizer's EOS ids (they are plain tokens).
    #[arg(long)]
    ignore_eos: bool,
    /// Fail on ids outside the vocabulary instead of skipping them.
    #[arg(long)]
    strict_unknown_ids: bool,
    /// Set rendered special tokens apart by spaces (vLLM's option).
    #[arg(long)]
    spaces_between_special_tokens: bool,
    /// Add each id's logprobs text to its line: `"token": {"text", "bytes"}`
    /// (`bytes:\xNN…` for partial characters).
    #[arg(long)]
    token_text: bool,
    /// Print JSON lines (the only output format).
    #[arg(long)]
    json: bool,
}

impl StreamArgs {
    /// The stops and decoding options the flags give.
    fn stop_config(&self) -> Result<StopConfig> {
        Ok(StopConfig {
            stop_token_ids: self.stop_token.clone(),
            visible_stop_token_ids: self.visible_stop_token.clone(),
            stop_token_sequences: self
                .stop_token_sequence
                .iter()
                .map(|s| parse_ids(&s.replace(',', " ")))
                .collect::<Result<_>>()?,
            eos_token_ids: (!self.eos_token.is_empty()).then(|| self.eos_token.clone()),
            stop_strings: self.stop.clone(),
            visible_stop_strings: self.visible_stop.clone(),
            min_tokens: self.min_tokens,
            skip_special_tokens: self.skip_special_tokens,
            ignore_eos: self.ignore_eos,
            unknown_ids: if self.strict_unknown_ids {
                UnknownIds::Error
            } else {
                UnknownIds::Skip
            },
            spaces_between_special_tokens: self.spaces_between_special_tokens,
        })
    }
}

fn read_ids(path: &Path) -> Result<Vec<u32>> {
    parse_ids(
        &std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
    )
}

pub(crate) fn run(args: StreamArgs, out: &mut impl Write) -> Result<()> {
    let tok = args.source.load()?;
    let prompt = match &args.prompt_ids {
        Some(p) => read_ids(p)?,
        None => Vec::new(),
    };
    let ids = read_ids(&args.input)?;
    let mut decoder = StopSequenceDecoder::new(&tok, &prompt, args.stop_config()?)?;
    // After a stop, every later line (and the flush's) says `stopped`.
    for id in ids {
        let shown = if args.token_text {
            let t = decoder.token_text(id)?;
            Some(serde_json::json!({"text": t.text, "bytes": t.bytes}))
        } else {
            None
        };
        let output = decoder.process_token(id)?;
        let mut v = line(Some(id), output, decoder.matched_stop());
        if let Some(shown) = shown {
            v["token"] = shown;
        }
        writeln!(out, "{v}")?;
    }
    let output = decoder.flush()?;
    writeln!(out, "{}", line(None, output, decoder.matched_stop()))?;
    Ok(())
}

/// One step's line: the id fed (none for the flush), what came out, and the stop once matched.
fn line(id: Option<u32>, output: Output, matched: Option<&MatchedStop>) -> serde_json::Value {
    let (kind, text) = match output {
        Output::Text(t) => ("text", t),
        Output::Held => ("held", String::new()),
        Output::Stopped => ("stopped", String::new()),
        Output::StoppedWithText(t) => ("stopped_with_text", t),
    };
    let mut v = serde_json::json!({"id": id, "kind": kind, "text": text});
    if kind.starts_with("stopped") {
        v["stop"] = stop_json(matched);
    }
    v
}

/// The matched stop as `rtok stream` prints it: OpenAI's `finish_reason` and
/// vLLM's `stop_reason` (the library's mapping), and which stop it was.
fn stop_json(matched: Option<&MatchedStop>) -> serde_json::Value {
    let Some(stop) = matched else {
        return serde_json::Value::Null;
    };
    let stop_reason = match stop.stop_reason() {
        Some(StopReason::Token(id)) => serde_json::json!(id),
        Some(StopReason::String(text)) => serde_json::json!(text),
        None => serde_json::Value::Null,
    };
    let mut v = match stop {
        MatchedStop::Eos { id } => serde_json::json!({"type": "eos", "id": id}),
        MatchedStop::Token { id, visible } => {
            serde_json::json!({"type": "token", "id": id, "visible": visible})
        }
        MatchedStop::String { index, visible, .. } => {
            serde_json::json!({"type": "string", "index": index, "visible": visible})
        }
        MatchedStop::TokenSequence { index } => {
            serde_json::json!({"type": "token_sequence", "index": index})
        }
    };
    let mut out =
        serde_json::json!({"finish_reason": stop.finish_reason(), "stop_reason": stop_reason});
    if let (Some(out), serde_json::Value::Object(which)) = (out.as_object_mut(), v.take()) {
        out.extend(which);
    }
    out
}
