//! Harmony messages and their rendering into pieces (control tokens and
//! texts), as `openai-harmony` 0.0.8's `render_conversation_for_completion`
//! renders them: every text is encoded on its own, so the pieces are the
//! unit of encoding.

use super::schema::typescript;

/// Harmony's control tokens (the `o200k_harmony` specials the renderer writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    Start,
    Message,
    End,
    Call,
    Return,
    Channel,
    Constrain,
}

impl Control {
    /// The token's text in the vocabulary.
    pub(crate) fn text(self) -> &'static str {
        match self {
            Control::Start => "<|start|>",
            Control::Message => "<|message|>",
            Control::End => "<|end|>",
            Control::Call => "<|call|>",
            Control::Return => "<|return|>",
            Control::Channel => "<|channel|>",
            Control::Constrain => "<|constrain|>",
        }
    }
}

/// A Harmony author role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// `Reasoning: low|medium|high` in the system message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effort {
    Low,
    Medium,
    High,
}

/// The system message's content, with `SystemContent::new()`'s defaults
/// (identity, knowledge cutoff, the three required channels).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SystemContent {
    pub(crate) effort: Effort,
    pub(crate) date: String,
}

/// One function tool of the developer message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Tool {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parameters: Option<serde_json::Value>,
}

/// The developer message's content: instructions, and the `functions`
/// namespace when it has tools.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct DeveloperContent {
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Vec<Tool>,
}

/// One content item of a message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Content {
    Text(String),
    System(SystemContent),
    Developer(DeveloperContent),
}

/// A Harmony message, with the request message it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HMessage {
    pub(crate) role: Role,
    /// The author name: a tool's `functions.NAME`.
    pub(crate) name: Option<String>,
    pub(crate) recipient: Option<String>,
    pub(crate) channel: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) contents: Vec<Content>,
    /// The index of the request message it renders; `None` for the system
    /// message and the tools.
    pub(crate) source: Option<usize>,
}

impl HMessage {
    pub(crate) fn new(role: Role, content: Content, source: Option<usize>) -> Self {
        HMessage {
            role,
            name: None,
            recipient: None,
            channel: None,
            content_type: None,
            contents: vec![content],
            source,
        }
    }

    pub(crate) fn text(role: Role, text: impl Into<String>, source: usize) -> Self {
        Self::new(role, Content::Text(text.into()), Some(source))
    }

    pub(crate) fn channel(mut self, channel: &str) -> Self {
        self.channel = Some(channel.to_owned());
        self
    }

    pub(crate) fn recipient(mut self, recipient: String) -> Self {
        self.recipient = Some(recipient);
        self
    }

    fn has_function_tools(&self) -> bool {
        self.contents
            .iter()
            .any(|c| matches!(c, Content::Developer(d) if !d.tools.is_empty()))
    }
}

/// A rendered piece. `from_request` marks text that holds request strings
/// (which may spell control tokens), as opposed to the renderer's own words.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Control(Control),
    Text { text: String, from_request: bool },
}

/// The pieces, and for each message the range of pieces it produced.
pub(crate) struct Rendered {
    pub(crate) pieces: Vec<Piece>,
    pub(crate) spans: Vec<(Option<usize>, std::ops::Range<usize>)>,
}

impl Rendered {
    fn control(&mut self, c: Control) {
        self.pieces.push(Piece::Control(c));
    }

    fn text(&mut self, text: impl Into<String>, from_request: bool) {
        self.pieces.push(Piece::Text {
            text: text.into(),
            from_request,
        });
    }

    /// The prompt's text: the pieces end to end.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Control(c) => out.push_str(c.text()),
                Piece::Text { text, .. } => out.push_str(text),
            }
        }
        out
    }
}

