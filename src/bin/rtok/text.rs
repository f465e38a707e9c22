//! The commands on plain text and ids: `encode`, `decode`, `count`, `truncate`, `split`.

use crate::source::{Input, Parallel, Source, parse_ids};
use anyhow::Result;
use clap::{Args, ValueEnum};
use router_tokenizer::Side;
use std::io::Write;

// No doc comments on these `Args` structs: the `Command` variant's is the command's help.

#[derive(Args)]
pub(crate) struct EncodeArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    input: Input,
    /// Add BOS/EOS as the model expects.
    #[arg(long)]
    add_special_tokens: bool,
    /// Print `{"ids":[…],"offsets":[[start,end],…]}`.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    parallel: Parallel,
}

pub(crate) fn encode(args: EncodeArgs, out: &mut impl Write) -> Result<()> {
    let tok = args.source.load_with(args.parallel.options()?)?;
    let text = args.input.read()?;
    if args.json {
        let enc = tok.encode_with(
            &text,
            &router_tokenizer::EncodeOptions::new()
                .with_add_special_tokens(args.add_special_tokens)
                .with_offsets(true),
        )?;
        let value = serde_json::json!({
            "ids": enc.ids(),
            "offsets": enc.offsets().unwrap_or_default().iter().map(|&(s, e)| [s, e]).collect::<Vec<_>>(),
        });
        writeln!(out, "{value}")?;
    } else {
        let enc = tok.encode(&text, args.add_special_tokens)?;
        writeln!(out, "{}", join_ids(enc.ids()))?;
    }
    Ok(())
}

/// Ids separated by single spaces, as `encode` and `chat --encode` print them.
pub(crate) fn join_ids(ids: &[u32]) -> String {
    let line: Vec<String> = ids.iter().map(u32::to_string).collect();
    line.join(" ")
}

#[derive(Args)]
pub(crate) struct DecodeArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    input: Input,
    /// Leave out special tokens.
    #[arg(long)]
    skip_special_tokens: bool,
    /// Print `{"text": "…"}` (with a newline) instead of the bare text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn decode(args: DecodeArgs, out: &mut impl Write) -> Result<()> {
    let tok = args.source.load()?;
    let ids = parse_ids(&args.input.read()?)?;
    let text = tok.decode(&ids, args.skip_special_tokens)?;
    if args.json {
        writeln!(out, "{}", serde_json::json!({ "text": text }))?;
    } else {
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}

#[derive(Args)]
pub(crate) struct CountArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    input: Input,
    /// Print `{"count": N}`.
    #[arg(long)]
    json: bool,
}

pub(crate) fn count(args: CountArgs, out: &mut impl Write) -> Result<()> {
    let tok = args.source.load()?;
    let text = args.input.read()?;
    let count = tok.count(&text, false)?;
    if args.json {
        writeln!(out, "{}", serde_json::json!({ "count": count }))?;
    } else {
        writeln!(out, "{count}")?;
    }
    Ok(())
}

/// Which end `truncate` cuts off.
#[derive(Clone, Copy, ValueEnum)]
enum SideArg {
    /// Cut the start, keep the end.
    Left,
    /// Cut the end, keep the start.
    Right,
}

#[derive(Args)]
pub(crate) struct TruncateArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    input: Input,
    /// The budget in tokens.
    #[arg(long)]
    max_tokens: usize,
    /// Which end to cut off: `right` keeps the start, `left` the end.
    #[arg(long, value_enum, default_value = "right")]
    side: SideArg,
    /// Count BOS/EOS as the model adds them.
    #[arg(long)]
    add_special_tokens: bool,
    /// Print `{"text":…,"tokens":N}` (the kept text and its token count).
    #[arg(long)]
    json: bool,
}

pub(crate) fn truncate(args: TruncateArgs, out: &mut impl Write) -> Result<()> {
    let tok = args.source.load()?;
    let text = args.input.read()?;
    let side = match args.side {
        SideArg::Left => Side::Left,
        SideArg::Right => Side::Right,
    };
    let kept = tok.truncate(&text, args.max_tokens, side, args.add_special_tokens)?;
    if args.json {
        let tokens = tok.count(kept, args.add_special_tokens)?;
        writeln!(
            out,
            "{}",
            serde_json::json!({ "text": kept, "tokens": tokens })
        )?;
    } else {
        out.write_all(kept.as_bytes())?;
    }
    Ok(())
}

#[derive(Args)]
pub(crate) struct SplitArgs {
    #[command(flatten)]
    source: Source,
    #[command(flatten)]
    input: Input,
    /// The budget per chunk in tokens.
    #[arg(long)]
    tokens: usize,
    /// Count BOS/EOS in each chunk as the model adds them.
    #[arg(long)]
    add_special_tokens: bool,
    /// Print JSON (the only output format; accepted for clarity).
    #[arg(long)]
    json: bool,
}

pub(crate) fn split(args: SplitArgs, out: &mut impl Write) -> Result<()> {
    let tok = args.source.load()?;
    let text = args.input.read()?;
    let chunks = tok
        .split(&text, args.tokens, args.add_special_tokens)
        .map(|c| c.map(|c| serde_json::json!({"start": c.start, "end": c.end, "tokens": c.tokens})))
        .collect::<router_tokenizer::Result<Vec<_>>>()?;
    writeln!(out, "{}", serde_json::Value::Array(chunks))?;
    Ok(())
}
