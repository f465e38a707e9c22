//! vLLM's `/tokenize` and `/detokenize` bodies: a request body in, the response body out.

use crate::source::{Input, Source};
use anyhow::{Context, Result};
use clap::Args;
use router_tokenizer::{DetokenizeRequest, TokenizeRequest};
use std::io::Write;

// No doc comment: the `Command` variant's is the command's help.
#[derive(Args)]
pub(crate) struct BodyArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    input: Input,
}

pub(crate) fn tokenize(args: BodyArgs, out: &mut impl Write) -> Result<()> {
    let body: TokenizeRequest =
        serde_json::from_str(&args.input.read()?).context("reading the /tokenize body")?;
    let tok = args.source.load()?;
    writeln!(out, "{}", serde_json::to_string(&tok.tokenize(&body)?)?)?;
    Ok(())
}

pub(crate) fn detokenize(args: BodyArgs, out: &mut impl Write) -> Result<()> {
    let body: DetokenizeRequest =
        serde_json::from_str(&args.input.read()?).context("reading the /detokenize body")?;
    let tok = args.source.load()?;
    writeln!(out, "{}", serde_json::to_string(&tok.detokenize(&body)?)?)?;
    Ok(())
}
