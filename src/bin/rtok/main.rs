//! `rtok`: encode, decode, count and inspect with any tokenizer the library loads.
//!
//! The default tokenizer is the embedded `o200k_base`, so every command works
//! offline on a fresh machine. One module per group of commands; this file
//! holds the command list and the error report.

mod bench;
mod chat;
mod inspect;
mod serve;
mod source;
mod stream;
mod text;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::io::Write;

#[derive(Parser)]
#[command(name = "rtok", version, about = "The router-tokenizer command line")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Text in, ids out (space-separated, or JSON with byte offsets).
    Encode(text::EncodeArgs),
    /// Sequential against parallel encoding of one input: medians over
    /// interleaved repeats, and whether the ids are identical.
    Bench(bench::BenchArgs),
    /// Whitespace-separated ids in, exact text out (no newline added).
    Decode(text::DecodeArgs),
    /// Number of tokens in the input.
    Count(text::CountArgs),
    /// The longest part of the input within a token budget, cut on a
    /// character boundary, printed exactly (no newline added).
    Truncate(text::TruncateArgs),
    /// Cut the input into consecutive chunks, each the longest within the
    /// budget; prints `[{"start":…,"end":…,"tokens":…},…]` (byte ranges).
    Split(text::SplitArgs),
    /// Feed ids one at a time through the stop-sequence decoder, printing
    /// one JSON object per step and one for the flush.
    Stream(stream::StreamArgs),
    /// Render a chat conversation with the tokenizer's template, exactly as
    /// transformers' `apply_chat_template(..., tokenize=False)`; no newline added.
    /// Only the template and the special tokens are read, not the vocabulary (a GGUF file or a
    /// SentencePiece model without `tokenizer_config.json` is loaded: its tokens are its own).
    Chat(chat::ChatArgs),
    /// vLLM's `/tokenize`: reads a request body (`{"prompt": …}` or `{"messages": […], …}`)
    /// and prints the response body `{"count", "max_model_len", "tokens", "token_strs"}`.
    Tokenize(serve::BodyArgs),
    /// vLLM's `/detokenize`: reads `{"tokens": […]}` and prints `{"prompt": …}`.
    Detokenize(serve::BodyArgs),
    /// Format, vocabulary size, special tokens, eos ids, chat template names.
    Inspect(inspect::InspectArgs),
}

fn run(cli: Cli) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Encode(args) => text::encode(args, &mut out)?,
        Command::Decode(args) => text::decode(args, &mut out)?,
        Command::Tokenize(args) => serve::tokenize(args, &mut out)?,
        Command::Detokenize(args) => serve::detokenize(args, &mut out)?,
        Command::Count(args) => text::count(args, &mut out)?,
        Command::Truncate(args) => text::truncate(args, &mut out)?,
        Command::Split(args) => text::split(args, &mut out)?,
        Command::Bench(args) => bench::run(args, &mut out)?,
        Command::Stream(args) => stream::run(args, &mut out)?,
        // It flushes where it always did (not after `--encode` or `--format harmony`).
        Command::Chat(args) => return chat::run(args, &mut out),
        Command::Inspect(args) => inspect::inspect(args, &mut out)?,
    }
    out.flush()?;
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    if let Err(err) = run(cli) {
        // Each cause once: a message that already ends with its cause's text is not repeated.
        let mut chain: Vec<String> = Vec::new();
        for cause in err.chain().map(ToString::to_string) {
            if !chain.last().is_some_and(|prev| prev.ends_with(&cause)) {
                chain.push(cause);
            }
        }
        eprintln!("rtok: error: {}", chain.join(": "));
        std::process::exit(1);
    }
}
