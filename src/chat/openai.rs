//! OpenAI chat-completions bodies: [`ChatRequest::from_openai`] and the content shaping vLLM
//! applies before rendering ([`ContentShaping`]), so a router renders what vLLM would.
//!
//! transformers renders messages as given; vLLM first rewrites them
//! (`chat_utils.parse_chat_messages`): `content: null` becomes `""` (string templates) or `[]`
//! (templates that iterate parts), content parts become one string joined with `"\n"` or the
//! template's own part types (`{"type": "image"}`), and tool-call arguments sent as JSON text
//! become objects. A request built by [`ChatRequest::from_openai`] asks for that rewrite.

use super::request::json_kind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::content_format::ContentFormat;
use super::error::ChatTemplateError;
use super::request::{
    ChatRequest, ContentPart, ContinueFinalMessage, KeyOrder, Message, MessageContent,
};

/// How the render shapes message content before the template sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentShaping {
    /// Messages reach the template as given, as transformers renders them (the default).
    #[default]
    AsGiven,
    /// vLLM's `--chat-template-content-format auto`: the template's detected
    /// [`ContentFormat`] decides (what [`ChatRequest::from_openai`] sets).
    Auto,
    /// vLLM's `string`: content is always text.
    String,
    /// vLLM's `openai`: content is always a list of parts.
    #[serde(rename = "openai")]
    OpenAi,
}

impl ContentShaping {
    /// The format to shape for under a template that detects as `detected`; `None` for
    /// [`AsGiven`](Self::AsGiven).
    pub(crate) fn format(self, detected: ContentFormat) -> Option<ContentFormat> {
        match self {
            ContentShaping::AsGiven => None,
            ContentShaping::Auto => Some(detected),
            ContentShaping::String => Some(ContentFormat::String),
            ContentShaping::OpenAi => Some(ContentFormat::OpenAi),
        }
    }
}

/// The order vLLM builds a conversation message's keys in (`ConversationMessage`).
const VLLM_KEY_ORDER: [&str; 8] = [
    "role",
    "content",
    "tool_calls",
    "reasoning",
    "reasoning_content",
    "tool_call_id",
    "name",
    "task",
];

/// The template's own part type for an OpenAI media part, as vLLM maps them.
fn modality(kind: &str) -> Option<&'static str> {
    match kind {
        "image_url" | "input_image" | "image_pil" | "image_embeds" | "image" => Some("image"),
        "audio_url" | "input_audio" | "audio_embeds" | "audio" => Some("audio"),
        "video_url" | "video" => Some("video"),
        _ => None,
    }
}

/// The text a text-like part carries (`text`, `input_text`, `output_text`, `refusal`,
/// `thinking`); `None` for other parts and for text parts without text (vLLM skips those).
fn part_text(part: &ContentPart) -> Option<&str> {
    let field = match part.kind.as_str() {
        "text" | "input_text" | "output_text" => return part.text.as_deref(),
        "refusal" => "refusal",
        "thinking" => "thinking",
        _ => return None,
    };
    part.extra.get(field).and_then(Json::as_str)
}

fn text_part(text: &str) -> ContentPart {
    ContentPart::text(text)
}

/// One part shaped for a template that iterates parts: text-like parts become
/// `{"type": "text", "text": ...}`, media parts `{"type": "image" | "audio" | "video"}`;
/// other parts (types vLLM refuses, `tool_reference`) are passed on unchanged.
fn shape_part(part: &ContentPart) -> Option<ContentPart> {
    if let Some(text) = part_text(part) {
        return Some(text_part(text));
    }
    if matches!(part.kind.as_str(), "text" | "refusal") {
        return None;
    }
    match modality(&part.kind) {
        Some(kind) => Some(ContentPart {
            kind: kind.to_owned(),
            text: None,
            extra: Map::new(),
            key_order: KeyOrder::default(),
        }),
        None => Some(part.clone()),
    }
}

