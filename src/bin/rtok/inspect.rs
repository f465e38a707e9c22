//! `rtok inspect`: what a loaded tokenizer is (format, vocabulary, special tokens, templates).

use crate::source::Source;
use anyhow::Result;
use clap::Args;
use std::io::Write;

// No doc comment: the `Command` variant's is the command's help.
#[derive(Args)]
pub(crate) struct InspectArgs {
    #[command(flatten)]
    source: Source,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn inspect(args: InspectArgs, out: &mut impl Write) -> Result<()> {
    let tok = args.source.load()?;
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
    if args.json {
        writeln!(out, "{value}")?;
    } else {
        for (k, v) in value.as_object().into_iter().flatten() {
            writeln!(out, "{k:>26}: {v}")?;
        }
    }
    Ok(())
}
