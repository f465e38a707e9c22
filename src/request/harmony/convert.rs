//! A [`ChatRequest`] as Harmony messages, mapped as vLLM's gpt-oss Chat
//! Completions path maps it (`build_harmony_preamble`,
//! `parse_chat_inputs_to_harmony_messages`, `auto_drop_analysis_messages`),
//! so that a router sees the prompt its engine will run.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::render::{Content, DeveloperContent, Effort, HMessage, Role, SystemContent, Tool};
use crate::chat::{ChatRequest, Message, MessageContent};
use crate::error::{Error, ErrorKind, Result};

/// A request the Harmony mapping refuses (as vLLM refuses it).
fn refuse(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidRequest {
        detail: format!("harmony: {}", detail.into()),
    })
}

/// The Harmony messages of `request`, before Harmony's own render rules.
pub(crate) fn to_harmony(request: &ChatRequest) -> Result<Vec<HMessage>> {
    if request.continue_final_message.is_on() {
        return Err(refuse(
            "continue_final_message is not supported (engines always open a new assistant turn)",
        ));
    }
    let effort = effort(&request.chat_template_kwargs)?;
    let date = match request.fixed_now {
        Some(now) => now.date_iso(),
        None => jiff::Zoned::now().date().to_string(),
    };
    let tools = tools(request.tools.as_deref())?;

    // A leading system or developer message is the developer instructions.
    let (instructions, first) = match request.messages.first() {
        Some(m) if m.role == "system" || m.role == "developer" => (flatten(m), 1),
        _ => (None, 0),
    };
    let mut out = vec![HMessage::new(
        Role::System,
        Content::System(SystemContent { effort, date }),
        None,
    )];
    if instructions.as_deref().is_some_and(|i| !i.is_empty()) || !tools.is_empty() {
        let source = if instructions.is_some() {
            Some(0)
        } else {
            None
        };
        out.push(HMessage::new(
            Role::Developer,
            Content::Developer(DeveloperContent {
                instructions,
                tools,
            }),
            source,
        ));
    }

    let mut call_names: HashMap<&str, &str> = HashMap::new();
    for m in &request.messages[first..] {
        for call in m.tool_calls.iter().flatten() {
            if let Some(id) = &call.id {
                call_names.insert(id, &call.function.name);
            }
        }
    }
    for (i, m) in request.messages.iter().enumerate().skip(first) {
        convert(&mut out, i, m, &call_names)?;
    }
    Ok(drop_earlier_analysis(out))
}

/// `chat_template_kwargs.reasoning_effort`: `low`, `medium` (the default) or
/// `high`; vLLM refuses anything else, `none` included.
fn effort(kwargs: &serde_json::Map<String, Json>) -> Result<Effort> {
    match kwargs.get("reasoning_effort") {
        None | Some(Json::Null) => Ok(Effort::Medium),
        Some(Json::String(s)) => match s.as_str() {
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            other => Err(refuse(format!(
                "reasoning_effort={other:?} is not supported (low, medium or high)"
            ))),
        },
        Some(other) => Err(refuse(format!(
            "reasoning_effort must be a string, got {other}"
        ))),
    }
}

/// The request's function tools (`{"type": "function", "function": {...}}`).
fn tools(list: Option<&[Json]>) -> Result<Vec<Tool>> {
    let mut out = Vec::new();
    for (i, tool) in list.unwrap_or_default().iter().enumerate() {
        let bad = |what: &str| refuse(format!("tool {i}: {what}"));
        let Some(obj) = tool.as_object() else {
            return Err(bad("expected an object"));
        };
        match obj.get("type") {
            None | Some(Json::Null) => {}
            Some(Json::String(t)) if t == "function" => {}
            Some(other) => return Err(bad(&format!("type {other} is not supported"))),
        }
        let Some(f) = obj.get("function").and_then(Json::as_object) else {
            return Err(bad("`function` must be an object"));
        };
        let Some(name) = f.get("name").and_then(Json::as_str) else {
            return Err(bad("`function.name` must be a string"));
        };
        let description = match f.get("description") {
            None | Some(Json::Null) => String::new(),
            Some(Json::String(d)) => d.clone(),
            Some(_) => return Err(bad("`function.description` must be a string")),
        };
        let parameters = match f.get("parameters") {
            None | Some(Json::Null) => None,
            Some(p @ Json::Object(_)) => Some(p.clone()),
            Some(_) => return Err(bad("`function.parameters` must be an object")),
        };
        out.push(Tool {
            name: name.to_owned(),
            description,
            parameters,
        });
    }
    Ok(out)
}

