//! What an OpenAI-compatible router answers without a model: token counts of chat requests
//! ([`Tokenizer::count_chat`]) and vLLM's `/tokenize` and `/detokenize` bodies
//! ([`Tokenizer::tokenize`], [`Tokenizer::detokenize`]), so that routers stop rebuilding them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use crate::chat::{
    ChatRequest, ChatTemplateError, ContentShaping, ContinueFinalMessage, Message, MessageContent,
};
use crate::error::Result;
use crate::request::{ChatSpecialTokens, EncodeChatOptions};
use crate::tokenizer::Tokenizer;

fn yes() -> bool {
    true
}

/// vLLM's `TokenizeCompletionRequest`: a prompt, with BOS/EOS added by default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenizeCompletionRequest {
    /// The model name (not used: the tokenizer is the caller's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The text to tokenize.
    pub prompt: String,
    /// Add BOS/EOS as `encode(_, true)` does (default `true`).
    #[serde(default = "yes")]
    pub add_special_tokens: bool,
    /// Also return each id's token string (default `false`).
    #[serde(default)]
    pub return_token_strs: Option<bool>,
}

/// vLLM's `TokenizeChatRequest`: messages rendered with the chat template, with the generation
/// prompt on and no BOS/EOS added on top by default (templates write their own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenizeChatRequest {
    /// The model name (not used: the tokenizer is the caller's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The conversation, as OpenAI messages.
    pub messages: Vec<Message>,
    /// Tool definitions passed to the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Json>>,
    /// Append the assistant header (default `true`).
    #[serde(default = "yes")]
    pub add_generation_prompt: bool,
    /// Leave the final message open (default `false`; not with `add_generation_prompt`).
    #[serde(default)]
    pub continue_final_message: bool,
    /// Add BOS/EOS on top of the template's (default `false`).
    #[serde(default)]
    pub add_special_tokens: bool,
    /// Extra template variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<Map<String, Json>>,
    /// A template text sent with the request: refused, as vLLM refuses it unless started with
    /// `--trust-request-chat-template`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<String>,
    /// Also return each id's token string (default `false`).
    #[serde(default)]
    pub return_token_strs: Option<bool>,
}

/// The body of vLLM's `/tokenize`: a completion (`prompt`) or a chat (`messages`) request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TokenizeRequest {
    /// `{"prompt": ...}`.
    Completion(TokenizeCompletionRequest),
    /// `{"messages": [...]}`.
    Chat(TokenizeChatRequest),
}

/// The answer of vLLM's `/tokenize`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizeResponse {
    /// `tokens.len()`.
    pub count: usize,
    /// The model's context length ([`Tokenizer::context_length`]); `null` where the tokenizer
    /// knows none (vLLM always knows its engine's).
    pub max_model_len: Option<usize>,
    /// The ids.
    pub tokens: Vec<u32>,
    /// Each id's token in the tokenizer's own spelling (`convert_ids_to_tokens`), when asked
    /// for; `null` otherwise.
    pub token_strs: Option<Vec<String>>,
}

/// The body of vLLM's `/detokenize`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetokenizeRequest {
    /// The model name (not used).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The ids to decode.
    pub tokens: Vec<u32>,
}

/// The answer of vLLM's `/detokenize`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetokenizeResponse {
    /// The decoded text, special tokens included.
    pub prompt: String,
}

impl TokenizeChatRequest {
    /// The chat request it renders: shaped as vLLM shapes content.
    fn chat_request(&self) -> std::result::Result<ChatRequest, ChatTemplateError> {
        if self.chat_template.is_some() {
            return Err(ChatTemplateError::InvalidRequest {
                detail: "a chat_template in the request is not accepted (vLLM refuses it unless started with --trust-request-chat-template)".to_owned(),
            });
        }
        if self.continue_final_message && self.add_generation_prompt {
            return Err(ChatTemplateError::InvalidRequest {
                detail:
                    "Cannot set both `continue_final_message` and `add_generation_prompt` to True."
                        .to_owned(),
            });
        }
        let mut request = ChatRequest::new(self.messages.clone());
        request.tools = self.tools.clone();
        request.add_generation_prompt = self.add_generation_prompt;
        request.continue_final_message = if self.continue_final_message {
            ContinueFinalMessage::Content
        } else {
            ContinueFinalMessage::Off
        };
        request.chat_template_kwargs = self.chat_template_kwargs.clone().unwrap_or_default();
        request.content_shaping = ContentShaping::Auto;
        Ok(request)
    }
}

