//! mistral_common's `MistralRequestValidator` (V3, V5, V11, V13) in its
//! default `test` mode: what `encode_chat_completion` refuses before it
//! encodes. Tool schemas are not checked against JSON Schema draft 7.

use std::collections::HashSet;

use super::MistralVersion;
use super::convert::{Msg, Role, Tool};
use super::invalid;
use crate::error::Result;

/// `^[a-zA-Z0-9_-]{1,64}$`: function and tool-message names.
fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `^[a-zA-Z0-9]{9}$`: tool call ids from v3 on.
fn valid_call_id(id: &str) -> bool {
    id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

pub(super) fn validate(messages: &[Msg], tools: &[Tool], v: MistralVersion) -> Result<()> {
    structure(messages, v)?;
    for (i, m) in messages.iter().enumerate() {
        content(m, i + 1 == messages.len(), v)?;
    }
    for t in tools {
        if !valid_name(&t.name) {
            return Err(invalid(format!(
                "function name was {} but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64",
                t.name
            )));
        }
    }
    Ok(())
}

fn structure(messages: &[Msg], v: MistralVersion) -> Result<()> {
    let Some(last) = messages.last() else {
        return Err(invalid("conversation must have at least one message"));
    };
    if messages.len() == 1 && !matches!(last.role, Role::User | Role::System) {
        return Err(invalid(
            "conversation must start with a user message or system message",
        ));
    }
    if messages.len() > 1 && last.role == Role::Assistant && !last.prefix {
        return Err(invalid(
            "expected last role User or Tool (or Assistant with prefix)",
        ));
    }
    for pair in messages.windows(2) {
        let (prev, cur) = (pair[0].role, pair[1].role);
        let ok = match prev {
            Role::System | Role::User => cur != Role::Tool,
            Role::Assistant | Role::Tool => cur != Role::System,
        };
        if !ok {
            return Err(invalid(format!(
                "unexpected role '{}' after role '{}'",
                cur.name(),
                prev.name()
            )));
        }
    }
    if v >= MistralVersion::V11 {
        calls_answered_by_id(messages)
    } else {
        calls_answered_by_count(messages)
    }
}

/// Up to v7: each assistant message comes after as many tool results as the
/// previous one made calls.
fn calls_answered_by_count(messages: &[Msg]) -> Result<()> {
    let mut expected: i64 = 0;
    for m in messages.iter().skip(1) {
        match m.role {
            Role::Tool => expected -= 1,
            Role::Assistant => {
                if expected != 0 {
                    return Err(invalid(
                        "not the same number of function calls and responses",
                    ));
                }
                expected = m.tool_calls.as_ref().map_or(0, |c| c.len() as i64);
            }
            _ => {}
        }
    }
    Ok(())
}

/// From v11: every tool result answers a call of the assistant message
/// before it, once.
fn calls_answered_by_id(messages: &[Msg]) -> Result<()> {
    let mut expected: HashSet<&str> = HashSet::new();
    let mut observed: HashSet<&str> = HashSet::new();
    for m in messages.iter().skip(1) {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or("None");
                if !observed.insert(id) {
                    return Err(invalid(format!(
                        "duplicate tool call id {id} in tool results"
                    )));
                }
                if !expected.contains(id) {
                    return Err(invalid(format!(
                        "unexpected tool call id {id} in tool results"
                    )));
                }
            }
            Role::Assistant => {
                if expected.len() != observed.len() {
                    return Err(invalid(
                        "not the same number of function calls and responses",
                    ));
                }
                expected.clear();
                observed.clear();
                for c in m.tool_calls.iter().flatten() {
                    if !expected.insert(c.id.as_str()) {
                        return Err(invalid(format!(
                            "duplicate tool call id {} in assistant message",
                            c.id
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn content(m: &Msg, is_last: bool, v: MistralVersion) -> Result<()> {
    match m.role {
        Role::User => Ok(()),
        Role::System => match m.content {
            None => Err(invalid("system prompt must have content")),
            Some(_) => Ok(()),
        },
        Role::Tool => {
            if let Some(name) = &m.name
                && !valid_name(name)
            {
                return Err(invalid(format!(
                    "function name was {name} but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64"
                )));
            }
            tool_message_id(m, v)
        }
        Role::Assistant => {
            let has_content = m.content.as_ref().is_some_and(|c| c.truthy());
            let has_calls = m.tool_calls.as_ref().is_some_and(|c| !c.is_empty());
            // From v7 (validator V5) content and calls may come together.
            if v < MistralVersion::V7 && has_content == has_calls {
                return Err(invalid(
                    "assistant message must have either content or tool_calls, but not both",
                ));
            }
            for c in m.tool_calls.iter().flatten() {
                call_id(&c.id, v)?;
                if !valid_name(&c.name) {
                    return Err(invalid(format!(
                        "function name was {} but must be a-z, A-Z, 0-9, or contain underscores and dashes, with a maximum length of 64",
                        c.name
                    )));
                }
            }
            if m.prefix && !is_last {
                return Err(invalid(
                    "assistant message with prefix True must be last message",
                ));
            }
            Ok(())
        }
    }
}

fn tool_message_id(m: &Msg, v: MistralVersion) -> Result<()> {
    if v < MistralVersion::V3 {
        return Ok(());
    }
    let id = m.tool_call_id.as_deref();
    if v >= MistralVersion::V13 {
        return match id {
            Some(id) if !id.is_empty() && id != "null" => Ok(()),
            _ => Err(invalid(
                "tool call id must be a non-empty string other than 'null' for tokenizer version 13 or newer",
            )),
        };
    }
    match id {
        None => Err(invalid("tool call id has to be defined")),
        Some(id) if !valid_call_id(id) => Err(invalid(format!(
            "tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9"
        ))),
        Some(_) => Ok(()),
    }
}

fn call_id(id: &str, v: MistralVersion) -> Result<()> {
    if v < MistralVersion::V3 {
        return Ok(());
    }
    if v >= MistralVersion::V13 {
        return if id.is_empty() || id == "null" {
            Err(invalid(
                "tool call id must be a non-empty string other than 'null' for tokenizer version 13 or newer",
            ))
        } else {
            Ok(())
        };
    }
    if id == "null" {
        return Err(invalid(
            "tool call id 'null' is only allowed for the last assistant message in finetuning mode",
        ));
    }
    if !valid_call_id(id) {
        return Err(invalid(format!(
            "tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9"
        )));
    }
    Ok(())
}
