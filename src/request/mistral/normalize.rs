//! mistral_common's `InstructRequestNormalizer` (and its V7, V13 forms):
//! runs of one role merged into one message, system prompts gathered (up
//! to v3) or kept in place (v7 on), arguments and (up to v3) tool results
//! re-serialized, tool results put in call order (v11 on).

use super::MistralVersion;
use super::convert::{Call, Content, Msg, Role};
use super::pyjson;

/// What `_aggregate_content_chunks` joins consecutive texts with.
const JOIN: &str = "\n\n";

/// A message after normalization: content is always a string here, since
/// only text chunks get this far.
#[derive(Debug, Clone)]
pub(super) struct NMsg {
    pub(super) role: Role,
    pub(super) content: String,
    pub(super) tool_calls: Vec<Call>,
    pub(super) tool_call_id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) prefix: bool,
}

impl NMsg {
    fn new(role: Role, content: String) -> Self {
        NMsg {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            prefix: false,
        }
    }
}

/// The `InstructRequest`: messages and, up to v3, the gathered system prompt.
pub(super) struct Instruct {
    pub(super) messages: Vec<NMsg>,
    pub(super) system_prompt: Option<String>,
}

/// The non-empty texts of `contents`, joined with `"\n\n"`.
fn aggregate<'a>(contents: impl IntoIterator<Item = Option<&'a Content>>) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in contents.into_iter().flatten() {
        match c {
            Content::Text(t) => parts.push(t),
            Content::Chunks(chunks) => parts.extend(chunks.iter().map(String::as_str)),
        }
    }
    parts.retain(|p| !p.is_empty());
    parts.join(JOIN)
}

/// `_normalize_json_content`: `"{}"` for nothing, JSON re-dumped, else as is.
pub(super) fn normalize_json(text: &str) -> String {
    if text.is_empty() {
        return "{}".to_owned();
    }
    match pyjson::loads(text) {
        Some(v) => pyjson::dumps(&v),
        None => text.to_owned(),
    }
}

pub(super) fn normalize(messages: &[Msg], v: MistralVersion) -> Instruct {
    let system_prompt = if v < MistralVersion::V7 {
        let prompts: Vec<String> = messages
            .iter()
            .filter(|m| m.role == Role::System && m.content.as_ref().is_some_and(Content::truthy))
            .map(|m| aggregate([m.content.as_ref()]))
            .collect();
        (!prompts.is_empty()).then(|| prompts.join(JOIN))
    } else {
        None
    };
    let mut out: Vec<NMsg> = Vec::new();
    let mut latest_call_ids: Vec<String> = Vec::new();
    let mut start = 0;
    while start < messages.len() {
        let role = messages[start].role;
        let end = messages[start..]
            .iter()
            .position(|m| m.role != role)
            .map_or(messages.len(), |n| start + n);
        let run = &messages[start..end];
        match role {
            Role::User => out.push(NMsg::new(
                Role::User,
                aggregate(run.iter().map(|m| m.content.as_ref())),
            )),
            Role::System => {
                if v >= MistralVersion::V7 {
                    for m in run {
                        out.push(NMsg::new(Role::System, aggregate([m.content.as_ref()])));
                    }
                }
            }
            Role::Assistant => {
                let mut m = NMsg::new(
                    Role::Assistant,
                    aggregate(run.iter().map(|m| m.content.as_ref())),
                );
                for msg in run {
                    for c in msg.tool_calls.iter().flatten() {
                        m.tool_calls.push(Call {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            arguments: normalize_json(&c.arguments),
                        });
                    }
                    m.prefix |= msg.prefix;
                }
                latest_call_ids.extend(m.tool_calls.iter().map(|c| c.id.clone()));
                out.push(m);
            }
            Role::Tool => {
                let mut results: Vec<NMsg> = run
                    .iter()
                    .map(|msg| {
                        let content = aggregate([msg.content.as_ref()]);
                        let mut m = NMsg::new(
                            Role::Tool,
                            if v < MistralVersion::V7 {
                                normalize_json(&content)
                            } else {
                                content
                            },
                        );
                        m.tool_call_id = msg.tool_call_id.clone();
                        m.name = msg.name.clone();
                        m
                    })
                    .collect();
                if v >= MistralVersion::V11 {
                    sort_results(&mut results, &latest_call_ids);
                }
                latest_call_ids.clear();
                out.extend(results);
            }
        }
        start = end;
    }
    let needs_user = match out.first() {
        None => true,
        Some(first) => v < MistralVersion::V7 && first.role != Role::User,
    };
    if needs_user {
        out.insert(0, NMsg::new(Role::User, String::new()));
    }
    Instruct {
        messages: out,
        system_prompt,
    }
}

/// `_inplace_sort_tool_messages`: by the position of the call they answer
/// (unknown ones last), then by the last position of their id among the results.
fn sort_results(results: &mut [NMsg], call_ids: &[String]) {
    let key = |m: &NMsg, all: &[Option<String>]| {
        let id = m.tool_call_id.as_deref().unwrap_or("null");
        let call = call_ids.iter().position(|c| c == id).unwrap_or(usize::MAX);
        let result = all
            .iter()
            .rposition(|r| r.as_deref() == m.tool_call_id.as_deref())
            .unwrap_or(0);
        (call, result)
    };
    let ids: Vec<Option<String>> = results.iter().map(|m| m.tool_call_id.clone()).collect();
    results.sort_by_key(|m| key(m, &ids));
}
