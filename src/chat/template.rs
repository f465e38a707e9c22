//! `ChatTemplate`: compiled once per tokenizer, rendered per request.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use minijinja::value::Value;
use minijinja::{Environment, ErrorKind};
use serde_json::Value as Json;

use super::budget;
use super::content_format::ContentFormat;
use super::env::{self, RenderLimits};
use super::error::{ChatTemplateError, Limit};
use super::functions::{NOW_KEY, RaisedException};
use super::pyfmt;
use super::request::{ChatRequest, ContentPart, Message, MessageContent, ToolCall};
use super::source::{DEFAULT_NAME, TemplateSource, TemplateSpecialTokens};
use super::value::{SmallMap, json_to_value};

/// The tag transformers appends to the continued field, then cuts the render at.
const CONTINUE_TAG: &str = "CONTINUE_FINAL_MESSAGE_TAG ";
/// The names a message's reasoning goes by; the first is what templates usually read.
const REASONING_FIELDS: [&str; 3] = ["reasoning_content", "thinking", "reasoning"];
/// Names the template call passes itself; `chat_template_kwargs` may not reuse them.
const RESERVED: [&str; 4] = ["messages", "tools", "documents", "add_generation_prompt"];

/// How many fuel budgets a template keeps environments for: `fuel_base × 2^k`, k < this.
const FUEL_TIERS: usize = 40;

/// One compiled template.
struct Compiled {
    /// The environment at `fuel_base`; the others are clones at higher budgets.
    env: Environment<'static>,
    /// Environments for `fuel_base × 2^k` (k ≥ 1), made on first use. minijinja reads fuel
    /// from the environment, and a clone per render would cost more than the lookup.
    tiers: [OnceLock<Environment<'static>>; FUEL_TIERS],
    name: String,
    source: String,
    format: ContentFormat,
}

impl Compiled {
    /// The environment whose fuel is the smallest `fuel_base × 2^k` covering `fuel`.
    fn env_for(&self, base: u64, fuel: u64) -> &Environment<'static> {
        let base = base.max(1);
        let mut tier = 0;
        let mut budget = base;
        while budget < fuel && tier + 1 < FUEL_TIERS {
            budget = budget.saturating_mul(2);
            tier += 1;
        }
        if tier == 0 {
            return &self.env;
        }
        self.tiers[tier].get_or_init(|| {
            let mut env = self.env.clone();
            env.set_fuel(Some(budget));
            env
        })
    }
}

struct Inner {
    /// Compile results by name; a broken template fails only when selected, as in Python.
    templates: Vec<(String, Result<Compiled, ChatTemplateError>)>,
    single: bool,
    /// Special tokens, already converted for the context.
    specials: Vec<(String, Value)>,
    limits: RenderLimits,
}

/// A tokenizer's chat template(s), compiled once; rendering is `&self` and thread-safe.
///
/// Cloning is cheap (an `Arc`).
#[derive(Clone)]
pub struct ChatTemplate {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field(
                "templates",
                &self
                    .inner
                    .templates
                    .iter()
                    .map(|(n, _)| n)
                    .collect::<Vec<_>>(),
            )
            .field("single", &self.inner.single)
            .field("limits", &self.inner.limits)
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles every template of `source` with the default limits.
    ///
    /// A template with a syntax error does not fail the whole set: the error is returned when
    /// that template is selected (transformers compiles lazily). A single template that does
    /// not compile is an error here.
    pub fn new(
        source: TemplateSource,
        specials: &TemplateSpecialTokens,
    ) -> Result<Self, ChatTemplateError> {
        Self::with_limits(source, specials, RenderLimits::default())
    }

    /// Like [`ChatTemplate::new`] with explicit safety limits.
    pub fn with_limits(
        source: TemplateSource,
        specials: &TemplateSpecialTokens,
        limits: RenderLimits,
    ) -> Result<Self, ChatTemplateError> {
        let (texts, single) = source.into_parts();
        let mut templates = Vec::with_capacity(texts.len());
        for (name, text) in texts {
            let compiled = compile(&name, text, limits);
            if single && let Err(e) = compiled {
                return Err(e);
            }
            templates.push((name, compiled));
        }
        let specials = specials
            .iter()
            .map(|(k, v)| (k.to_owned(), Value::from(v)))
            .collect();
        Ok(ChatTemplate {
            inner: Arc::new(Inner {
                templates,
                single,
                specials,
                limits,
            }),
        })
    }