/// Renders `messages` for completion by the assistant: Harmony's own rule
/// drops analysis before the first `final` message when the last assistant
/// message is `final`, then `<|start|>assistant` opens the next turn.
pub(crate) fn render_for_completion(messages: &[HMessage]) -> Rendered {
    let has_function_tools = messages.iter().any(HMessage::has_function_tools);
    let last_assistant_final = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .is_some_and(|m| m.channel.as_deref() == Some("final"));
    let first_final = messages
        .iter()
        .position(|m| m.channel.as_deref() == Some("final"));
    let mut out = Rendered {
        pieces: Vec::new(),
        spans: Vec::new(),
    };
    for (i, m) in messages.iter().enumerate() {
        let dropped = last_assistant_final
            && first_final.is_some_and(|f| i < f)
            && m.channel.as_deref() == Some("analysis");
        if dropped {
            continue;
        }
        let start = out.pieces.len();
        render_message(&mut out, m, has_function_tools);
        out.spans.push((m.source, start..out.pieces.len()));
    }
    out.control(Control::Start);
    out.text(Role::Assistant.as_str(), false);
    out
}

fn render_message(out: &mut Rendered, m: &HMessage, has_function_tools: bool) {
    out.control(Control::Start);
    match (m.role, &m.name) {
        // A tool is named, not roled.
        (Role::Tool, Some(name)) => out.text(name.clone(), true),
        (Role::Tool, None) => out.text("", true),
        (role, name) => {
            out.text(role.as_str(), false);
            if let Some(name) = name {
                out.text(format!(":{name}"), true);
            }
        }
    }
    if let Some(r) = m.recipient.as_deref().filter(|r| *r != "all") {
        out.text(format!(" to={r}"), true);
    }
    if let Some(channel) = &m.channel {
        out.control(Control::Channel);
        out.text(channel.clone(), false);
    }
    if let Some(ct) = &m.content_type {
        // Only a leading `<|constrain|>` is the control token; the rest is text.
        match ct.strip_prefix(Control::Constrain.text()) {
            Some(rest) => {
                out.text(" ", false);
                out.control(Control::Constrain);
                if !rest.is_empty() {
                    out.text(rest, true);
                }
            }
            None => out.text(format!(" {ct}"), true),
        }
    }
    out.control(Control::Message);
    for content in &m.contents {
        match content {
            Content::Text(t) => out.text(t.clone(), true),
            Content::System(s) => out.text(system_text(s, has_function_tools), false),
            Content::Developer(d) => out.text(developer_text(d), true),
        }
    }
    if m.role == Role::Assistant && m.recipient.is_some() {
        out.control(Control::Call);
    } else {
        out.control(Control::End);
    }
}

/// `SystemContent::new()`'s identity line.
const IDENTITY: &str = "You are ChatGPT, a large language model trained by OpenAI.";
/// `SystemContent::new()`'s knowledge cutoff.
const KNOWLEDGE_CUTOFF: &str = "2024-06";

fn system_text(s: &SystemContent, has_function_tools: bool) -> String {
    let effort = match s.effort {
        Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
    };
    let mut channels = "# Valid channels: analysis, commentary, final. \
                        Channel must be included for every message."
        .to_owned();
    if has_function_tools {
        channels.push_str("\nCalls to these tools must go to the commentary channel: 'functions'.");
    }
    [
        format!(
            "{IDENTITY}\nKnowledge cutoff: {KNOWLEDGE_CUTOFF}\nCurrent date: {}",
            s.date
        ),
        format!("Reasoning: {effort}"),
        channels,
    ]
    .join("\n\n")
}

fn developer_text(d: &DeveloperContent) -> String {
    let mut sections = Vec::new();
    if let Some(i) = &d.instructions {
        sections.push("# Instructions".to_owned());
        sections.push(i.clone());
    }
    if !d.tools.is_empty() {
        sections.push(tools_text(&d.tools));
    }
    sections.join("\n\n")
}

/// The `# Tools` section with the `functions` namespace.
fn tools_text(tools: &[Tool]) -> String {
    let mut lines = vec![
        "## functions\n".to_owned(),
        "namespace functions {\n".to_owned(),
    ];
    for tool in tools {
        lines.extend(tool.description.lines().map(|l| format!("// {l}")));
        match &tool.parameters {
            Some(p) => lines.push(format!(
                "type {} = (_: {}) => any;\n",
                tool.name,
                typescript(p, "")
            )),
            None => lines.push(format!("type {} = () => any;\n", tool.name)),
        }
    }
    lines.push("} // namespace functions".to_owned());
    format!("# Tools\n\n{}", lines.join("\n"))
}
