//! `rtok`: encode, decode, count and inspect with any tokenizer the library loads.
//!
//! The default tokenizer is the embedded `o200k_base`, so every command works
//! offline on a fresh machine.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};
use router_tokenizer::chat::{
    ChatCliInput, ChatRequest, ChatTemplate, ContinueFinalMessage, FixedNow,
};
use router_tokenizer::{
    ChatFormat, ChatSpecialTokens, DetokenizeRequest, EncodeChatOptions, LoadOptions, MatchedStop,
    ModelAliases, Output, ParallelMode, ParallelOptions, Side, SpecialTokenPolicy, StopConfig,
    StopReason, StopSequenceDecoder, TokenizeRequest, Tokenizer, UnknownIds,
};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

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
}

#[derive(Args)]
struct Input {
    /// Input file; `-` or absent reads stdin.
    #[arg(long, short = 'i')]
    input: Option<PathBuf>,
    /// The input itself, instead of a file or stdin (the ids for `decode`).
    #[arg(long, conflicts_with = "input")]
    text: Option<String>,
}

/// `rtok chat --format`: how the request is rendered.
#[derive(Clone, Copy, ValueEnum)]
enum ChatFormatArg {
    /// The tokenizer's chat template, as transformers renders it (the default).
    Jinja,
    /// `mistral-common`'s encoding (not supported yet).
    Mistral,
    /// `openai-harmony`'s, as vLLM and SGLang render gpt-oss.
    Harmony,
}

impl From<ChatFormatArg> for ChatFormat {
    fn from(f: ChatFormatArg) -> Self {
        match f {
            ChatFormatArg::Jinja => ChatFormat::Jinja,
            ChatFormatArg::Mistral => ChatFormat::MistralCommon,
            ChatFormatArg::Harmony => ChatFormat::Harmony,
        }
    }
}

/// Which end `truncate` cuts off.
/// `rtok chat --special-tokens`: what special-token text from the request becomes.
#[derive(Clone, Copy, ValueEnum)]
enum ChatSpecialArg {
    /// Parse it as special tokens (transformers' behaviour).
    Parse,
    /// Encode it as text (the default).
    Plain,
    /// Refuse the request, naming the message.
    Reject,
}

#[derive(Clone, Copy, ValueEnum)]
enum SideArg {
    /// Cut the start, keep the end.
    Left,
    /// Cut the end, keep the start.
    Right,
}

/// When long inputs are encoded in parallel chunks.
#[derive(Clone, Copy, ValueEnum)]
enum ParallelArg {
    /// Above the measured size threshold, with two or more threads.
    Auto,
    /// Whenever the tokenizer's family allows it.
    Always,
    /// Never.
    Never,
}

#[derive(Args)]
struct Parallel {
    /// Parallel encoding of long inputs.
    #[arg(long, value_enum, default_value = "auto")]
    parallel: ParallelArg,
    /// Threads for parallel encoding (a pool of this size, made once); default all cores.
    #[arg(long)]
    threads: Option<usize>,
}