    /// One template given as text, as `tokenizer.chat_template = ...` / `set_chat_template`.
    pub fn from_text(
        template: &str,
        specials: &TemplateSpecialTokens,
    ) -> Result<Self, ChatTemplateError> {
        Self::new(TemplateSource::from_text(template), specials)
    }

    /// The text of every template that compiled.
    pub(crate) fn sources(&self) -> impl Iterator<Item = &str> {
        self.inner
            .templates
            .iter()
            .filter_map(|(_, c)| c.as_ref().ok())
            .map(|c| c.source.as_str())
    }

    /// The template names (`default` for a single template).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.inner.templates.iter().map(|(n, _)| n.as_str())
    }

    /// The safety limits renders run under.
    pub fn limits(&self) -> RenderLimits {
        self.inner.limits
    }

    /// The template text the request would render with.
    pub fn source_for(&self, request: &ChatRequest) -> Result<&str, ChatTemplateError> {
        self.select(request).map(|c| c.source.as_str())
    }

    /// Whether the template for `request` reads `content` as a string or iterates over
    /// OpenAI parts: a hint for the router whether to flatten content before rendering.
    pub fn content_format_for(
        &self,
        request: &ChatRequest,
    ) -> Result<ContentFormat, ChatTemplateError> {
        self.select(request).map(|c| c.format)
    }

    /// The content format of the template used without a name or tools (`default`).
    pub fn content_format(&self) -> ContentFormat {
        self.select_by(None, false)
            .map(|c| c.format)
            .unwrap_or(ContentFormat::String)
    }

    /// transformers' `get_chat_template`: a named set picks the requested name, else
    /// `tool_use` when tools are given, else `default`.
    fn select(&self, request: &ChatRequest) -> Result<&Compiled, ChatTemplateError> {
        self.select_by(
            request.chat_template_name.as_deref(),
            request.tools.is_some(),
        )
    }

    fn select_by(
        &self,
        name: Option<&str>,
        has_tools: bool,
    ) -> Result<&Compiled, ChatTemplateError> {
        let find = |wanted: &str| {
            self.inner
                .templates
                .iter()
                .find(|(n, _)| n == wanted)
                .map(|(_, c)| c.as_ref().map_err(Clone::clone))
        };
        let names = || {
            let mut names: Vec<&str> = self.names().collect();
            names.sort_unstable();
            names.join(", ")
        };
        if self.inner.single {
            return match name {
                None | Some(DEFAULT_NAME) => find(DEFAULT_NAME).unwrap_or_else(|| {
                    Err(ChatTemplateError::NoTemplate {
                        detail: "the tokenizer has no chat template".to_owned(),
                    })
                }),
                Some(other) => Err(ChatTemplateError::NoTemplate {
                    detail: format!(
                        "no chat template named `{other}` (the tokenizer has a single template)"
                    ),
                }),
            };
        }
        match name {
            Some(name) => find(name).ok_or_else(|| ChatTemplateError::NoTemplate {
                detail: format!("no chat template named `{name}`; available: {}", names()),
            })?,
            None => match (has_tools, find("tool_use"), find(DEFAULT_NAME)) {
                (true, Some(t), _) => t,
                (_, _, Some(d)) => d,
                _ => Err(ChatTemplateError::NoTemplate {
                    detail: format!(
                        "this model has multiple chat templates with no default; pass a template name. Available: {}",
                        names()
                    ),
                }),
            },
        }
    }

    /// Renders `request` to the prompt string, as `apply_chat_template(..., tokenize=False)`.
    pub fn render(&self, request: &ChatRequest) -> Result<String, ChatTemplateError> {
        let compiled = self.select(request)?;
        if request.messages.is_empty() {
            return Err(ChatTemplateError::request(
                "Cannot apply chat template to an empty conversation. Provide at least one message.",
            ));
        }
        let continue_field = request.continue_final_message.field();
        if continue_field.is_some() && request.add_generation_prompt {
            return Err(ChatTemplateError::request(
                "continue_final_message and add_generation_prompt are not compatible",
            ));
        }

        // vLLM's rewrite of the messages, when the request asks for it (`from_openai`).
        let shaped;
        let source_messages = match request.content_shaping.format(compiled.format) {
            Some(format) => {
                shaped = super::openai::shape_messages(&request.messages, format);
                &shaped
            }
            None => &request.messages,
        };
        let (messages, continued) =
            build_messages(source_messages, continue_field, &compiled.source)?;
        let ctx = self.build_context(request, messages)?;

        // Fuel grows with the request (rounded up to a power-of-two multiple of the base).
        let limits = &self.inner.limits;
        let items = request.messages.len()
            + request.tools.as_ref().map_or(0, Vec::len)
            + request.documents.as_ref().map_or(0, Vec::len);
        let env = compiled.env_for(limits.fuel_base, limits.fuel_for(items));
        let template = env
            .get_template(&compiled.name)
            .map_err(|e| map_render_error(&e))?;

        let _budget = budget::RenderBudget::start(
            limits.max_output_bytes,
            env.fuel().unwrap_or(limits.fuel_base),
        );
        let mut out = env::LimitedWriter::new(limits.max_output_bytes, compiled.source.len() * 2);
        // The last line of defence: a panic inside minijinja (invariant
        // `render-equals-transformers` lists the ones found
        // and routed around) becomes an error, not an abort of the caller's thread.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            template.render_captured_to(ctx, &mut out).map(drop)
        }))
        .map_err(|panic| ChatTemplateError::Render {
            detail: format!(
                "the template engine failed: {}",
                panic
                    .downcast_ref::<&str>()
                    .copied()
                    .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("panic")
            ),
        })?;
        if out.exceeded {
            return Err(output_limit_error());
        }
        result.map_err(|e| map_render_error(&e))?;
        let rendered = String::from_utf8(out.buf).map_err(|e| ChatTemplateError::Render {
            detail: format!("the template produced invalid UTF-8: {e}"),
        })?;

        match continued {
            None => Ok(rendered),
            Some(final_text) => cut_at_continue_tag(rendered, &final_text),
        }
    }

    fn build_context(
        &self,
        request: &ChatRequest,
        messages: Value,
    ) -> Result<Value, ChatTemplateError> {
        let kwargs = &request.chat_template_kwargs;
        let mut pairs: Vec<(Value, Value)> =
            Vec::with_capacity(self.inner.specials.len() + kwargs.len() + 6);
        for (key, value) in &self.inner.specials {
            if !kwargs.contains_key(key) {
                pairs.push((Value::from(key.as_str()), value.clone()));
            }
        }
        for (key, value) in kwargs {
            if RESERVED.contains(&key.as_str()) {
                return Err(ChatTemplateError::request(format!(
                    "chat_template_kwargs may not set `{key}`"
                )));
            }
            pairs.push((Value::from(key.as_str()), json_to_value(value)));
        }
        pairs.push((Value::from("messages"), messages));
        let tools = match &request.tools {
            Some(tools) => Value::from(tools.iter().map(json_to_value).collect::<Vec<_>>()),
            None => Value::from(()),
        };
        pairs.push((Value::from("tools"), tools));
        let documents = match &request.documents {
            Some(docs) => {
                if docs.iter().any(|d| !d.is_object()) {
                    return Err(ChatTemplateError::request(
                        "Documents should be a list of dicts with 'title' and 'text' keys!",
                    ));
                }
                Value::from(docs.iter().map(json_to_value).collect::<Vec<_>>())
            }
            None => Value::from(()),
        };
        pairs.push((Value::from("documents"), documents));
        pairs.push((
            Value::from("add_generation_prompt"),
            Value::from(request.add_generation_prompt),
        ));
        if let Some(now) = request.fixed_now {
            pairs.push((Value::from(NOW_KEY), Value::from(now.to_iso())));
        }
        Ok(SmallMap::value(pairs))
    }
}