/// vLLM's shaping of one message's content for `format`.
fn shape_content(
    role: &str,
    content: Option<&MessageContent>,
    format: ContentFormat,
) -> MessageContent {
    let parts: Vec<ContentPart> = match content {
        None => Vec::new(),
        Some(MessageContent::Text(t)) => match format {
            ContentFormat::String => return MessageContent::Text(t.clone()),
            ContentFormat::OpenAi => vec![text_part(t)],
        },
        Some(MessageContent::Parts(parts)) => parts.clone(),
    };
    match format {
        // Media parts have no text; vLLM adds the model's placeholder token here, which needs
        // its multimodal processor, so they are left out.
        ContentFormat::String => MessageContent::Text(
            parts
                .iter()
                .filter_map(part_text)
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        ContentFormat::OpenAi => {
            let shaped: Vec<ContentPart> = parts.iter().filter_map(shape_part).collect();
            // Tool results are sent as text parts by many clients; most templates print a tool
            // message's content as a string, so vLLM joins all-text results.
            if role == "tool" && shaped.iter().all(|p| p.kind == "text") {
                let texts: Vec<&str> = shaped.iter().filter_map(|p| p.text.as_deref()).collect();
                return MessageContent::Text(texts.join("\n"));
            }
            MessageContent::Parts(shaped)
        }
    }
}

/// vLLM's `parse_chat_messages` for a template that takes `format`: content shaped, empty
/// `tool_calls` dropped, tool-call arguments given as JSON text parsed (`{}` when they are not
/// JSON). Other fields are kept (vLLM drops fields it does not know; a template that reads
/// them would otherwise fail).
pub(crate) fn shape_messages(messages: &[Message], format: ContentFormat) -> Vec<Message> {
    messages
        .iter()
        .map(|m| {
            let mut out = m.clone();
            out.content = Some(shape_content(&m.role, m.content.as_ref(), format));
            if m.role == "assistant"
                && let Some(calls) = &mut out.tool_calls
            {
                if calls.is_empty() {
                    out.tool_calls = None;
                } else {
                    for call in calls.iter_mut() {
                        let args = &mut call.function.arguments;
                        match args {
                            Json::String(text) => {
                                *args = serde_json::from_str(text)
                                    .unwrap_or_else(|_| Json::Object(Map::new()));
                            }
                            Json::Object(_) | Json::Array(_) => {}
                            _ => *args = Json::Object(Map::new()),
                        }
                    }
                }
            }
            let mut order: Vec<String> = VLLM_KEY_ORDER.iter().map(|k| (*k).to_owned()).collect();
            order.extend(
                m.extra
                    .keys()
                    .filter(|k| !order.contains(k))
                    .cloned()
                    .collect::<Vec<_>>(),
            );
            out.key_order = KeyOrder(order);
            out
        })
        .collect()
}

fn bad(detail: impl Into<String>) -> ChatTemplateError {
    ChatTemplateError::request(detail)
}

/// A list of objects under `key`, or `None` when absent or null.
fn object_list(
    body: &Map<String, Json>,
    key: &str,
) -> Result<Option<Vec<Json>>, ChatTemplateError> {
    match body.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Array(items)) => {
            if let Some((i, item)) = items.iter().enumerate().find(|(_, v)| !v.is_object()) {
                return Err(bad(format!(
                    "`{key}` item {i}: expected an object, got {}",
                    json_kind(item)
                )));
            }
            Ok(Some(items.clone()))
        }
        Some(other) => Err(bad(format!(
            "`{key}`: expected a list, got {}",
            json_kind(other)
        ))),
    }
}

fn flag(body: &Map<String, Json>, key: &str) -> Result<Option<bool>, ChatTemplateError> {
    match body.get(key) {
        None | Some(Json::Null) => Ok(None),
        Some(Json::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(bad(format!(
            "`{key}`: expected a boolean, got {}",
            json_kind(other)
        ))),
    }
}

/// vLLM's `check_tool_usage`: a `tool_choice` other than `"none"` needs `tools`, and a named
/// choice must name one of them.
fn check_tool_choice(choice: &Json, tools: Option<&[Json]>) -> Result<(), ChatTemplateError> {
    if choice.is_null() || choice.as_str() == Some("none") {
        return Ok(());
    }
    let Some(tools) = tools else {
        return Err(bad("When using `tool_choice`, `tools` must be set."));
    };
    match choice {
        Json::String(s) if s == "auto" || s == "required" => Ok(()),
        Json::Object(named) => {
            let name = named
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Json::as_str)
                .ok_or_else(|| {
                    bad("`tool_choice` must name a function: {\"type\": \"function\", \"function\": {\"name\": ...}}")
                })?;
            let known = tools.iter().any(|t| {
                t.get("function")
                    .and_then(|f| f.get("name"))
                    .and_then(Json::as_str)
                    == Some(name)
            });
            if known {
                Ok(())
            } else {
                Err(bad(format!(
                    "The tool specified in `tool_choice` ({name}) does not match any of the specified `tools`"
                )))
            }
        }
        other => Err(bad(format!(
            "`tool_choice` must be \"none\", \"auto\", \"required\" or a named function, got {other}"
        ))),
    }
}

