//! An OpenAI-style [`ChatRequest`] as mistral_common's `ChatCompletionRequest`
//! sees it once vLLM's `make_mistral_chat_completion_request` has built it: a
//! final assistant message is continued (`prefix`), `reasoning_content` is
//! dropped, a tool without `description`/`parameters` gets `""`/`{}`.

use serde_json::{Map, Value as Json};

use super::invalid;
use crate::chat::{ChatRequest, Message, MessageContent};
use crate::error::Result;

/// A message role mistral_common knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub(super) fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// Content: a string, or text chunks (mistral_common keeps the difference
/// until it aggregates; `bool(content)` is what validation asks).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Content {
    Text(String),
    Chunks(Vec<String>),
}

impl Content {
    /// Python's `bool(content)`.
    pub(super) fn truthy(&self) -> bool {
        match self {
            Content::Text(t) => !t.is_empty(),
            Content::Chunks(c) => !c.is_empty(),
        }
    }
}

/// A tool call; `id` is `"null"` when absent, as mistral_common defaults it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: String,
    /// The JSON-encoded arguments (an object given is dumped, as pydantic does).
    pub(super) arguments: String,
}

/// One message, typed as mistral_common's `UATS` union.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Msg {
    pub(super) role: Role,
    pub(super) content: Option<Content>,
    pub(super) tool_calls: Option<Vec<Call>>,
    pub(super) tool_call_id: Option<String>,
    pub(super) name: Option<String>,
    pub(super) prefix: bool,
}

/// A function tool: `Tool.model_dump(exclude strict)` writes these three.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Tool {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) parameters: Json,
}

impl Tool {
    /// `{"type": "function", "function": {...}}` in mistral_common's field order.
    pub(super) fn dump(&self) -> Json {
        let mut function = Map::new();
        function.insert("name".into(), Json::String(self.name.clone()));
        function.insert("description".into(), Json::String(self.description.clone()));
        function.insert("parameters".into(), self.parameters.clone());
        let mut tool = Map::new();
        tool.insert("type".into(), Json::String("function".into()));
        tool.insert("function".into(), Json::Object(function));
        Json::Object(tool)
    }
}

/// The request's messages and tools, or the error pydantic raises.
pub(super) fn convert(request: &ChatRequest) -> Result<(Vec<Msg>, Vec<Tool>)> {
    let last = request.messages.len().saturating_sub(1);
    let mut messages = Vec::with_capacity(request.messages.len());
    for (i, m) in request.messages.iter().enumerate() {
        messages.push(message(i, m, i == last)?);
    }
    let mut tools = Vec::new();
    for (i, t) in request.tools.iter().flatten().enumerate() {
        tools.push(tool(i, t)?);
    }
    Ok((messages, tools))
}

fn message(i: usize, m: &Message, is_last: bool) -> Result<Msg> {
    let role = match m.role.as_str() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => return Err(invalid(format!("message {i}: unsupported role {other:?}"))),
    };
    let content = match &m.content {
        None => None,
        Some(MessageContent::Text(t)) => Some(Content::Text(t.clone())),
        Some(MessageContent::Parts(parts)) => {
            let mut chunks = Vec::with_capacity(parts.len());
            for p in parts {
                match (p.kind.as_str(), &p.text) {
                    ("text", Some(t)) => chunks.push(t.clone()),
                    (kind, _) => {
                        return Err(invalid(format!(
                            "message {i}: unexpected content chunk type {kind:?} in {} message",
                            role.name()
                        )));
                    }
                }
            }
            Some(match role {
                // vLLM joins an assistant's parts into one string.
                Role::Assistant => Content::Text(chunks.join("\n")),
                _ => Content::Chunks(chunks),
            })
        }
    };
    if content.is_none() && matches!(role, Role::User | Role::Tool) {
        return Err(invalid(format!(
            "message {i}: a {} message needs content",
            role.name()
        )));
    }
    let tool_calls = match (&m.tool_calls, role) {
        (Some(calls), Role::Assistant) => {
            let mut out = Vec::with_capacity(calls.len());
            for c in calls {
                let arguments = match &c.function.arguments {
                    Json::String(s) => s.clone(),
                    Json::Null => String::new(),
                    // pydantic dumps a dict with Python's defaults; the
                    // normalizer loads and dumps it again, so only the value counts.
                    other => super::pyjson::dumps(other),
                };
                out.push(Call {
                    id: c.id.clone().unwrap_or_else(|| "null".to_owned()),
                    name: c.function.name.clone(),
                    arguments,
                });
            }
            Some(out)
        }
        _ => None,
    };
    let prefix = role == Role::Assistant
        && (is_last || matches!(m.extra.get("prefix"), Some(Json::Bool(true))));
    Ok(Msg {
        role,
        content,
        tool_calls,
        tool_call_id: m.tool_call_id.clone().filter(|_| role == Role::Tool),
        name: m.name.clone().filter(|_| role == Role::Tool),
        prefix,
    })
}

fn tool(i: usize, t: &Json) -> Result<Tool> {
    let bad = |why: &str| invalid(format!("tool {i}: {why}"));
    let Some(obj) = t.as_object() else {
        return Err(bad("not an object"));
    };
    match obj.get("type") {
        None => {}
        Some(Json::String(s)) if s == "function" => {}
        Some(_) => return Err(bad("`type` must be \"function\"")),
    }
    let Some(Json::Object(f)) = obj.get("function") else {
        return Err(bad("`function` must be an object"));
    };
    let Some(Json::String(name)) = f.get("name") else {
        return Err(bad("`function.name` must be a string"));
    };
    let description = match f.get("description") {
        None | Some(Json::Null) => String::new(),
        Some(Json::String(s)) => s.clone(),
        Some(_) => return Err(bad("`function.description` must be a string")),
    };
    let parameters = match f.get("parameters") {
        None | Some(Json::Null) => Json::Object(Map::new()),
        Some(p @ Json::Object(_)) => p.clone(),
        Some(_) => return Err(bad("`function.parameters` must be an object")),
    };
    Ok(Tool {
        name: name.clone(),
        description,
        parameters,
    })
}
