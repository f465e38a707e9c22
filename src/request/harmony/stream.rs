//! A gpt-oss generation split into Harmony messages as its ids arrive, as
//! `openai-harmony`'s `StreamableParser` (strict, started as the assistant,
//! the way vLLM starts it) splits it: a router streams `final` text to the
//! client, keeps `analysis` as reasoning and turns `to=functions.NAME`
//! messages into tool calls.

use super::render::Control;
use crate::error::{Error, ErrorKind, Result};
use crate::tokenizer::Tokenizer;

fn malformed(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::ChatFormat {
        format: "harmony",
        detail: detail.into(),
    })
}

/// The header of a Harmony message: who wrote it, to whom, on which channel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HarmonyHeader {
    /// `assistant`, `user`, `system`, `developer`, or `tool`.
    pub role: String,
    /// A tool author's name (`functions.NAME`); `None` otherwise.
    pub name: Option<String>,
    /// `analysis`, `commentary`, `final`, … as written.
    pub channel: Option<String>,
    /// The recipient of `to=…` (`functions.get_weather`): a tool call.
    pub recipient: Option<String>,
    /// The content type (`json`, `<|constrain|>json`).
    pub content_type: Option<String>,
}

/// What one id of a generation did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HarmonyEvent {
    /// A header ended (`<|message|>`): the message's content follows.
    MessageStart(HarmonyHeader),
    /// Text added to the current message (whole characters only; an invalid
    /// byte sequence is U+FFFD).
    Delta(String),
    /// The current message ended with `<|end|>`, `<|call|>` or `<|return|>`
    /// (`None`: with the end of the generation).
    MessageEnd {
        /// Its header.
        header: HarmonyHeader,
        /// Its whole content.
        content: String,
        /// The token that ended it: `<|end|>`, `<|call|>`, `<|return|>`.
        stop: Option<&'static str>,
    },
}

enum State {
    ExpectStart,
    Header(Vec<u32>),
    Content {
        header: HarmonyHeader,
        content: String,
    },
}

/// Harmony's streaming parser over this handle's vocabulary.
///
/// ```no_run
/// # fn main() -> router_tokenizer::Result<()> {
/// # let tok = router_tokenizer::create_tokenizer("openai/gpt-oss-20b")?;
/// use router_tokenizer::harmony::{HarmonyEvent, HarmonyStream};
/// let mut stream = HarmonyStream::new(&tok)?;
/// for id in [200005u32, 17196, 200008, 13225, 200007] {
///     for event in stream.push(id)? {
///         if let HarmonyEvent::Delta(text) = event { print!("{text}"); }
///     }
/// }
/// # Ok(()) }
/// ```
pub struct HarmonyStream {
    tok: Tokenizer,
    ids: [u32; 5],
    next_role_assistant: bool,
    state: State,
    pending: Vec<u8>,
}

const START: usize = 0;
const MESSAGE: usize = 1;
const END: usize = 2;
const CALL: usize = 3;
const RETURN: usize = 4;

impl HarmonyStream {
    /// A parser for an assistant turn (the prompt ended `<|start|>assistant`).
    ///
    /// # Errors
    /// [`ErrorKind::ChatFormat`] where the vocabulary lacks Harmony's tokens.
    pub fn new(tok: &Tokenizer) -> Result<Self> {
        let id = |c: Control| {
            tok.token_to_id(c.text())
                .ok_or_else(|| malformed(format!("the vocabulary has no {}", c.text())))
        };
        Ok(HarmonyStream {
            tok: tok.clone(),
            ids: [
                id(Control::Start)?,
                id(Control::Message)?,
                id(Control::End)?,
                id(Control::Call)?,
                id(Control::Return)?,
            ],
            next_role_assistant: true,
            state: State::Header(Vec::new()),
            pending: Vec::new(),
        })
    }

