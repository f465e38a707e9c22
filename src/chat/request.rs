//! The chat request: OpenAI-style messages, tools, documents and template options.
//!
//! Everything deserializes from the JSON an OpenAI-compatible endpoint receives. Fields the
//! types do not name are kept (`extra`) and reach the template, as transformers passes every
//! key of a message dict through.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value as Json};

use super::error::ChatTemplateError;

/// One message of a conversation.
///
/// Absent and `null` fields are left out of what the template sees, as transformers drops
/// `None`-valued keys before rendering. A message deserialized from JSON shows the template its
/// keys in the order they arrived (`message|tojson`); one built in Rust shows `role`, `content`,
/// `name`, `tool_calls`, `tool_call_id`, `reasoning_content`, then `extra` in its own order.
///
/// Deserializing accepts what transformers accepts: a field whose value does not fit its typed
/// slot (a tool call without a `function` wrapper, object or number content, content parts
/// without `type`, a non-string `name`) is kept unchanged in `extra` and reaches the template
/// as given; the template decides.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Map<String, Json>")]
pub struct Message {
    /// `system`, `user`, `assistant`, `tool`, `developer`, `ipython`, ... (passed through as is).
    pub role: String,
    /// The message text, or a list of OpenAI content parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<MessageContent>,
    /// The participant's name (OpenAI `name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The assistant's reasoning. Like transformers, rendering also exposes it as `thinking`
    /// (which gpt-oss reads); `thinking` or `reasoning` given in `extra` are aliased the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Any other fields, passed to the template unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Json>,
    /// The order the keys arrived in (empty when built in Rust).
    #[serde(skip)]
    pub(crate) key_order: KeyOrder,
}

/// The order of a JSON object's keys as received. It does not take part in equality.
#[derive(Clone, Debug, Default)]
pub(crate) struct KeyOrder(pub(crate) Vec<String>);

impl PartialEq for KeyOrder {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl KeyOrder {
    fn of(map: &Map<String, Json>) -> Self {
        KeyOrder(map.keys().cloned().collect())
    }

    /// Sorts `fields` into the received order (stable; keys not received go last).
    pub(crate) fn apply<T>(&self, fields: &mut [(&str, T)]) {
        if self.0.is_empty() {
            return;
        }
        fields.sort_by_key(|(k, _)| self.0.iter().position(|o| o == k).unwrap_or(usize::MAX));
    }
}

/// How an error names a JSON value's type (`a list`, `null`).
pub(super) fn json_kind(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// Takes `key` out of `map` if it is a string; puts any other non-null value back (into `extra`).
fn take_string(map: &mut Map<String, Json>, key: &str) -> Option<String> {
    match map.remove(key) {
        Some(Json::String(s)) => Some(s),
        Some(Json::Null) | None => None,
        Some(other) => {
            map.insert(key.to_owned(), other);
            None
        }
    }
}

impl TryFrom<Map<String, Json>> for Message {
    type Error = String;

    fn try_from(mut map: Map<String, Json>) -> Result<Self, String> {
        let key_order = KeyOrder::of(&map);
        let role = match map.remove("role") {
            Some(Json::String(role)) => role,
            Some(other) => {
                return Err(format!(
                    "field `role`: expected a string, got {}",
                    json_kind(&other)
                ));
            }
            None => return Err("missing field `role`".to_owned()),
        };
        let content = match map.remove("content") {
            Some(Json::String(text)) => Some(MessageContent::Text(text)),
            Some(Json::Array(items)) => {
                let parts: Option<Vec<ContentPart>> = items
                    .iter()
                    .map(|item| serde_json::from_value(item.clone()).ok())
                    .collect();
                match parts {
                    Some(parts) => Some(MessageContent::Parts(parts)),
                    None => {
                        map.insert("content".to_owned(), Json::Array(items));
                        None
                    }
                }
            }
            Some(Json::Null) | None => None,
            Some(other) => {
                map.insert("content".to_owned(), other);
                None
            }
        };
        let tool_calls = match map.remove("tool_calls") {
            Some(Json::Null) | None => None,
            Some(calls) => match serde_json::from_value::<Vec<ToolCall>>(calls.clone()) {
                Ok(calls) => Some(calls),
                Err(_) => {
                    map.insert("tool_calls".to_owned(), calls);
                    None
                }
            },
        };
        let name = take_string(&mut map, "name");
        let tool_call_id = take_string(&mut map, "tool_call_id");
        let reasoning_content = take_string(&mut map, "reasoning_content");
        Ok(Message {
            role,
            content,
            name,
            tool_calls,
            tool_call_id,
            reasoning_content,
            extra: map,
            key_order,
        })
    }
}

impl Message {
    /// Messages from JSON values; an error names the message's index and what is wrong with it.
    pub fn list_from_json(list: Vec<Json>) -> Result<Vec<Message>, ChatTemplateError> {
        list.into_iter()
            .enumerate()
            .map(|(i, value)| match value {
                Json::Object(map) => Message::try_from(map)
                    .map_err(|e| ChatTemplateError::request(format!("message {i}: {e}"))),
                other => Err(ChatTemplateError::request(format!(
                    "message {i}: expected an object, got {}",
                    json_kind(&other)
                ))),
            })
            .collect()
    }

    /// A message with a role and text content.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            role: role.into(),
            content: Some(MessageContent::Text(content.into())),
            ..Message::default()
        }
    }
}