/// The text parts joined (vLLM's `flatten_input_text_content`): `None`
/// where there is no content or no text part.
fn flatten(m: &Message) -> Option<String> {
    match m.content.as_ref()? {
        MessageContent::Text(t) => Some(t.clone()),
        MessageContent::Parts(parts) => {
            let texts: Vec<&str> = parts.iter().filter_map(|p| p.text.as_deref()).collect();
            (!texts.is_empty()).then(|| texts.concat())
        }
    }
}

/// The assistant's reasoning: `reasoning_content`, or `reasoning` /
/// `thinking` given as extra fields; empty counts as none.
fn reasoning(m: &Message) -> Option<&str> {
    m.reasoning_content
        .as_deref()
        .or_else(|| m.extra.get("reasoning").and_then(Json::as_str))
        .or_else(|| m.extra.get("thinking").and_then(Json::as_str))
        .filter(|r| !r.is_empty())
}

fn convert(
    out: &mut Vec<HMessage>,
    i: usize,
    m: &Message,
    call_names: &HashMap<&str, &str>,
) -> Result<()> {
    let calls = m.tool_calls.as_deref().unwrap_or_default();
    match m.role.as_str() {
        "assistant" if !calls.is_empty() => {
            // A preamble before the calls, then the reasoning (vLLM's order).
            if let Some(text) = flatten(m).filter(|t| !t.is_empty()) {
                out.push(HMessage::text(Role::Assistant, text, i).channel("commentary"));
            }
            if let Some(r) = reasoning(m) {
                out.push(HMessage::text(Role::Assistant, r, i).channel("analysis"));
            }
            for call in calls {
                let arguments = match &call.function.arguments {
                    Json::String(s) => s.clone(),
                    Json::Null => String::new(),
                    other => other.to_string(),
                };
                // `content_type` on a call (as the gpt-oss template reads it),
                // else vLLM's `json`.
                let content_type = call
                    .extra
                    .get("content_type")
                    .and_then(Json::as_str)
                    .unwrap_or("json");
                let mut msg = HMessage::text(Role::Assistant, arguments, i)
                    .channel("commentary")
                    .recipient(format!("functions.{}", call.function.name));
                msg.content_type = Some(content_type.to_owned());
                out.push(msg);
            }
        }
        "tool" => {
            // The name of the call it answers, else its own `name`.
            let name = m
                .tool_call_id
                .as_deref()
                .and_then(|id| call_names.get(id).copied())
                .or(m.name.as_deref())
                .unwrap_or_default();
            let mut msg = HMessage::text(Role::Tool, flatten(m).unwrap_or_default(), i)
                .channel("commentary")
                .recipient("assistant".to_owned());
            msg.name = Some(format!("functions.{name}"));
            out.push(msg);
        }
        "assistant" => {
            if let Some(r) = reasoning(m) {
                out.push(HMessage::text(Role::Assistant, r, i).channel("analysis"));
            }
            let contents = texts(m);
            if contents.first().is_some_and(|t| !t.is_empty()) {
                let mut msg = HMessage::text(Role::Assistant, String::new(), i).channel("final");
                msg.contents = contents.into_iter().map(Content::Text).collect();
                out.push(msg);
            }
        }
        "system" | "developer" => {
            if let Some(instructions) = flatten(m) {
                out.push(HMessage::new(
                    Role::Developer,
                    Content::Developer(DeveloperContent {
                        instructions: Some(instructions),
                        tools: Vec::new(),
                    }),
                    Some(i),
                ));
            }
        }
        "user" => {
            let mut msg = HMessage::text(Role::User, String::new(), i);
            msg.contents = texts(m).into_iter().map(Content::Text).collect();
            out.push(msg);
        }
        other => {
            return Err(refuse(format!(
                "message {i}: role {other:?} is not a Harmony role"
            )));
        }
    }
    Ok(())
}

/// One text per content part (non-text parts count as empty), or the text.
fn texts(m: &Message) -> Vec<String> {
    match &m.content {
        None => vec![String::new()],
        Some(MessageContent::Text(t)) => vec![t.clone()],
        Some(MessageContent::Parts(parts)) => parts
            .iter()
            .map(|p| p.text.clone().unwrap_or_default())
            .collect(),
    }
}

/// vLLM's rule: analysis before the last assistant `final` message is
/// dropped (it belonged to turns already answered).
fn drop_earlier_analysis(messages: Vec<HMessage>) -> Vec<HMessage> {
    let last_final = messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && m.channel.as_deref() == Some("final"));
    let Some(last_final) = last_final else {
        return messages;
    };
    messages
        .into_iter()
        .enumerate()
        .filter(|(i, m)| !(*i < last_final && m.channel.as_deref() == Some("analysis")))
        .map(|(_, m)| m)
        .collect()
}