impl ChatRequest {
    /// Reads a whole OpenAI chat-completions body (`{"model", "messages", "tools", ...}`) with
    /// OpenAI's and vLLM's defaults: the generation prompt is on unless
    /// `continue_final_message` (or `add_generation_prompt: false`), and content is shaped for
    /// the template as vLLM does ([`ContentShaping::Auto`]).
    ///
    /// Read besides `messages`: `tools`, `tool_choice` (checked as vLLM checks it; the tools
    /// reach the template whatever it says, as in vLLM by default), `documents`,
    /// `chat_template_kwargs`, `add_generation_prompt`, `continue_final_message`,
    /// `reasoning_effort` (a template variable unless `chat_template_kwargs` sets it) and
    /// `chat_template_name`. Sampling fields (`model`, `max_tokens`, ...) are ignored, as is
    /// `chat_template` (a template text in the request, which vLLM refuses by default).
    ///
    /// ```
    /// use router_tokenizer::chat::ChatRequest;
    /// let body = serde_json::json!({
    ///     "model": "gpt-4o",
    ///     "messages": [{"role": "user", "content": "Hi"}],
    /// });
    /// let request = ChatRequest::from_openai(&body)?;
    /// assert!(request.add_generation_prompt);
    /// # Ok::<(), router_tokenizer::chat::ChatTemplateError>(())
    /// ```
    ///
    /// # Errors
    /// [`ChatTemplateError::InvalidRequest`] naming what is malformed.
    pub fn from_openai(body: &Json) -> Result<Self, ChatTemplateError> {
        let Json::Object(body) = body else {
            return Err(bad(format!(
                "an OpenAI chat body must be an object, got {}",
                json_kind(body)
            )));
        };
        let messages = match body.get("messages") {
            Some(Json::Array(list)) => Message::list_from_json(list.clone())?,
            Some(other) => {
                return Err(bad(format!(
                    "`messages`: expected a list, got {}",
                    json_kind(other)
                )));
            }
            None => return Err(bad("missing field `messages`")),
        };
        let mut request = ChatRequest::new(messages);
        request.content_shaping = ContentShaping::Auto;
        request.tools = object_list(body, "tools")?;
        request.documents = object_list(body, "documents")?;
        if let Some(choice) = body.get("tool_choice") {
            check_tool_choice(choice, request.tools.as_deref())?;
        }
        let mut kwargs = match body.get("chat_template_kwargs") {
            None | Some(Json::Null) => Map::new(),
            Some(Json::Object(k)) => k.clone(),
            Some(other) => {
                return Err(bad(format!(
                    "`chat_template_kwargs`: expected an object, got {}",
                    json_kind(other)
                )));
            }
        };
        // vLLM merges the body's own flags over `chat_template_kwargs`; the flags the
        // renderer owns are lifted out of the kwargs.
        let kw_generation = match kwargs.remove("add_generation_prompt") {
            Some(Json::Bool(b)) => Some(b),
            _ => None,
        };
        let kw_continue = kwargs.remove("continue_final_message");
        for key in ["messages", "tools", "documents"] {
            kwargs.remove(key);
        }
        let continue_value = match body.get("continue_final_message") {
            Some(v) if !v.is_null() => Some(v.clone()),
            _ => kw_continue,
        };
        request.continue_final_message = match continue_value {
            None => ContinueFinalMessage::Off,
            Some(v) => serde_json::from_value(v)
                .map_err(|e| bad(format!("`continue_final_message`: {e}")))?,
        };
        let generation = flag(body, "add_generation_prompt")?.or(kw_generation);
        if generation == Some(true) && request.continue_final_message.is_on() {
            return Err(bad(
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
            ));
        }
        request.add_generation_prompt =
            generation.unwrap_or(!request.continue_final_message.is_on());
        if let Some(effort) = body.get("reasoning_effort").filter(|v| !v.is_null()) {
            kwargs
                .entry("reasoning_effort")
                .or_insert_with(|| effort.clone());
        }
        request.chat_template_kwargs = kwargs;
        request.chat_template_name = match body.get("chat_template_name") {
            None | Some(Json::Null) => None,
            Some(Json::String(name)) => Some(name.clone()),
            Some(other) => {
                return Err(bad(format!(
                    "`chat_template_name`: expected a string, got {}",
                    json_kind(other)
                )));
            }
        };
        Ok(request)
    }
}
