//! Chat templates that render exactly as transformers' `apply_chat_template(..., tokenize=False)`.
//!
//! A tokenizer's template(s) are found with transformers' precedence ([`TemplateSource`]),
//! compiled once ([`ChatTemplate`]) with minijinja configured as transformers configures Jinja2
//! (`trim_blocks`, `lstrip_blocks`, loop controls, its `tojson`, `raise_exception` and
//! `strftime_now`, Python value formatting and string/list/dict methods), and rendered per
//! [`ChatRequest`] under a fuel and recursion limit, with no access to files or the network.
//!
//! ```no_run
//! # use std::path::Path;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use router_tokenizer::chat::{load_chat_template, ChatRequest, Message};
//! let dir = Path::new("snapshot");
//! let config: serde_json::Value =
//!     serde_json::from_str(&std::fs::read_to_string(dir.join("tokenizer_config.json"))?)?;
//! let template = load_chat_template(dir, None, Some(&config))?;
//! let mut request = ChatRequest::new(vec![Message::new("user", "Hello!")]);
//! request.add_generation_prompt = true;
//! let prompt = template.render(&request)?;
//! # Ok(()) }
//! ```
//!
//! # Parity
//!
//! The rendering is checked byte for byte against transformers 5.23.0 on every template of the
//! shared cache (`tests/golden/chat/`) and on 101 public templates × 15 peer-test conversations
//! (`tests/golden/chat/public/`), including where transformers raises. Like transformers,
//! a render drops `None`-valued message keys, exposes a message's reasoning as both
//! `reasoning_content` and `thinking`, passes `tools`/`documents` as `None` when absent, merges
//! `chat_template_kwargs` over the special tokens, and implements `continue_final_message` by
//! tagging the final message and cutting the render there. Known differences (all outside the
//! shared templates) are listed in `tests/golden/chat/README.md`.
//!
//! # Safety
//!
//! Templates come from the internet. A render cannot read files or reach the network: there is
//! no loader (`include`, `import` and `extends` fail) and the loader functions read only the
//! fixed file names of [`TemplateSource::discover`]. [`RenderLimits`] bound a render's
//! instructions (fuel, growing with the request), recursion and bytes: every string or list a
//! render builds or prints is charged to one byte budget before it is allocated (builtins check
//! sizes first; the operands of `~`, `+` and `*` are checked by filters the template is
//! instrumented with), and work inside builtins is charged against the fuel. A template that
//! loops forever or builds a bomb (`indent(10**12)`, `~` doublings, `[0] * 10**8`) stops with
//! [`ChatTemplateError::LimitExceeded`]. A template whose syntax tree would nest more than 256
//! levels (long operator chains such as `1 + 1 + ...`, deep brackets, blocks or `elif` chains)
//! is refused before it is parsed, with [`Limit::Nesting`], so compiling needs little stack and
//! time linear in the template's length.
//!
//! One cost is bounded only by the recursion limit: stack for minijinja's recursive drop,
//! comparison and display of values nested tens of thousands of levels deep (about 200 bytes a
//! level). Renders of untrusted templates belong on threads with a generous stack (stack is
//! reserved, not committed, so e.g. 64 MiB is cheap), or under lower [`RenderLimits`].

mod budget;
mod content_format;
mod env;
mod error;
mod functions;
mod lexing;
mod openai;
mod pyfmt;
mod request;
mod source;
mod syntax;
mod template;
mod value;

pub use content_format::ContentFormat;
pub use env::RenderLimits;
pub use error::{ChatTemplateError, Limit};
pub use openai::ContentShaping;
pub use request::{
    ChatRequest, ContentPart, ContinueFinalMessage, FixedNow, FunctionCall, Message,
    MessageContent, ToolCall,
};
pub use source::{TemplateOrigin, TemplateSource, TemplateSpecialTokens};
pub use template::{ChatTemplate, LazyChatTemplate, load_chat_template};
