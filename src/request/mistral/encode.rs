//! `InstructTokenizerV1` … `V13.encode_instruct`: the ids of a normalized
//! request. Every request text is encoded on its own as plain text (never
//! parsing control-token text), as mistral_common encodes each piece with
//! `tokenizer.encode(text, bos=False, eos=False)`; control tokens are
//! added by id.

use serde_json::{Map, Value as Json};

use super::convert::{Call, Role, Tool};
use super::normalize::{Instruct, NMsg};
use super::{MistralVersion, invalid, pyjson};
use crate::error::{Error, ErrorKind, Result};
use crate::tokenizer::Tokenizer;

/// The tokenizer and version one request is encoded with.
pub(super) struct Encoder<'t> {
    tok: &'t Tokenizer,
    v: MistralVersion,
}

impl<'t> Encoder<'t> {
    pub(super) fn new(tok: &'t Tokenizer, v: MistralVersion) -> Self {
        Encoder { tok, v }
    }

    /// The id of control token `text`, which the version's files define.
    fn ctl(&self, text: &str) -> Result<u32> {
        self.tok.token_to_id(text).ok_or_else(|| {
            Error::new(ErrorKind::ChatFormat {
                format: "mistral",
                detail: format!(
                    "the tokenizer has no {text} token, which mistral_common's {} encoding needs",
                    self.v.name()
                ),
            })
        })
    }