fn compile(
    name: &str,
    source: String,
    limits: RenderLimits,
) -> Result<Compiled, ChatTemplateError> {
    let (env, format) = env::build(name, &source, limits)?;
    Ok(Compiled {
        env,
        tiers: std::array::from_fn(|_| OnceLock::new()),
        name: name.to_owned(),
        source,
        format,
    })
}

/// A tokenizer's chat template, loaded and compiled on first use and then kept (also when
/// loading failed: the error is returned again without touching the files).
#[derive(Debug)]
pub struct LazyChatTemplate {
    dir: PathBuf,
    override_path: Option<PathBuf>,
    tokenizer_config: Option<Json>,
    /// Tokens the template sees where the configs name none.
    fallback: TemplateSpecialTokens,
    cell: OnceLock<Result<ChatTemplate, ChatTemplateError>>,
}

impl LazyChatTemplate {
    /// Remembers where to load from; reads nothing yet. The arguments are those of
    /// [`load_chat_template`].
    pub fn new(
        dir: PathBuf,
        override_path: Option<PathBuf>,
        tokenizer_config: Option<Json>,
    ) -> Self {
        LazyChatTemplate {
            dir,
            override_path,
            tokenizer_config,
            fallback: TemplateSpecialTokens::new(),
            cell: OnceLock::new(),
        }
    }

