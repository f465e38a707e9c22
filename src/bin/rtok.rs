//! `rtok`: encode, decode, count and inspect with any tokenizer the library loads.
//!
//! The default tokenizer is the embedded `o200k_base`, so every command works
//! offline on a fresh machine.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use router_tokenizer::chat::{ChatCliInput, ChatRequest};
use router_tokenizer::{
    LoadOptions, Output, SpecialTokenPolicy, StopConfig, StopSequenceDecoder, Tokenizer,
};
use std::io::{Read, Write};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "rtok", version, about = "The router-tokenizer command line")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct Source {
    /// A path, tiktoken encoding, OpenAI model name, or hub id `org/name[@rev]`.
    #[arg(long, short = 't', default_value = "o200k_base")]
    tokenizer: String,
    /// Encode special-token text in the input as plain text.
    #[arg(long)]
    specials_as_text: bool,
}

#[derive(Args)]
struct Input {
    /// Input file; `-` or absent reads stdin.
    #[arg(long, short = 'i')]
    input: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Text in, ids out (space-separated, or JSON with byte offsets).
    Encode {
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
    },
    /// Whitespace-separated ids in, exact text out (no newline added).
    Decode {
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        input: Input,
        /// Leave out special tokens.
        #[arg(long)]
        skip_special_tokens: bool,
    },
    /// Number of tokens in the input.
    Count {
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        input: Input,
    },
    /// Feed ids one at a time through the stop-sequence decoder, printing
    /// one JSON object per step and one for the flush.
    Stream {
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
        /// Ignore stops until more than this many tokens.
        #[arg(long, default_value_t = 0)]
        min_tokens: usize,
        /// Leave special tokens out of the text.
        #[arg(long)]
        skip_special_tokens: bool,
        /// Print JSON lines (the only output format).
        #[arg(long)]
        json: bool,
    },
    /// Render a chat conversation with the tokenizer's template, exactly as
    /// transformers' `apply_chat_template(..., tokenize=False)`; no newline added.
    Chat {
        #[command(flatten)]
        source: Source,
        /// A JSON list of OpenAI-style messages.
        #[arg(long)]
        messages: PathBuf,
        /// A JSON list of tool schemas.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// A JSON list of documents.
        #[arg(long)]
        documents: Option<PathBuf>,
        /// End with the assistant header.
        #[arg(long)]
        add_generation_prompt: bool,
        /// Leave the final message open for the model to continue.
        #[arg(long)]
        continue_final_message: bool,
        /// One of the tokenizer's named templates.
        #[arg(long)]
        template: Option<String>,
        /// Extra template variables, a JSON object (e.g. `{"enable_thinking": false}`).
        #[arg(long)]
        kwargs: Option<String>,
    },
    /// Format, vocabulary size, special tokens, eos ids.
    Inspect {
        #[command(flatten)]
        source: Source,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn load(source: &Source) -> Result<Tokenizer> {
    let options = LoadOptions {
        special_tokens: if source.specials_as_text {
            SpecialTokenPolicy::PlainText
        } else {
            SpecialTokenPolicy::Parse
        },
        progress: true,
        ..LoadOptions::default()
    };
    options
        .load(&source.tokenizer)
        .with_context(|| format!("loading tokenizer {:?}", source.tokenizer))
}

fn read_input(input: &Input) -> Result<String> {
    let mut bytes = Vec::new();
    match &input.input {
        Some(path) if path.as_os_str() != "-" => {
            bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        }
        _ => {
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("reading stdin")?;
        }
    }
    String::from_utf8(bytes).context("input is not valid UTF-8")
}

fn parse_ids(text: &str) -> Result<Vec<u32>> {
    text.split_whitespace()
        .map(|t| {
            t.parse::<u32>()
                .with_context(|| format!("not a token id: {t:?}"))
        })
        .collect()
}

fn run(cli: Cli) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match cli.command {
        Command::Encode {
            source,
            input,
            add_special_tokens,
            json,
        } => {
            let tok = load(&source)?;
            let text = read_input(&input)?;
            if json {
                let enc = tok.encode_with_offsets(&text, add_special_tokens)?;
                let value = serde_json::json!({
                    "ids": enc.ids(),
                    "offsets": enc.offsets().unwrap_or_default().iter().map(|&(s, e)| [s, e]).collect::<Vec<_>>(),
                });
                writeln!(out, "{value}")?;
            } else {
                let enc = tok.encode(&text, add_special_tokens)?;
                let line: Vec<String> = enc.ids().iter().map(u32::to_string).collect();
                writeln!(out, "{}", line.join(" "))?;
            }
        }
        Command::Decode {
            source,
            input,
            skip_special_tokens,
        } => {
            let tok = load(&source)?;
            let ids = parse_ids(&read_input(&input)?)?;
            let text = tok.decode(&ids, skip_special_tokens)?;
            out.write_all(text.as_bytes())?;
        }
        Command::Count { source, input } => {
            let tok = load(&source)?;
            let text = read_input(&input)?;
            writeln!(out, "{}", tok.encode(&text, false)?.len())?;
        }
        Command::Stream {
            source,
            prompt_ids,
            input,
            stop,
            visible_stop,
            stop_token,
            visible_stop_token,
            min_tokens,
            skip_special_tokens,
            json: _,
        } => {
            let tok = load(&source)?;
            let prompt = match prompt_ids {
                Some(p) => parse_ids(
                    &std::fs::read_to_string(&p)
                        .with_context(|| format!("reading {}", p.display()))?,
                )?,
                None => Vec::new(),
            };
            let ids = parse_ids(
                &std::fs::read_to_string(&input)
                    .with_context(|| format!("reading {}", input.display()))?,
            )?;
            let mut decoder = StopSequenceDecoder::new(
                &tok,
                &prompt,
                StopConfig {
                    stop_token_ids: stop_token,
                    visible_stop_token_ids: visible_stop_token,
                    stop_strings: stop,
                    visible_stop_strings: visible_stop,
                    min_tokens,
                    skip_special_tokens,
                },
            )?;
            let line = |id: Option<u32>, output: Output| {
                let (kind, text) = match output {
                    Output::Text(t) => ("text", t),
                    Output::Held => ("held", String::new()),
                    Output::Stopped => ("stopped", String::new()),
                    Output::StoppedWithText(t) => ("stopped_with_text", t),
                };
                serde_json::json!({"id": id, "kind": kind, "text": text})
            };
            for id in ids {
                let output = decoder.process_token(id)?;
                writeln!(out, "{}", line(Some(id), output))?;
            }
            writeln!(out, "{}", line(None, decoder.flush()?))?;
        }
        Command::Chat {
            source,
            messages,
            tools,
            documents,
            add_generation_prompt,
            continue_final_message,
            template,
            kwargs,
        } => {
            let tok = load(&source)?;
            let read = |p: &PathBuf| {
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
            };
            let messages = read(&messages)?;
            let tools = tools.as_ref().map(read).transpose()?;
            let documents = documents.as_ref().map(read).transpose()?;
            let request = ChatRequest::from_cli(&ChatCliInput {
                messages: &messages,
                tools: tools.as_deref(),
                documents: documents.as_deref(),
                add_generation_prompt,
                continue_final_message,
                template: template.as_deref(),
                kwargs: kwargs.as_deref(),
            })?;
            out.write_all(tok.apply_chat_template(&request)?.as_bytes())?;
        }
        Command::Inspect { source, json } => {
            let tok = load(&source)?;
            let specials = tok.special_tokens();
            let named: serde_json::Map<String, serde_json::Value> = specials
                .named()
                .map(|(name, t)| {
                    (
                        name.to_owned(),
                        serde_json::json!({"content": t.content, "id": t.id}),
                    )
                })
                .collect();
            let has_template = tok.chat_template().is_ok();
            let value = serde_json::json!({
                "source": tok.source(),
                "format": tok.format().name(),
                "backend": tok.backend_name(),
                "vocab_size": tok.vocab_size(),
                "special_tokens": named,
                "additional_special_tokens": specials.additional.len(),
                "eos_token_ids": tok.eos_token_ids(),
                "chat_template": has_template,
            });
            if json {
                writeln!(out, "{value}")?;
            } else {
                for (k, v) in value.as_object().into_iter().flatten() {
                    writeln!(out, "{k:>26}: {v}")?;
                }
            }
        }
    }
    out.flush()?;
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    if let Err(err) = run(cli) {
        let chain: Vec<String> = err.chain().map(ToString::to_string).collect();
        eprintln!("rtok: error: {}", chain.join(": "));
        std::process::exit(1);
    }
}