    /// `tokenizer.encode(text, bos=False, eos=False)`: plain text.
    fn text(&self, text: &str, out: &mut Vec<u32>) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let backend = self.tok.backend_dyn();
        let enc = backend.encode_plain(text, false, &[]).ok_or_else(|| {
            Error::backend(
                backend.backend_name(),
                "this backend cannot encode text without parsing special tokens",
            )
        })??;
        out.extend_from_slice(enc.ids());
        Ok(())
    }

    fn json(&self, value: &Json, out: &mut Vec<u32>) -> Result<()> {
        self.text(&pyjson::dumps(value), out)
    }

    pub(super) fn encode(&self, req: &Instruct, tools: &[Tool]) -> Result<Vec<u32>> {
        let v = self.v;
        let msgs = &req.messages;
        let first_user = msgs.iter().position(|m| m.role == Role::User);
        let last_user = msgs.iter().rposition(|m| m.role == Role::User);
        if v == MistralVersion::V2 {
            v2_tool_results(msgs, last_user)?;
        }
        let mut out = vec![self.ctl("<s>")?];
        for (i, m) in msgs.iter().enumerate() {
            let before_last_user = last_user.is_some_and(|l| i < l);
            match m.role {
                Role::User => {
                    let tools_here = if v >= MistralVersion::V13 {
                        Some(i) == first_user
                    } else {
                        Some(i) == last_user
                    };
                    let sp = match v {
                        MistralVersion::V1 if Some(i) == first_user => req.system_prompt.as_deref(),
                        MistralVersion::V2 | MistralVersion::V3 if Some(i) == last_user => {
                            req.system_prompt.as_deref()
                        }
                        _ => None,
                    };
                    self.user(m, sp, tools_here.then_some(tools), &mut out)?;
                }
                Role::Assistant => self.assistant(m, before_last_user, &mut out)?,
                Role::Tool => self.tool(m, before_last_user, &mut out)?,
                Role::System => {
                    if v < MistralVersion::V7 {
                        return Err(invalid(format!(
                            "system message encoding not implemented for {}",
                            v.name()
                        )));
                    }
                    out.push(self.ctl("[SYSTEM_PROMPT]")?);
                    self.text(&m.content, &mut out)?;
                    out.push(self.ctl("[/SYSTEM_PROMPT]")?);
                }
            }
        }
        Ok(out)
    }

    fn user(
        &self,
        m: &NMsg,
        system_prompt: Option<&str>,
        tools: Option<&[Tool]>,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let content = match system_prompt {
            Some(sp) if !sp.is_empty() => format!("{sp}\n\n{}", m.content),
            _ => m.content.clone(),
        };
        if self.v == MistralVersion::V1 {
            // V1 has no control tokens: the markers are text.
            return self.text(&format!("[INST] {content} [/INST]"), out);
        }
        if let Some(tools) = tools.filter(|t| !t.is_empty()) {
            out.push(self.ctl("[AVAILABLE_TOOLS]")?);
            self.json(&Json::Array(tools.iter().map(Tool::dump).collect()), out)?;
            out.push(self.ctl("[/AVAILABLE_TOOLS]")?);
        }
        out.push(self.ctl("[INST]")?);
        self.text(&content, out)?;
        out.push(self.ctl("[/INST]")?);
        Ok(())
    }

    fn assistant(&self, m: &NMsg, before_last_user: bool, out: &mut Vec<u32>) -> Result<()> {
        let v = self.v;
        let has_calls = !m.tool_calls.is_empty();
        let has_content = !m.content.is_empty();
        if v == MistralVersion::V1 {
            if has_calls {
                return Err(invalid("tools not implemented for tokenizer V1"));
            }
            if !has_content {
                return Err(invalid("invalid assistant message: no content"));
            }
            self.text(&m.content, out)?;
        } else if v < MistralVersion::V7 {
            if has_calls && has_content {
                return Err(invalid(
                    "cannot have tool calls and content defined in the same assistant message",
                ));
            }
            if has_calls {
                // v2 drops tool calls (and their EOS) before the last user message.
                if v == MistralVersion::V2 && before_last_user {
                    return Ok(());
                }
                self.calls_json(&m.tool_calls, out)?;
            } else if has_content {
                self.text(m.content.trim_end_matches(' '), out)?;
            } else {
                return Err(invalid("invalid assistant message: no content"));
            }
        } else {
            if !has_calls && !has_content {
                return Err(invalid(
                    "invalid assistant message: no content and no tool calls",
                ));
            }
            if has_content {
                self.text(m.content.trim_end_matches(' '), out)?;
            }
            if has_calls {
                if v >= MistralVersion::V11 {
                    self.calls_v11(&m.tool_calls, out)?;
                } else {
                    self.calls_json(&m.tool_calls, out)?;
                }
            }
        }
        if !m.prefix {
            out.push(self.ctl("</s>")?);
        }
        Ok(())
    }

    /// `[TOOL_CALLS]` and the calls as one JSON list (v2 to v7).
    fn calls_json(&self, calls: &[Call], out: &mut Vec<u32>) -> Result<()> {
        let prepared: Vec<Json> = calls
            .iter()
            .map(|c| {
                let mut f = Map::new();
                f.insert("name".into(), Json::String(c.name.clone()));
                f.insert("arguments".into(), parse_json(&c.arguments));
                if self.v >= MistralVersion::V3 && !c.id.is_empty() && c.id != "null" {
                    f.insert("id".into(), Json::String(c.id.clone()));
                }
                Json::Object(f)
            })
            .collect();
        out.push(self.ctl("[TOOL_CALLS]")?);
        self.json(&Json::Array(prepared), out)
    }

    /// Per call `[TOOL_CALLS] name [CALL_ID] id [ARGS] arguments` (v11; no
    /// id from v13).
    fn calls_v11(&self, calls: &[Call], out: &mut Vec<u32>) -> Result<()> {
        for c in calls {
            out.push(self.ctl("[TOOL_CALLS]")?);
            self.text(&c.name, out)?;
            if self.v < MistralVersion::V13 && !c.id.is_empty() && c.id != "null" {
                out.push(self.ctl("[CALL_ID]")?);
                self.text(&c.id, out)?;
            }
            out.push(self.ctl("[ARGS]")?);
            self.json(&parse_json(&c.arguments), out)?;
        }
        Ok(())
    }

    fn tool(&self, m: &NMsg, before_last_user: bool, out: &mut Vec<u32>) -> Result<()> {
        let v = self.v;
        match v {
            MistralVersion::V1 => return Err(invalid("tools not implemented for tokenizer V1")),
            MistralVersion::V2 => {
                if before_last_user {
                    return Ok(());
                }
                let mut r = Map::new();
                r.insert(
                    "name".into(),
                    m.name.clone().map_or(Json::Null, Json::String),
                );
                r.insert("content".into(), parse_json(&m.content));
                out.push(self.ctl("[TOOL_RESULTS]")?);
                self.json(&Json::Array(vec![Json::Object(r)]), out)?;
            }
            MistralVersion::V3 => {
                let Some(id) = &m.tool_call_id else {
                    return Err(invalid(
                        "tool message has to have the tool call id defined in v3",
                    ));
                };
                let mut r = Map::new();
                r.insert("content".into(), parse_json(&m.content));
                r.insert("call_id".into(), Json::String(id.clone()));
                out.push(self.ctl("[TOOL_RESULTS]")?);
                self.json(&Json::Object(r), out)?;
            }
            MistralVersion::V7 | MistralVersion::V11 => {
                let Some(id) = &m.tool_call_id else {
                    return Err(invalid("tool message has to have the tool call id defined"));
                };
                out.push(self.ctl("[TOOL_RESULTS]")?);
                self.text(id, out)?;
                out.push(self.ctl("[TOOL_CONTENT]")?);
                self.text(&m.content, out)?;
            }
            MistralVersion::V13 => {
                out.push(self.ctl("[TOOL_RESULTS]")?);
                self.text(&m.content, out)?;
            }
        }
        out.push(self.ctl("[/TOOL_RESULTS]")?);
        Ok(())
    }
}

/// `_parse_json_content`: the JSON value, or the text itself as a string.
fn parse_json(text: &str) -> Json {
    pyjson::loads(text).unwrap_or_else(|| Json::String(text.to_owned()))
}

/// v2 encodes one tool result per assistant turn after the last user message.
fn v2_tool_results(msgs: &[NMsg], last_user: Option<usize>) -> Result<()> {
    let mut calling = false;
    let mut results = 0;
    for m in msgs.iter().skip(last_user.unwrap_or(0)) {
        match m.role {
            Role::Assistant => {
                calling = !m.tool_calls.is_empty();
                results = 0;
            }
            Role::Tool => {
                if calling {
                    results += 1;
                    if results > 1 {
                        return Err(invalid(
                            "tokenizer v2 does not support multiple tool results for one assistant turn",
                        ));
                    }
                }
            }
            _ => {
                calling = false;
                results = 0;
            }
        }
    }
    Ok(())
}