    /// The same, with `fallback`'s tokens for those the configs do not name
    /// (a bare SentencePiece model's own, which have no config).
    pub(crate) fn with_fallback(mut self, fallback: TemplateSpecialTokens) -> Self {
        self.fallback = fallback;
        self
    }

    /// The compiled template, loading it on the first call.
    pub fn get(&self) -> Result<&ChatTemplate, ChatTemplateError> {
        self.cell
            .get_or_init(|| {
                load_chat_template_with(
                    &self.dir,
                    self.override_path.as_deref(),
                    self.tokenizer_config.as_ref(),
                    &self.fallback,
                )
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Loads and compiles the chat template of the tokenizer in `dir`: the function the tokenizer
/// loader calls. `override_path` is an explicit template file; `tokenizer_config` the parsed
/// `tokenizer_config.json`. Special tokens come from the config (and the legacy
/// `special_tokens_map.json`). A tokenizer without a template gives
/// [`ChatTemplateError::NoTemplate`].
pub fn load_chat_template(
    dir: &Path,
    override_path: Option<&Path>,
    tokenizer_config: Option<&Json>,
) -> Result<ChatTemplate, ChatTemplateError> {
    load_chat_template_with(
        dir,
        override_path,
        tokenizer_config,
        &TemplateSpecialTokens::new(),
    )
}

/// [`load_chat_template`], with `fallback`'s tokens for those the configs do not name.
fn load_chat_template_with(
    dir: &Path,
    override_path: Option<&Path>,
    tokenizer_config: Option<&Json>,
    fallback: &TemplateSpecialTokens,
) -> Result<ChatTemplate, ChatTemplateError> {
    let source = TemplateSource::discover(dir, override_path, tokenizer_config)?.ok_or_else(|| {
        ChatTemplateError::NoTemplate {
            detail: format!(
                "{} has no chat_template.jinja, chat_template.json or tokenizer_config.json `chat_template`",
                dir.display()
            ),
        }
    })?;
    let mut specials = TemplateSpecialTokens::from_dir(dir, tokenizer_config)?;
    specials.fill_from(fallback);
    ChatTemplate::new(source, &specials)
}

fn pairs_value(pairs: Vec<(&str, Value)>) -> Value {
    SmallMap::value(
        pairs
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    )
}

fn part_value(part: &ContentPart) -> Value {
    let mut pairs: Vec<(&str, Value)> = Vec::with_capacity(2 + part.extra.len());
    pairs.push(("type", Value::from(part.kind.as_str())));
    if let Some(text) = &part.text {
        pairs.push(("text", Value::from(text.as_str())));
    }
    for (k, v) in &part.extra {
        pairs.push((k.as_str(), json_to_value(v)));
    }
    part.key_order.apply(&mut pairs);
    pairs_value(pairs)
}

fn tool_call_value(call: &ToolCall) -> Value {
    let mut pairs: Vec<(&str, Value)> = Vec::with_capacity(3 + call.extra.len());
    if let Some(id) = &call.id {
        pairs.push(("id", Value::from(id.as_str())));
    }
    if let Some(kind) = &call.kind {
        pairs.push(("type", Value::from(kind.as_str())));
    }
    let f = &call.function;
    let mut fpairs: Vec<(&str, Value)> = Vec::with_capacity(2 + f.extra.len());
    fpairs.push(("name", Value::from(f.name.as_str())));
    fpairs.push(("arguments", json_to_value(&f.arguments)));
    for (k, v) in &f.extra {
        fpairs.push((k.as_str(), json_to_value(v)));
    }
    f.key_order.apply(&mut fpairs);
    pairs.push(("function", pairs_value(fpairs)));
    for (k, v) in &call.extra {
        pairs.push((k.as_str(), json_to_value(v)));
    }
    call.key_order.apply(&mut pairs);
    pairs_value(pairs)
}

/// A message's fields in the order the template sees them, `None`s dropped.
fn message_fields(m: &Message) -> Vec<(&str, Value)> {
    let mut fields: Vec<(&str, Value)> = Vec::with_capacity(6 + m.extra.len());
    fields.push(("role", Value::from(m.role.as_str())));
    if let Some(content) = &m.content {
        let v = match content {
            MessageContent::Text(t) => Value::from(t.as_str()),
            MessageContent::Parts(parts) => {
                Value::from(parts.iter().map(part_value).collect::<Vec<_>>())
            }
        };
        fields.push(("content", v));
    }
    if let Some(name) = &m.name {
        fields.push(("name", Value::from(name.as_str())));
    }
    if let Some(calls) = &m.tool_calls {
        fields.push((
            "tool_calls",
            Value::from(calls.iter().map(tool_call_value).collect::<Vec<_>>()),
        ));
    }
    if let Some(id) = &m.tool_call_id {
        fields.push(("tool_call_id", Value::from(id.as_str())));
    }
    if let Some(r) = &m.reasoning_content {
        fields.push(("reasoning_content", Value::from(r.as_str())));
    }
    for (k, v) in &m.extra {
        if !v.is_null() {
            fields.push((k.as_str(), json_to_value(v)));
        }
    }
    m.key_order.apply(&mut fields);
    alias_reasoning(fields)
}

/// transformers' `_alias_reasoning_fields`: `{"thinking": r, **message, "reasoning_content": r}`
/// for the first of `reasoning_content`, `thinking`, `reasoning` that is set.
fn alias_reasoning(fields: Vec<(&str, Value)>) -> Vec<(&str, Value)> {
    let reasoning = REASONING_FIELDS.iter().find_map(|name| {
        fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    });
    let Some(reasoning) = reasoning else {
        return fields;
    };
    let thinking = fields
        .iter()
        .find(|(k, _)| *k == "thinking")
        .map_or_else(|| reasoning.clone(), |(_, v)| v.clone());
    let mut out = Vec::with_capacity(fields.len() + 2);
    out.push(("thinking", thinking));
    let mut has_rc = false;
    for (k, v) in fields {
        match k {
            "thinking" => {}
            "reasoning_content" => {
                has_rc = true;
                out.push((k, reasoning.clone()));
            }
            _ => out.push((k, v)),
        }
    }
    if !has_rc {
        out.push(("reasoning_content", reasoning));
    }
    out
}

fn type_error(detail: impl Into<String>) -> ChatTemplateError {
    ChatTemplateError::request(detail)
}

/// Appends the continue tag to the last text part; returns the new list and the part's text.
fn tag_last_text_part(list: &Value) -> Result<(Value, String), ChatTemplateError> {
    let mut items: Vec<Value> = list
        .try_iter()
        .map_err(|e| type_error(e.to_string()))?
        .collect();
    for item in items.iter_mut().rev() {
        let has_text = match item.as_str() {
            Some(s) => s.contains("text"),
            None => item
                .as_object()
                .is_some_and(|o| o.get_value(&Value::from("text")).is_some()),
        };
        if !has_text {
            continue;
        }
        let Some(obj) = item.as_object() else {
            return Err(type_error("string indices must be integers"));
        };
        let text = obj.get_value(&Value::from("text")).unwrap_or_default();
        let Some(text) = text.as_str().map(str::to_owned) else {
            return Err(type_error("can only concatenate str to str"));
        };
        let pairs: Vec<(Value, Value)> = obj
            .try_iter_pairs()
            .map(|it| {
                it.map(|(k, v)| {
                    if k.as_str() == Some("text") {
                        (k, Value::from(format!("{text}{CONTINUE_TAG}")))
                    } else {
                        (k, v)
                    }
                })
                .collect()
            })
            .unwrap_or_default();
        *item = SmallMap::value(pairs);
        return Ok((Value::from(items), text));
    }
    Err(type_error(
        "continue_final_message is set but we could not find any text to continue in the final message!",
    ))
}

/// Converts the messages, applying transformers' pre-processing; with `continue_field`, tags
/// the final message and returns the text to find again after rendering.
fn build_messages(
    messages: &[Message],
    continue_field: Option<&str>,
    template_source: &str,
) -> Result<(Value, Option<String>), ChatTemplateError> {
    let mut values: Vec<Value> = Vec::with_capacity(messages.len());
    let last = messages.len().saturating_sub(1);
    let mut continued = None;
    for (i, m) in messages.iter().enumerate() {
        let mut fields = message_fields(m);
        if i == last
            && let Some(field) = continue_field
        {
            continued = Some(tag_final_message(&mut fields, field, template_source)?);
        }
        values.push(SmallMap::value(
            fields
                .into_iter()
                .map(|(k, v)| (Value::from(k), v))
                .collect(),
        ));
    }
    Ok((Value::from(values), continued))
}

fn tag_final_message(
    fields: &mut [(&str, Value)],
    field: &str,
    template_source: &str,
) -> Result<String, ChatTemplateError> {
    let Some(final_value) = fields
        .iter()
        .find(|(k, _)| *k == field)
        .map(|(_, v)| v.clone())
    else {
        return Err(type_error(format!(
            "continue_final_message is set but the final message has no \"{field}\" to continue!"
        )));
    };
    let continue_fields: Vec<String> = if REASONING_FIELDS.contains(&field) {
        REASONING_FIELDS
            .iter()
            .filter(|f| fields.iter().any(|(k, v)| k == *f && *v == final_value))
            .map(|f| (*f).to_owned())
            .collect()
    } else {
        vec![field.to_owned()]
    };
    if !continue_fields
        .iter()
        .any(|f| template_source.contains(f.as_str()))
    {
        return Err(type_error(format!(
            "continue_final_message is set to \"{field}\" but this is not an accepted field in the chat_template"
        )));
    }
    if final_value.kind() == minijinja::value::ValueKind::Seq {
        let (tagged, text) = tag_last_text_part(&final_value)?;
        if let Some(slot) = fields.iter_mut().find(|(k, _)| *k == field) {
            slot.1 = tagged;
        }
        return Ok(text);
    }
    let Some(text) = final_value.as_str().map(str::to_owned) else {
        return Err(type_error("can only concatenate str to str"));
    };
    for (k, v) in fields.iter_mut() {
        if continue_fields.iter().any(|f| f == k) {
            match v.as_str() {
                Some(s) => *v = Value::from(format!("{s}{CONTINUE_TAG}")),
                None => return Err(type_error("can only concatenate str to str")),
            }
        }
    }
    Ok(text)
}

/// Cuts the render right after the final message's text, as transformers does.
fn cut_at_continue_tag(
    mut rendered: String,
    final_text: &str,
) -> Result<String, ChatTemplateError> {
    let tag = CONTINUE_TAG.trim_end();
    if !rendered.contains(pyfmt::py_strip(final_text)) || !rendered.contains(tag) {
        return Err(ChatTemplateError::request(
            "continue_final_message is set but the final message does not appear in the chat after applying the chat template",
        ));
    }
    let Some(loc) = rendered.rfind(tag) else {
        return Err(ChatTemplateError::request("continue tag vanished"));
    };
    if rendered[loc..].starts_with(CONTINUE_TAG) {
        rendered.truncate(loc);
    } else {
        let keep = pyfmt::py_rstrip(&rendered[..loc]).len();
        rendered.truncate(keep);
    }
    Ok(rendered)
}

fn output_limit_error() -> ChatTemplateError {
    ChatTemplateError::LimitExceeded {
        limit: Limit::Size,
        detail: "the template built or printed more than the render's size limit".to_owned(),
    }
}

/// Maps a minijinja error to ours: `raise_exception` → `Raised`, fuel and recursion →
/// `LimitExceeded`, anything else → `Render`.
fn map_render_error(e: &minijinja::Error) -> ChatTemplateError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(raised) = err.downcast_ref::<RaisedException>() {
            return ChatTemplateError::Raised {
                message: raised.0.clone(),
            };
        }
        if err.is::<budget::SizeLimitExceeded>() {
            return output_limit_error();
        }
        if err.is::<budget::WorkLimitExceeded>() {
            return ChatTemplateError::LimitExceeded {
                limit: Limit::Fuel,
                detail: env::describe(e),
            };
        }
        source = err.source();
    }
    let detail = env::describe(e);
    if e.kind() == ErrorKind::OutOfFuel {
        return ChatTemplateError::LimitExceeded {
            limit: Limit::Fuel,
            detail,
        };
    }
    let text = e.detail().unwrap_or_default();
    if text.contains("recursion limit exceeded") {
        return ChatTemplateError::LimitExceeded {
            limit: Limit::Recursion,
            detail,
        };
    }
    if text.contains("is too large") || text.contains("too many elements") {
        return ChatTemplateError::LimitExceeded {
            limit: Limit::Size,
            detail,
        };
    }
    ChatTemplateError::Render { detail }
}