/// The cookbook's per-function constants (`num_tokens_for_tools`): gpt-4o's for o200k-sized
/// vocabularies, gpt-4's / gpt-3.5's otherwise.
struct ToolCosts {
    func_init: isize,
    prop_init: isize,
    prop_key: isize,
    enum_init: isize,
    enum_item: isize,
    func_end: isize,
}

impl ToolCosts {
    fn for_vocab(vocab_size: usize) -> Self {
        ToolCosts {
            func_init: if vocab_size >= 199_998 { 7 } else { 10 },
            prop_init: 3,
            prop_key: 3,
            enum_init: -3,
            enum_item: 3,
            func_end: 12,
        }
    }
}

/// A string field of a JSON object, `""` when absent.
fn text_of<'a>(value: &'a Json, key: &str) -> &'a str {
    value.get(key).and_then(Json::as_str).unwrap_or("")
}

/// OpenAI's estimate for a request without a template (tiktoken cookbook).
fn estimate(tok: &Tokenizer, request: &ChatRequest) -> Result<usize> {
    let n = |text: &str| tok.count(text, false);
    // `num_tokens_from_messages`: 3 per message, every string field through the encoding,
    // 1 more for a name, 3 for the reply's priming.
    let mut total: usize = 3;
    for m in &request.messages {
        total += 3 + n(&m.role)?;
        match &m.content {
            Some(MessageContent::Text(t)) => total += n(t)?,
            Some(MessageContent::Parts(parts)) => {
                for text in parts.iter().filter_map(|p| p.text.as_deref()) {
                    total += n(text)?;
                }
            }
            None => {}
        }
        if let Some(name) = &m.name {
            total += n(name)? + 1;
        }
        for field in [&m.tool_call_id, &m.reasoning_content]
            .into_iter()
            .flatten()
        {
            total += n(field)?;
        }
        for value in m.extra.values() {
            if let Some(s) = value.as_str() {
                total += n(s)?;
            }
        }
        // Beyond the cookbook: a call's name and arguments text.
        for call in m.tool_calls.iter().flatten() {
            total += n(&call.function.name)?;
            total += match &call.function.arguments {
                Json::String(s) => n(s)?,
                other => n(&other.to_string())?,
            };
        }
    }
    let Some(tools) = request.tools.as_deref().filter(|t| !t.is_empty()) else {
        return Ok(total);
    };
    // The cookbook's function-calling estimate (`num_tokens_for_tools`).
    let costs = ToolCosts::for_vocab(tok.vocab_size());
    let mut tools_total: isize = 0;
    let count =
        |text: &str| -> Result<isize> { Ok(isize::try_from(n(text)?).unwrap_or(isize::MAX)) };
    for tool in tools {
        let function = tool.get("function").unwrap_or(tool);
        tools_total += costs.func_init;
        let desc = text_of(function, "description");
        let desc = desc.strip_suffix('.').unwrap_or(desc);
        tools_total += count(&format!("{}:{desc}", text_of(function, "name")))?;
        let properties = function
            .get("parameters")
            .and_then(|p| p.get("properties"))
            .and_then(Json::as_object);
        let Some(properties) = properties.filter(|p| !p.is_empty()) else {
            continue;
        };
        tools_total += costs.prop_init;
        for (key, property) in properties {
            tools_total += costs.prop_key;
            if let Some(items) = property.get("enum").and_then(Json::as_array) {
                tools_total += costs.enum_init;
                for item in items {
                    tools_total += costs.enum_item;
                    tools_total += match item.as_str() {
                        Some(s) => count(s)?,
                        None => count(&item.to_string())?,
                    };
                }
            }
            let p_desc = text_of(property, "description");
            let p_desc = p_desc.strip_suffix('.').unwrap_or(p_desc);
            tools_total += count(&format!("{key}:{}:{p_desc}", text_of(property, "type")))?;
        }
    }
    tools_total += costs.func_end;
    Ok(total + usize::try_from(tools_total).unwrap_or(0))
}