/// Message content: a string, or a list of content parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// OpenAI content parts (`{"type": "text", "text": ...}`, `{"type": "image_url", ...}`, ...).
    Parts(Vec<ContentPart>),
}

impl MessageContent {
    /// The text parts joined with `separator`, or the text itself: what a router sends to a
    /// template whose [`ContentFormat`](super::ContentFormat) is `String`.
    pub fn flatten_text(&self, separator: &str) -> String {
        match self {
            MessageContent::Text(t) => t.clone(),
            MessageContent::Parts(parts) => parts
                .iter()
                .filter_map(|p| p.text.as_deref())
                .collect::<Vec<_>>()
                .join(separator),
        }
    }
}

/// One OpenAI content part.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Map<String, Json>")]
pub struct ContentPart {
    /// The part's `type`: `text`, `image_url`, `image`, `input_audio`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The text of a `text` part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The part's other fields (`image_url`, `image`, ...), passed through.
    #[serde(flatten)]
    pub extra: Map<String, Json>,
    /// The order the keys arrived in.
    #[serde(skip)]
    pub(crate) key_order: KeyOrder,
}

impl TryFrom<Map<String, Json>> for ContentPart {
    type Error = String;

    fn try_from(mut map: Map<String, Json>) -> Result<Self, String> {
        let key_order = KeyOrder::of(&map);
        let Some(Json::String(kind)) = map.remove("type") else {
            return Err("content part: `type` must be a string".to_owned());
        };
        let text = match map.remove("text") {
            Some(Json::String(text)) => Some(text),
            None => None,
            Some(_) => return Err("content part: `text` must be a string".to_owned()),
        };
        Ok(ContentPart {
            kind,
            text,
            extra: map,
            key_order,
        })
    }
}

impl ContentPart {
    /// A `{"type": "text", "text": ...}` part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart {
            kind: "text".to_owned(),
            text: Some(text.into()),
            extra: Map::new(),
            key_order: KeyOrder::default(),
        }
    }
}

/// A tool call in an assistant message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Map<String, Json>")]
pub struct ToolCall {
    /// The call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The call type (`function`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The called function.
    pub function: FunctionCall,
    /// Other fields, passed through.
    #[serde(flatten)]
    pub extra: Map<String, Json>,
    /// The order the keys arrived in.
    #[serde(skip)]
    pub(crate) key_order: KeyOrder,
}

impl TryFrom<Map<String, Json>> for ToolCall {
    type Error = String;

    fn try_from(mut map: Map<String, Json>) -> Result<Self, String> {
        let key_order = KeyOrder::of(&map);
        let mut optional = |key: &str| match map.remove(key) {
            Some(Json::String(s)) => Ok(Some(s)),
            None => Ok(None),
            Some(_) => Err(format!("tool call: `{key}` must be a string")),
        };
        let id = optional("id")?;
        let kind = optional("type")?;
        let function = match map.remove("function") {
            Some(Json::Object(f)) => FunctionCall::try_from(f)?,
            _ => return Err("tool call: `function` must be an object".to_owned()),
        };
        Ok(ToolCall {
            id,
            kind,
            function,
            extra: map,
            key_order,
        })
    }
}

/// The function of a tool call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Map<String, Json>")]
pub struct FunctionCall {
    /// The function name.
    pub name: String,
    /// The arguments, as sent: OpenAI sends a JSON-encoded string; many templates expect an
    /// object (a dict in transformers). The value is passed to the template unchanged.
    #[serde(default)]
    pub arguments: Json,
    /// Other fields, passed through.
    #[serde(flatten)]
    pub extra: Map<String, Json>,
    /// The order the keys arrived in.
    #[serde(skip)]
    pub(crate) key_order: KeyOrder,
}

impl TryFrom<Map<String, Json>> for FunctionCall {
    type Error = String;

    fn try_from(mut map: Map<String, Json>) -> Result<Self, String> {
        let key_order = KeyOrder::of(&map);
        let Some(Json::String(name)) = map.remove("name") else {
            return Err("tool call function: `name` must be a string".to_owned());
        };
        let Some(arguments) = map.remove("arguments") else {
            return Err("tool call function: missing `arguments`".to_owned());
        };
        Ok(FunctionCall {
            name,
            arguments,
            extra: map,
            key_order,
        })
    }
}