    fn stop_of(&self, id: u32) -> Option<&'static str> {
        [END, CALL, RETURN]
            .into_iter()
            .find(|&k| self.ids[k] == id)
            .map(|k| match k {
                END => Control::End.text(),
                CALL => Control::Call.text(),
                _ => Control::Return.text(),
            })
    }

    /// Feeds one generated id.
    ///
    /// # Errors
    /// [`ErrorKind::ChatFormat`] for a generation Harmony cannot parse (text
    /// before `<|start|>`, a header without a role or with stray words);
    /// [`ErrorKind::UnknownTokenId`] for an id outside the vocabulary.
    pub fn push(&mut self, id: u32) -> Result<Vec<HarmonyEvent>> {
        let mut events = Vec::new();
        match &mut self.state {
            State::ExpectStart => {
                if id != self.ids[START] {
                    return Err(malformed(format!(
                        "unexpected token {id} while expecting <|start|>"
                    )));
                }
                self.state = State::Header(Vec::new());
            }
            State::Header(ids) => {
                if id == self.ids[MESSAGE] {
                    let text = self.tok.decode(ids, false)?;
                    let header = parse_header(&text, self.next_role_assistant)?;
                    self.next_role_assistant = false;
                    events.push(HarmonyEvent::MessageStart(header.clone()));
                    self.state = State::Content {
                        header,
                        content: String::new(),
                    };
                } else {
                    ids.push(id);
                }
            }
            State::Content { .. } => {
                if let Some(stop) = self.stop_of(id) {
                    events.push(self.end(Some(stop)));
                } else {
                    let bytes = self.tok.token_bytes(id).map(<[u8]>::to_vec).map_or_else(
                        || self.tok.decode(&[id], false).map(String::into_bytes),
                        Ok,
                    )?;
                    self.pending.extend_from_slice(&bytes);
                    let delta = take_utf8(&mut self.pending);
                    if !delta.is_empty() {
                        if let State::Content { content, .. } = &mut self.state {
                            content.push_str(&delta);
                        }
                        events.push(HarmonyEvent::Delta(delta));
                    }
                }
            }
        }
        Ok(events)
    }

    /// Ends the generation: an open message ends with it.
    ///
    /// # Errors
    /// [`ErrorKind::ChatFormat`] where the generation stopped inside a header.
    pub fn finish(&mut self) -> Result<Vec<HarmonyEvent>> {
        match &self.state {
            State::ExpectStart => Ok(Vec::new()),
            State::Header(_) => Err(malformed(
                "the generation ended while waiting for the message header to complete",
            )),
            State::Content { .. } => Ok(vec![self.end(None)]),
        }
    }

    fn end(&mut self, stop: Option<&'static str>) -> HarmonyEvent {
        let state = std::mem::replace(&mut self.state, State::ExpectStart);
        let tail = String::from_utf8_lossy(&std::mem::take(&mut self.pending)).into_owned();
        match state {
            State::Content {
                header,
                mut content,
            } => {
                content.push_str(&tail);
                HarmonyEvent::MessageEnd {
                    header,
                    content,
                    stop,
                }
            }
            _ => HarmonyEvent::MessageEnd {
                header: HarmonyHeader::default(),
                content: tail,
                stop,
            },
        }
    }

    /// Whether the id ends an assistant turn (`<|return|>`, `<|call|>`).
    pub fn ends_turn(&self, id: u32) -> bool {
        id == self.ids[RETURN] || id == self.ids[CALL]
    }
}

/// The whole characters at the front of `bytes` (taken out); an invalid
/// sequence becomes U+FFFD, an incomplete one at the end waits.
fn take_utf8(bytes: &mut Vec<u8>) -> String {
    let mut out = String::new();
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                bytes.clear();
                return out;
            }
            Err(e) => {
                let valid = e.valid_up_to();
                out.push_str(std::str::from_utf8(&bytes[..valid]).unwrap_or_default());
                match e.error_len() {
                    Some(bad) => {
                        out.push('\u{FFFD}');
                        bytes.drain(..valid + bad);
                    }
                    None => {
                        bytes.drain(..valid);
                        return out;
                    }
                }
            }
        }
    }
}