impl Tokenizer {
    /// The prompt tokens of a chat request: `usage.prompt_tokens`, budget checks, Anthropic-style
    /// `count_tokens`.
    ///
    /// With a chat template this is exact: the ids [`encode_chat`](Self::encode_chat) gives
    /// under its default options. Without one (OpenAI model names such as `gpt-4o`, tiktoken
    /// encodings, base models) it is **an estimate**, as OpenAI documents it in the tiktoken
    /// cookbook (`num_tokens_from_messages`): 3 tokens per message, each string field through
    /// the encoding (text parts of a content list one by one; images are not counted), 1 more
    /// per `name`, 3 for the reply's priming; tool calls add their name and arguments text;
    /// `tools` add the cookbook's function-calling estimate (`num_tokens_for_tools`, gpt-4o's
    /// constants for o200k vocabularies, gpt-4's otherwise).
    ///
    /// ```
    /// use router_tokenizer::chat::{ChatRequest, Message};
    /// let tok = router_tokenizer::create_tokenizer("gpt-4o")?;
    /// let request = ChatRequest::new(vec![Message::new("user", "Hello!")]);
    /// assert_eq!(tok.count_chat(&request)?, 3 + 1 + 2 + 3);
    /// # Ok::<(), router_tokenizer::Error>(())
    /// ```
    ///
    /// # Errors
    /// Template and encode errors of [`encode_chat`](Self::encode_chat); a template that
    /// cannot be loaded (other than there being none) is an error, not an estimate.
    pub fn count_chat(&self, request: &ChatRequest) -> Result<usize> {
        match self.chat_template_raw() {
            Ok(_) => Ok(self
                .encode_chat(request, &EncodeChatOptions::default())?
                .prompt_tokens),
            Err(ChatTemplateError::NoTemplate { .. }) => estimate(self, request),
            Err(e) => Err(e.into()),
        }
    }

    /// vLLM's `/tokenize`: the ids of a prompt or a chat request, with vLLM's defaults.
    ///
    /// A chat request's content is shaped as vLLM shapes it, and special-token text in it is
    /// parsed ([`ChatSpecialTokens::Parse`]), as vLLM encodes the rendered prompt; use
    /// [`encode_chat`](Self::encode_chat) to keep it text.
    ///
    /// # Errors
    /// Template and encode errors; a request carrying its own `chat_template`.
    pub fn tokenize(&self, request: &TokenizeRequest) -> Result<TokenizeResponse> {
        let (tokens, token_strs) = match request {
            TokenizeRequest::Completion(r) => (
                self.encode(&r.prompt, r.add_special_tokens)?.into_ids(),
                r.return_token_strs.unwrap_or(false),
            ),
            TokenizeRequest::Chat(r) => {
                let chat = r.chat_request()?;
                let options = EncodeChatOptions::default()
                    .with_special_tokens(ChatSpecialTokens::Parse)
                    .with_add_special_tokens(r.add_special_tokens);
                (
                    self.encode_chat(&chat, &options)?.ids,
                    r.return_token_strs.unwrap_or(false),
                )
            }
        };
        let token_strs = if token_strs {
            Some(
                tokens
                    .iter()
                    .map(|&id| match self.id_to_token(id) {
                        Some(t) => Ok(t),
                        None => self.token_text(id).map(|t| t.text),
                    })
                    .collect::<Result<Vec<String>>>()?,
            )
        } else {
            None
        };
        Ok(TokenizeResponse {
            count: tokens.len(),
            max_model_len: self.context_length(),
            tokens,
            token_strs,
        })
    }

    /// vLLM's `/detokenize`: the text of the ids, special tokens included.
    ///
    /// # Errors
    /// [`ErrorKind::UnknownTokenId`](crate::ErrorKind::UnknownTokenId) for ids outside the
    /// vocabulary.
    pub fn detokenize(&self, request: &DetokenizeRequest) -> Result<DetokenizeResponse> {
        Ok(DetokenizeResponse {
            prompt: self.decode(&request.tokens, false)?,
        })
    }
}