/// transformers' `continue_final_message`: leave the final message open so that the model
/// continues it ("prefill").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ContinueFinalMessage {
    /// Render normally (`false`).
    #[default]
    Off,
    /// Continue the final message's `content` (`true`).
    Content,
    /// Continue the named field of the final message, e.g. `reasoning_content`.
    Field(String),
}

impl ContinueFinalMessage {
    /// Whether continuation is requested.
    pub fn is_on(&self) -> bool {
        !matches!(self, ContinueFinalMessage::Off)
    }

    /// The continued field's name, if continuation is requested.
    pub(crate) fn field(&self) -> Option<&str> {
        match self {
            ContinueFinalMessage::Off => None,
            ContinueFinalMessage::Content => Some("content"),
            ContinueFinalMessage::Field(f) => Some(f),
        }
    }
}

impl<'de> Deserialize<'de> for ContinueFinalMessage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flag(bool),
            Field(String),
        }
        Ok(match Option::<Raw>::deserialize(d)? {
            None | Some(Raw::Flag(false)) => ContinueFinalMessage::Off,
            Some(Raw::Flag(true)) => ContinueFinalMessage::Content,
            Some(Raw::Field(f)) => ContinueFinalMessage::Field(f),
        })
    }
}

/// A wall-clock time to pin `strftime_now` to, for reproducible renders (tests, caches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedNow(jiff::civil::DateTime);

impl FixedNow {
    /// The given local date and time.
    pub fn new(
        year: i16,
        month: i8,
        day: i8,
        hour: i8,
        minute: i8,
        second: i8,
    ) -> Result<Self, ChatTemplateError> {
        jiff::civil::DateTime::new(year, month, day, hour, minute, second, 0)
            .map(FixedNow)
            .map_err(|e| ChatTemplateError::request(format!("invalid fixed time: {e}")))
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS` (local time, as Python's naive `datetime`), or an RFC 3339
    /// timestamp (`2024-09-03T12:34:56Z`, `...+02:00`), whose wall clock as written is used.
    pub fn parse(text: &str) -> Result<Self, ChatTemplateError> {
        let invalid = |e: &dyn std::fmt::Display| {
            ChatTemplateError::request(format!("invalid time {text:?}: {e}"))
        };
        if let Ok(civil) = text.parse::<jiff::civil::DateTime>()
            && !text.ends_with(['Z', 'z'])
        {
            return Ok(FixedNow(civil));
        }
        let timestamp: jiff::Timestamp = text.parse().map_err(|e| invalid(&e))?;
        let offset = text
            .rfind(['+', '-', 'Z', 'z'])
            .filter(|&i| i > 10)
            .ok_or_else(|| invalid(&"no UTC offset"))?;
        let _ = timestamp;
        text[..offset]
            .parse::<jiff::civil::DateTime>()
            .map(FixedNow)
            .map_err(|e| invalid(&e))
    }

    pub(crate) fn to_iso(self) -> String {
        self.0.to_string()
    }

    /// `YYYY-MM-DD`: Harmony's conversation-start date.
    pub(crate) fn date_iso(self) -> String {
        self.0.date().to_string()
    }
}

/// What to render: the conversation and the options of `apply_chat_template`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ChatRequest {
    /// The conversation (at least one message).
    pub messages: Vec<Message>,
    /// Tool definitions (JSON schemas, usually `{"type": "function", "function": {...}}`),
    /// passed to the template as `tools`.
    #[serde(default)]
    pub tools: Option<Vec<Json>>,
    /// Retrieval documents (objects, usually with `title` and `text`), passed as `documents`.
    #[serde(default)]
    pub documents: Option<Vec<Json>>,
    /// Append the header that starts an assistant turn.
    #[serde(default)]
    pub add_generation_prompt: bool,
    /// Leave the final message open (cannot be combined with `add_generation_prompt`).
    #[serde(default)]
    pub continue_final_message: ContinueFinalMessage,
    /// Which of a tokenizer's named templates to use (`rag`, `tool_use`, ...). Without it,
    /// transformers' rule applies: `tool_use` when tools are given and it exists, else `default`.
    #[serde(default, alias = "template")]
    pub chat_template_name: Option<String>,
    /// Extra template variables (`enable_thinking`, `reasoning_effort`, `date_string`, ...),
    /// merged over the special tokens as transformers merges `**kwargs`.
    #[serde(default)]
    pub chat_template_kwargs: Map<String, Json>,
    /// Pins what `strftime_now` returns for this render; `None` uses the current local time.
    #[serde(skip)]
    pub fixed_now: Option<FixedNow>,
    /// Whether the render shapes content first as vLLM does (`null` content, parts, tool-call
    /// arguments); off by default, as transformers renders messages as given.
    /// [`ChatRequest::from_openai`] turns it on.
    #[serde(default)]
    pub content_shaping: super::ContentShaping,
}

impl ChatRequest {
    /// A request for `messages` with default options.
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }
}
