//! `rtok chat`: render (or encode) a conversation with the tokenizer's template or an engine's
//! format. The request is read from the command line here, not by the library: its flags are
//! the CLI's own.

use crate::source::Source;
use crate::text::join_ids;
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use router_tokenizer::chat::{
    ChatRequest, ChatTemplate, ChatTemplateError, ContinueFinalMessage, FixedNow, Message,
};
use router_tokenizer::{ChatFormat, ChatSpecialTokens, EncodeChatOptions, ParallelOptions};
use serde_json::{Map, Value as Json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

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

impl From<ChatSpecialArg> for ChatSpecialTokens {
    fn from(arg: ChatSpecialArg) -> Self {
        match arg {
            ChatSpecialArg::Parse => ChatSpecialTokens::Parse,
            ChatSpecialArg::Plain => ChatSpecialTokens::PlainText,
            ChatSpecialArg::Reject => ChatSpecialTokens::Reject,
        }
    }
}

// No doc comment: the `Command` variant's is the command's help.
#[derive(Args)]
pub(crate) struct ChatArgs {
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
}

/// Renders (or with `--encode` encodes) the request. Only the template path flushes `out`
/// itself; the others leave it to the exit, as they always have.
pub(crate) fn run(args: ChatArgs, out: &mut impl Write) -> Result<()> {
    let messages = read_json_arg(&args.messages)?;
    let tools = args.tools.as_deref().map(read_json_arg).transpose()?;
    let documents = args.documents.as_deref().map(read_json_arg).transpose()?;
    let (template_text, template_name) = template_arg(args.template.clone())?;
    let continue_final_message = match args.continue_final_message.as_deref() {
        None => ContinueFinalMessage::Off,
        Some("content") => ContinueFinalMessage::Content,
        Some(field) => ContinueFinalMessage::Field(field.to_owned()),
    };
    let mut request = ChatCliInput {
        messages: &messages,
        tools: tools.as_deref(),
        documents: documents.as_deref(),
        add_generation_prompt: args.add_generation_prompt,
        continue_final_message,
        template: template_name.as_deref(),
        kwargs: args.kwargs.as_deref(),
    }
    .request()?;
    if let Some(now) = &args.now {
        request.fixed_now = Some(FixedNow::parse(now)?);
    }
    if args.encode {
        return encode(&args, &request, template_text.as_deref(), out);
    }
    match ChatFormat::from(args.format) {
        ChatFormat::Harmony => {
            out.write_all(router_tokenizer::harmony::render_text(&request)?.as_bytes())?;
            return Ok(());
        }
        ChatFormat::MistralCommon => {
            anyhow::bail!("chat format mistral: not supported yet");
        }
        _ => {}
    }
    let options = args.source.options(ParallelOptions::default())?;
    let tokenizer = &args.source.tokenizer;
    let compiled = match template_text {
        // The tokenizer's special tokens still apply to a template given here.
        Some(text) => ChatTemplate::from_text(&text, &options.load_special_tokens(tokenizer)?)?,
        None => options
            .load_chat_template(tokenizer)
            .with_context(|| format!("loading the chat template of {tokenizer:?}"))?,
    };
    out.write_all(compiled.render(&request)?.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `--encode`: the prompt's ids, with the whole tokenizer loaded.
fn encode(
    args: &ChatArgs,
    request: &ChatRequest,
    template_text: Option<&str>,
    out: &mut impl Write,
) -> Result<()> {
    let tok = args.source.load()?;
    let tok = match template_text {
        Some(text) => tok.with_chat_template(text)?,
        None => tok,
    };
    let enc = tok.encode_chat(
        request,
        &EncodeChatOptions::default()
            .with_special_tokens(args.special_tokens.into())
            .with_format(args.format.into()),
    )?;
    if args.json {
        writeln!(out, "{}", serde_json::json!({ "ids": enc.ids }))?;
    } else {
        writeln!(out, "{}", join_ids(&enc.ids))?;
    }
    Ok(())
}

/// A JSON argument: `-` reads stdin, JSON text given inline (`--messages '[{"role": ...}]'`)
/// is itself, unless a file of that name exists; anything else is a file.
fn read_json_arg(p: &Path) -> Result<String> {
    if p.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading stdin")?;
        return Ok(text);
    }
    if let Some(inline) = p
        .to_str()
        .filter(|t| t.trim_start().starts_with(['[', '{']) && !Path::new(t).exists())
    {
        return Ok(inline.to_owned());
    }
    std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
}

/// `--template`: a file or the template text (the first), or one of the tokenizer's names
/// (the second).
fn template_arg(template: Option<String>) -> Result<(Option<String>, Option<String>)> {
    Ok(match template {
        Some(t) if Path::new(&t).is_file() => (
            Some(std::fs::read_to_string(&t).with_context(|| format!("reading template {t}"))?),
            None,
        ),
        Some(t) if t.contains("{{") || t.contains("{%") => (Some(t), None),
        other => (None, other),
    })
}

/// The inputs of `rtok chat`, as the JSON texts given on the command line or read from files.
struct ChatCliInput<'a> {
    /// `--messages FILE`: a JSON list of messages (or an object with a `messages` list).
    messages: &'a str,
    /// `--tools FILE`: a JSON list of tool schemas.
    tools: Option<&'a str>,
    /// `--documents FILE`: a JSON list of document objects.
    documents: Option<&'a str>,
    /// `--add-generation-prompt`.
    add_generation_prompt: bool,
    /// `--continue-final-message[=FIELD]`.
    continue_final_message: ContinueFinalMessage,
    /// `--template NAME`: one of the tokenizer's named templates.
    template: Option<&'a str>,
    /// `--kwargs JSON`: an object of extra template variables.
    kwargs: Option<&'a str>,
}

/// A malformed flag's error, as the library reports a malformed request.
fn invalid(detail: String) -> ChatTemplateError {
    ChatTemplateError::InvalidRequest { detail }
}

fn parse_json<T: serde::de::DeserializeOwned>(
    what: &str,
    text: &str,
) -> Result<T, ChatTemplateError> {
    serde_json::from_str(text).map_err(|e| invalid(format!("{what}: {e}")))
}

impl ChatCliInput<'_> {
    /// The request. A list is the messages alone, rendered as given (transformers); an object
    /// is a whole OpenAI chat body, read by [`ChatRequest::from_openai`] (its tools, kwargs and
    /// defaults), which the flags then override: `--tools`/`--documents`/`--template` replace,
    /// `--kwargs` merges over, `--add-generation-prompt` and `--continue-final-message` switch
    /// on.
    fn request(&self) -> Result<ChatRequest, ChatTemplateError> {
        let mut request = match parse_json::<Json>("--messages", self.messages)? {
            body @ Json::Object(_) => ChatRequest::from_openai(&body).map_err(|e| match e {
                ChatTemplateError::InvalidRequest { detail } => {
                    invalid(format!("--messages: {detail}"))
                }
                other => other,
            })?,
            Json::Array(list) => ChatRequest::new(Message::list_from_json(list)?),
            _ => {
                return Err(invalid(
                    "--messages: expected a list of messages or an object with a `messages` list"
                        .to_owned(),
                ));
            }
        };
        if let Some(tools) = self.tools {
            request.tools = Some(parse_json("--tools", tools)?);
        }
        if let Some(documents) = self.documents {
            request.documents = Some(parse_json("--documents", documents)?);
        }
        if self.continue_final_message.is_on() {
            request.continue_final_message = self.continue_final_message.clone();
            request.add_generation_prompt = false;
        }
        if self.add_generation_prompt {
            request.add_generation_prompt = true;
        }
        if let Some(name) = self.template {
            request.chat_template_name = Some(name.to_owned());
        }
        if let Some(kwargs) = self.kwargs {
            let kwargs: Map<String, Json> = parse_json("--kwargs", kwargs)?;
            request.chat_template_kwargs.extend(kwargs);
        }
        Ok(request)
    }
}