const ROLES: [&str; 5] = ["user", "assistant", "system", "developer", "tool"];

/// Parses a header's text (`assistant to=functions.f<|channel|>commentary
/// <|constrain|>json`) as Harmony does: the channel is cut out first, then
/// the words are role, recipient and content type.
fn parse_header(text: &str, assistant: bool) -> Result<HarmonyHeader> {
    let mut rest = text.to_owned();
    let mut channel = None;
    let marker = Control::Channel.text();
    if let Some(at) = rest.find(marker) {
        let after = &rest[at + marker.len()..];
        let len = after
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(after.len());
        if len == 0 {
            return Err(malformed(
                "channel marker present but no channel value found in header",
            ));
        }
        channel = Some(after[..len].to_owned());
        rest = format!("{}{}", &rest[..at], &after[len..]);
    }
    let mut rest = rest.trim().to_owned();
    let constrain = Control::Constrain.text();
    if rest.contains(constrain) {
        rest = rest
            .replace(constrain, &format!(" {constrain}"))
            .trim()
            .to_owned();
    }
    let mut words: Vec<&str> = rest.split_ascii_whitespace().collect();
    let mut name = None;
    let role = if assistant {
        "assistant".to_owned()
    } else {
        let Some(&first) = words.first() else {
            return Err(malformed("message header did not contain a role"));
        };
        if ROLES.contains(&first) {
            // Harmony names a `tool` author by the word it parsed.
            if first == "tool" {
                name = Some(first.to_owned());
            }
            first.to_owned()
        } else if words.len() > 1 || first.starts_with("to=") {
            // An unknown first word before a recipient: a tool's name.
            words.remove(0);
            name = Some(first.to_owned());
            "tool".to_owned()
        } else {
            return Err(malformed(format!("unknown role: {first}")));
        }
    };
    if words.first() == Some(&role.as_str()) {
        words.remove(0);
    }
    let mut recipient = None;
    let mut content_type = None;
    let count = words.len();
    if let Some(last) = words.pop() {
        if let Some(r) = last.strip_prefix("to=") {
            recipient = Some(r.to_owned());
        } else if count == 1 {
            recipient = Some(last.to_owned());
        } else {
            content_type = Some(last.to_owned());
            if let Some(r) = words.pop() {
                recipient = Some(r.strip_prefix("to=").unwrap_or(r).to_owned());
            }
        }
    }
    if !words.is_empty() {
        return Err(malformed(format!(
            "unexpected tokens remaining in message header: {:?}",
            words.join(" ")
        )));
    }
    Ok(HarmonyHeader {
        role,
        name,
        channel,
        recipient,
        content_type,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let h = parse_header("<|channel|>analysis", true).unwrap();
        assert_eq!(h.channel.as_deref(), Some("analysis"));
        assert_eq!(h.recipient, None);
        let h = parse_header(
            " to=functions.f<|channel|>commentary <|constrain|>json",
            true,
        )
        .unwrap();
        assert_eq!(h.recipient.as_deref(), Some("functions.f"));
        assert_eq!(h.content_type.as_deref(), Some("<|constrain|>json"));
        let h = parse_header("functions.f to=assistant<|channel|>commentary", false).unwrap();
        assert_eq!(
            (h.role.as_str(), h.name.as_deref()),
            ("tool", Some("functions.f"))
        );
        assert!(parse_header("a b c d", true).is_err());
    }

    #[test]
    fn utf8_waits_for_whole_characters() {
        let mut b = vec![0xE2, 0x82];
        assert_eq!(take_utf8(&mut b), "");
        b.push(0xAC);
        assert_eq!(take_utf8(&mut b), "€");
        let mut b = vec![b'a', 0xFF, b'b'];
        assert_eq!(take_utf8(&mut b), "a\u{FFFD}b");
    }
}