impl Parallel {
    fn options(&self) -> Result<ParallelOptions> {
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
        #[command(flatten)]
        parallel: Parallel,
    },
    /// Sequential against parallel encoding of one input: medians over
    /// interleaved repeats, and whether the ids are identical.
    Bench {
        #[command(flatten)]
        source: Source,
        /// Input file.
        #[arg(long, short = 'i')]
        input: PathBuf,
        /// Threads for the parallel encodes; default all cores.
        #[arg(long)]
        threads: Option<usize>,
        /// Timed repeats of each (after one warm-up).
        #[arg(long, default_value_t = 7)]
        repeat: usize,
        /// Parallel mode for the parallel side (`auto` shows the threshold at work).
        #[arg(long, value_enum, default_value = "always")]
        parallel: ParallelArg,
        /// Print `{"tokens":N,"sequential_ms":…,"parallel_ms":…,"speedup":…,"identical":…}`.
        #[arg(long)]
        json: bool,
        /// Also time one sequential encode of the whole input per thread, all at
        /// once: the throughput this machine gives independent encodes bounds
        /// any split's speedup (`ceiling_ms` is the per-encode time at that
        /// throughput, `ceiling_speedup` = sequential / it).
        #[arg(long)]
        ceiling: bool,
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
        /// Print `{"text": "…"}` (with a newline) instead of the bare text.
        #[arg(long)]
        json: bool,
    },
    /// Number of tokens in the input.
    Count {
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        input: Input,
        /// Print `{"count": N}`.
        #[arg(long)]
        json: bool,
    },
    /// The longest part of the input within a token budget, cut on a
    /// character boundary, printed exactly (no newline added).
    Truncate {
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
    },
    /// Cut the input into consecutive chunks, each the longest within the
    /// budget; prints `[{"start":…,"end":…,"tokens":…},…]` (byte ranges).
    Split {
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
    },
    /// Render a chat conversation with the tokenizer's template, exactly as
    /// transformers' `apply_chat_template(..., tokenize=False)`; no newline added.
    /// Only the template and the special tokens are read, not the vocabulary (a GGUF file or a
    /// SentencePiece model without `tokenizer_config.json` is loaded: its tokens are its own).
    Chat {
        #[command(flatten)]
        source: Source,
        /// A JSON list of OpenAI-style messages, rendered as given; or a whole OpenAI chat
        /// body (`{"model", "messages", "tools", "tool_choice", "chat_template_kwargs", …}`),
        /// read with OpenAI's defaults (generation prompt on) and vLLM's content shaping. A
        /// file, `-` for stdin, or the JSON text itself.
        #[arg(long)]
        messages: PathBuf,
        /// A JSON list of tool schemas: a file, `-` for stdin, or the JSON text itself.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// A JSON list of documents: a file, `-` for stdin, or the JSON text itself.
        #[arg(long)]
        documents: Option<PathBuf>,
        /// End with the assistant header.
        #[arg(long)]
        add_generation_prompt: bool,
        /// Leave the final message open for the model to continue; `=FIELD` continues
        /// another field (e.g. `reasoning_content`) instead of `content`.
        #[arg(long, num_args = 0..=1, default_missing_value = "content", require_equals = true)]
        continue_final_message: Option<String>,
        /// The template: one of the tokenizer's named templates (`tool_use`, `rag`, ...), a
        /// template file, or the template text itself (anything with `{{` or `{%`).
        #[arg(long)]
        template: Option<String>,
        /// Extra template variables, a JSON object (e.g. `{"enable_thinking": false}`).
        #[arg(long)]
        kwargs: Option<String>,
        /// Pin `strftime_now` to this time (RFC 3339, e.g. `2024-09-03T12:34:56Z`; the wall
        /// clock as written is used, as Python's naive `datetime.now()`).
        #[arg(long)]
        now: Option<String>,
        /// Print the prompt's ids (separated by spaces) instead of its text; loads the
        /// vocabulary.
        #[arg(long)]
        encode: bool,
        /// With `--encode`: print `{"ids":[…]}`.
        #[arg(long, requires = "encode")]
        json: bool,
        /// With `--encode`: special-token text from the request is parsed, plain text
        /// (default) or refused.
        #[arg(long, value_enum, default_value = "plain", requires = "encode")]
        special_tokens: ChatSpecialArg,
        /// How to render: the chat template (`jinja`), or the format an engine renders the
        /// model with instead (`harmony`: gpt-oss as vLLM and SGLang render it, always
        /// ending with the assistant header; its text needs no vocabulary).
        #[arg(long, value_enum, default_value = "jinja")]
        format: ChatFormatArg,
    },
    /// vLLM's `/tokenize`: reads a request body (`{"prompt": …}` or `{"messages": […], …}`)
    /// and prints the response body `{"count", "max_model_len", "tokens", "token_strs"}`.
    Tokenize {
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        input: Input,
    },
    /// vLLM's `/detokenize`: reads `{"tokens": […]}` and prints `{"prompt": …}`.
    Detokenize {
        #[command(flatten)]
        source: Source,
        #[command(flatten)]
        input: Input,
    },
    /// Format, vocabulary size, special tokens, eos ids, chat template names.
    Inspect {
        #[command(flatten)]
        source: Source,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn load(source: &Source) -> Result<Tokenizer> {
    load_with(source, ParallelOptions::default())
}

fn load_with(source: &Source, parallel: ParallelOptions) -> Result<Tokenizer> {
    load_options(source, parallel)?
        .load(&source.tokenizer)
        .with_context(|| format!("loading tokenizer {:?}", source.tokenizer))
}

fn load_options(source: &Source, parallel: ParallelOptions) -> Result<LoadOptions> {
    Ok(LoadOptions::default()
        .with_parallel(parallel)
        .with_special_tokens(if source.specials_as_text {
            SpecialTokenPolicy::PlainText
        } else {
            SpecialTokenPolicy::Parse
        })
        .with_progress(true)
        .with_aliases(source.aliases()?))
}

fn read_input(input: &Input) -> Result<String> {
    if let Some(text) = &input.text {
        return Ok(text.clone());
    }
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
            parallel,
        } => {
            let tok = load_with(&source, parallel.options()?)?;
            let text = read_input(&input)?;
            if json {
                let enc = tok.encode_with(
                    &text,
                    &router_tokenizer::EncodeOptions::new()
                        .with_add_special_tokens(add_special_tokens)
                        .with_offsets(true),
                )?;
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
            json,
        } => {
            let tok = load(&source)?;
            let ids = parse_ids(&read_input(&input)?)?;
            let text = tok.decode(&ids, skip_special_tokens)?;
            if json {
                writeln!(out, "{}", serde_json::json!({ "text": text }))?;
            } else {
                out.write_all(text.as_bytes())?;
            }
        }
        Command::Tokenize { source, input } => {
            let body: TokenizeRequest =
                serde_json::from_str(&read_input(&input)?).context("reading the /tokenize body")?;
            let tok = load(&source)?;
            writeln!(out, "{}", serde_json::to_string(&tok.tokenize(&body)?)?)?;
        }
        Command::Detokenize { source, input } => {
            let body: DetokenizeRequest = serde_json::from_str(&read_input(&input)?)
                .context("reading the /detokenize body")?;
            let tok = load(&source)?;
            writeln!(out, "{}", serde_json::to_string(&tok.detokenize(&body)?)?)?;
        }
        Command::Count {
            source,
            input,
            json,
        } => {
            let tok = load(&source)?;
            let text = read_input(&input)?;
            let count = tok.count(&text, false)?;
            if json {
                writeln!(out, "{}", serde_json::json!({ "count": count }))?;
            } else {
                writeln!(out, "{count}")?;
            }
        }
        Command::Truncate {
            source,
            input,
            max_tokens,
            side,
            add_special_tokens,
            json,
        } => {
            let tok = load(&source)?;
            let text = read_input(&input)?;
            let side = match side {
                SideArg::Left => Side::Left,
                SideArg::Right => Side::Right,
            };
            let kept = tok.truncate(&text, max_tokens, side, add_special_tokens)?;
            if json {
                let tokens = tok.count(kept, add_special_tokens)?;
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "text": kept, "tokens": tokens })
                )?;
            } else {
                out.write_all(kept.as_bytes())?;
            }
        }
        Command::Split {
            source,
            input,
            tokens,
            add_special_tokens,
            json: _,
        } => {
            let tok = load(&source)?;
            let text = read_input(&input)?;
            let chunks = tok
                .split(&text, tokens, add_special_tokens)
                .map(|c| {
                    c.map(
                        |c| serde_json::json!({"start": c.start, "end": c.end, "tokens": c.tokens}),
                    )
                })
                .collect::<router_tokenizer::Result<Vec<_>>>()?;
            writeln!(out, "{}", serde_json::Value::Array(chunks))?;
        }
        Command::Bench {
            source,
            input,
            threads,
            repeat,
            parallel,
            json,
            ceiling,
        } => {
            let options = Parallel { parallel, threads }.options()?;
            let pool = options.pool.clone();
            let tok = load_with(&source, options)?;
            // Time the engines a server runs on, not the regex path a
            // tiktoken encoding takes while its engine is still being built.
            tok.warm_up();
            let text = read_input(&Input {
                input: Some(input),
                text: None,
            })?;
            let ceiling = ceiling.then_some(pool.as_deref());
            let report = bench(&tok, &text, repeat.max(1), ceiling)?;
            if json {
                writeln!(out, "{}", report.json())?;
            } else {
                writeln!(
                    out,
                    "{}: {} tokens, {} bytes, family {}\nsequential {:.3} ms, parallel {:.3} ms, speedup {:.2}x, identical: {}",
                    tok.source(),
                    report.tokens,
                    text.len(),
                    tok.split_family(),
                    report.sequential_ms,
                    report.parallel_ms,
                    report.speedup(),
                    report.identical
                )?;
                if let (Some(ms), Some(x)) = (report.ceiling_ms, report.ceiling_speedup()) {
                    writeln!(
                        out,
                        "ceiling {ms:.3} ms ({x:.2}x): concurrent independent encodes"
                    )?;
                }
            }
        }
        Command::Stream {
            source,
            prompt_ids,
            input,
            stop,
            visible_stop,
            stop_token,
            visible_stop_token,
            stop_token_sequence,
            eos_token,
            min_tokens,
            skip_special_tokens,
            ignore_eos,
            strict_unknown_ids,
            spaces_between_special_tokens,
            token_text,
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
                    stop_token_sequences: stop_token_sequence
                        .iter()
                        .map(|s| parse_ids(&s.replace(',', " ")))
                        .collect::<Result<_>>()?,
                    eos_token_ids: (!eos_token.is_empty()).then_some(eos_token),
                    stop_strings: stop,
                    visible_stop_strings: visible_stop,
                    min_tokens,
                    skip_special_tokens,
                    ignore_eos,
                    unknown_ids: if strict_unknown_ids {
                        UnknownIds::Error
                    } else {
                        UnknownIds::Skip
                    },
                    spaces_between_special_tokens,
                },
            )?;
            let line = |id: Option<u32>, output: Output, matched: Option<&MatchedStop>| {
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
            };
            // After a stop, every later line (and the flush's) says `stopped`.
            for id in ids {
                let shown = if token_text {
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
            now,
            encode,
            json,
            special_tokens,
            format,
        } => {
            let read = |p: &PathBuf| -> Result<String> {
                if p.as_os_str() == "-" {
                    let mut text = String::new();
                    std::io::stdin()
                        .read_to_string(&mut text)
                        .context("reading stdin")?;
                    return Ok(text);
                }
                // JSON text given inline (`--messages '[{"role": ...}]'`), unless a
                // file of that name exists.
                if let Some(inline) = p.to_str().filter(|t| {
                    t.trim_start().starts_with(['[', '{']) && !std::path::Path::new(t).exists()
                }) {
                    return Ok(inline.to_owned());
                }
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
            };
            let messages = read(&messages)?;
            let tools = tools.as_ref().map(read).transpose()?;
            let documents = documents.as_ref().map(read).transpose()?;
            // `--template`: a file, the template text, or one of the tokenizer's names.
            let (template_text, template_name) = match template {
                Some(t) if std::path::Path::new(&t).is_file() => (
                    Some(
                        std::fs::read_to_string(&t)
                            .with_context(|| format!("reading template {t}"))?,
                    ),
                    None,
                ),
                Some(t) if t.contains("{{") || t.contains("{%") => (Some(t), None),
                other => (None, other),
            };
            let continue_final_message = match continue_final_message.as_deref() {
                None => ContinueFinalMessage::Off,
                Some("content") => ContinueFinalMessage::Content,
                Some(field) => ContinueFinalMessage::Field(field.to_owned()),
            };
            let mut request = ChatRequest::from_cli(&ChatCliInput {
                messages: &messages,
                tools: tools.as_deref(),
                documents: documents.as_deref(),
                add_generation_prompt,
                continue_final_message,
                template: template_name.as_deref(),
                kwargs: kwargs.as_deref(),
            })?;
            if let Some(now) = now {
                request.fixed_now = Some(FixedNow::parse(&now)?);
            }
            if encode {
                let tok = load(&source)?;
                let tok = match &template_text {
                    Some(text) => tok.with_chat_template(text)?,
                    None => tok,
                };
                let policy = match special_tokens {
                    ChatSpecialArg::Parse => ChatSpecialTokens::Parse,
                    ChatSpecialArg::Plain => ChatSpecialTokens::PlainText,
                    ChatSpecialArg::Reject => ChatSpecialTokens::Reject,
                };
                let enc = tok.encode_chat(
                    &request,
                    &EncodeChatOptions::default()
                        .with_special_tokens(policy)
                        .with_format(format.into()),
                )?;
                if json {
                    writeln!(out, "{}", serde_json::json!({ "ids": enc.ids }))?;
                } else {
                    let line: Vec<String> = enc.ids.iter().map(u32::to_string).collect();
                    writeln!(out, "{}", line.join(" "))?;
                }
                return Ok(());
            }
            match ChatFormat::from(format) {
                ChatFormat::Harmony => {
                    out.write_all(router_tokenizer::harmony::render_text(&request)?.as_bytes())?;
                    return Ok(());
                }
                ChatFormat::MistralCommon => {
                    anyhow::bail!("chat format mistral: not supported yet");
                }
                _ => {}
            }
            let options = load_options(&source, ParallelOptions::default())?;
            let compiled = match template_text {
                // The tokenizer's special tokens still apply to a template given here.
                Some(text) => ChatTemplate::from_text(
                    &text,
                    &options.load_special_tokens(&source.tokenizer)?,
                )?,
                None => options
                    .load_chat_template(&source.tokenizer)
                    .with_context(|| {
                        format!("loading the chat template of {:?}", source.tokenizer)
                    })?,
            };
            out.write_all(compiled.render(&request)?.as_bytes())?;
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
            let templates: Vec<String> = tok
                .chat_template()
                .map(|t| t.names().map(str::to_owned).collect())
                .unwrap_or_default();
            let value = serde_json::json!({
                "source": tok.source(),
                "format": tok.format().name(),
                "backend": tok.backend_name(),
                "vocab_size": tok.vocab_size(),
                "special_tokens": named,
                "additional_special_tokens": specials.additional.len(),
                "eos_token_ids": tok.eos_token_ids(),
                "context_length": tok.context_length(),
                "chat_template": !templates.is_empty(),
                "chat_template_names": templates,
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

struct BenchReport {
    tokens: usize,
    sequential_ms: f64,
    parallel_ms: f64,
    identical: bool,
    ceiling_ms: Option<f64>,
}

impl BenchReport {
    fn speedup(&self) -> f64 {
        if self.parallel_ms > 0.0 {
            self.sequential_ms / self.parallel_ms
        } else {
            0.0
        }
    }

    fn ceiling_speedup(&self) -> Option<f64> {
        self.ceiling_ms.map(|ms| self.sequential_ms / ms)
    }

    fn json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "tokens": self.tokens,
            "sequential_ms": self.sequential_ms,
            "parallel_ms": self.parallel_ms,
            "speedup": self.speedup(),
            "identical": self.identical,
        });
        if let (Some(ms), Some(x), Some(map)) =
            (self.ceiling_ms, self.ceiling_speedup(), v.as_object_mut())
        {
            map.insert("ceiling_ms".into(), ms.into());
            map.insert("ceiling_speedup".into(), x.into());
        }
        v
    }
}

/// Interleaves sequential and parallel encodes of `text` and takes medians.
///
/// Every encode starts the input one char later than the one before, so
/// caches keyed on whole segments (BPE without a pre-tokenizer caches the
/// whole text as one word, SentencePiece memoizes whole inputs) never answer
/// a timed encode; word caches stay warm, as in a server. The lines are the
/// same, though: a line memo (DESIGN.md claims 357, 359) answers the
/// sequential side from the second round on, as for a prompt sent again,
/// and `--parallel auto` leaves such a text whole (claim 362).
/// `tools/lopt_scaling.rs` times text seen once (claim 363).
fn bench(
    tok: &Tokenizer,
    text: &str,
    repeat: usize,
    // `Some(pool)` times the ceiling too, on that pool (`None`: the global one).
    ceiling: Option<Option<&rayon::ThreadPool>>,
) -> Result<BenchReport> {
    let mut seq = Vec::with_capacity(repeat);
    let mut par = Vec::with_capacity(repeat);
    let mut ceil = Vec::with_capacity(repeat);
    let mut identical = true;
    let mut tokens = 0;
    let mut starts = text.char_indices().map(|(i, _)| i);
    let mut next_slice = || &text[starts.next().unwrap_or(0)..];
    let time = |f: &dyn Fn() -> router_tokenizer::Result<router_tokenizer::Encoding>| {
        let t = Instant::now();
        f().map(|e| (e, t.elapsed().as_secs_f64() * 1e3))
    };
    for round in 0..=repeat {
        // Each timed encode gets its own slice, so no whole-input cache
        // answers one side with the other's work; the order alternates so
        // neither side always finds the caches the other just warmed.
        let (s_slice, p_slice) = (next_slice(), next_slice());
        let run_seq = || tok.encode_with(s_slice, &sequential());
        let run_par = || tok.encode(p_slice, false);
        let ((a, s_ms), (b, p_ms)) = if round % 2 == 0 {
            let a = time(&run_seq)?;
            (a, time(&run_par)?)
        } else {
            let b = time(&run_par)?;
            (time(&run_seq)?, b)
        };
        // Untimed: the parallel ids against the sequential ids of its slice.
        identical &= b.ids() == tok.encode_with(p_slice, &sequential())?.ids();
        if round == 0 {
            tokens = a.len();
            continue;
        }
        seq.push(s_ms);
        par.push(p_ms);
    }
    // A phase of its own: between the timed pairs, all threads' work would
    // evict the caches one side of each pair finds warm.
    if let Some(pool) = ceiling {
        for round in 0..=repeat {
            let (c_ms, k) = concurrent_copies(tok, next_slice(), pool)?;
            if round > 0 {
                // As the time one encode would take at that throughput.
                ceil.push(c_ms / k as f64);
            }
        }
    }
    Ok(BenchReport {
        tokens,
        sequential_ms: median(&mut seq),
        parallel_ms: median(&mut par),
        identical,
        ceiling_ms: ceiling.map(|_| median(&mut ceil)),
    })
}

/// Options for the backend alone: the calling thread, no chunks, no prompt caches.
fn sequential() -> router_tokenizer::EncodeOptions {
    router_tokenizer::EncodeOptions::new()
        .with_parallelism(router_tokenizer::Parallelism::Sequential)
}

/// Milliseconds for every pool thread to encode all of `text` sequentially
/// at the same time, and the thread count: `k * sequential / this` is the
/// throughput the machine gives `k` independent encodes, the bound on any
/// split's speedup.
fn concurrent_copies(
    tok: &Tokenizer,
    text: &str,
    pool: Option<&rayon::ThreadPool>,
) -> Result<(f64, usize)> {
    use rayon::prelude::*;
    let k = pool.map_or_else(
        rayon::current_num_threads,
        rayon::ThreadPool::current_num_threads,
    );
    let run = || -> router_tokenizer::Result<Vec<usize>> {
        (0..k)
            .into_par_iter()
            .map(|_| tok.encode_with(text, &sequential()).map(|e| e.len()))
            .collect()
    };
    let t = Instant::now();
    match pool {
        Some(pool) => pool.install(run)?,
        None => run()?,
    };
    Ok((t.elapsed().as_secs_f64() * 1e3, k))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
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
