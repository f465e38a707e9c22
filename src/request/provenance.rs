//! Where the bytes of a rendered prompt came from (DESIGN.md, invariants
//! `chat-encode-is-render-encode` and `typed-markers-stay-text`).
//!
//! Before rendering, special-token text (and special-token fragments at the
//! edges) inside every string of the request is replaced char for char by
//! private-use sentinels; after rendering, sentinels are mapped back and the
//! bytes they became are *marked*. A special-token match in the output that
//! touches a marked byte came (at least in part) from the request.

use std::fmt;
use std::ops::Range;

use serde_json::{Map, Value as Json};

use super::special_text::SpecialText;
use crate::chat::{ChatRequest, Message, MessageContent};
use crate::error::{Error, Result};

/// Where in a request a string sits, for errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc<'a> {
    /// A message's field (`content`, `role`, `tool_calls`, an extra key).
    Message { index: usize, field: &'a str },
    /// A tool definition.
    Tool(usize),
    /// A document.
    Document(usize),
    /// A `chat_template_kwargs` value.
    Kwarg(&'a str),
}

impl fmt::Display for Loc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::Message { index, field } => write!(f, "message {index} (`{field}`)"),
            Loc::Tool(i) => write!(f, "tool {i}"),
            Loc::Document(i) => write!(f, "document {i}"),
            Loc::Kwarg(k) => write!(f, "chat_template_kwargs `{k}`"),
        }
    }
}

fn json_strs(value: &Json, f: &mut dyn FnMut(&str)) {
    match value {
        Json::String(s) => f(s),
        Json::Array(items) => items.iter().for_each(|v| json_strs(v, f)),
        Json::Object(map) => map_strs(map, f),
        _ => {}
    }
}

fn map_strs(map: &Map<String, Json>, f: &mut dyn FnMut(&str)) {
    for (k, v) in map {
        f(k);
        json_strs(v, f);
    }
}

/// Calls `f` on every string of the request that came from the client:
/// every message field (keys of extra fields included), tools, documents
/// and `chat_template_kwargs` values.
pub(crate) fn walk(request: &ChatRequest, f: &mut dyn FnMut(&str, Loc<'_>)) {
    for (index, m) in request.messages.iter().enumerate() {
        let at = |field| Loc::Message { index, field };
        f(&m.role, at("role"));
        match &m.content {
            Some(MessageContent::Text(t)) => f(t, at("content")),
            Some(MessageContent::Parts(parts)) => {
                for p in parts {
                    f(&p.kind, at("content"));
                    if let Some(t) = &p.text {
                        f(t, at("content"));
                    }
                    map_strs(&p.extra, &mut |s| f(s, at("content")));
                }
            }
            None => {}
        }
        for (s, field) in [
            (&m.name, "name"),
            (&m.tool_call_id, "tool_call_id"),
            (&m.reasoning_content, "reasoning_content"),
        ] {
            if let Some(s) = s {
                f(s, at(field));
            }
        }
        for call in m.tool_calls.iter().flatten() {
            let mut g = |s: &str| f(s, at("tool_calls"));
            call.id.as_deref().into_iter().for_each(&mut g);
            call.kind.as_deref().into_iter().for_each(&mut g);
            g(&call.function.name);
            json_strs(&call.function.arguments, &mut g);
            map_strs(&call.function.extra, &mut g);
            map_strs(&call.extra, &mut g);
        }
        for (k, v) in &m.extra {
            f(k, at(k));
            json_strs(v, &mut |s| f(s, at(k)));
        }
    }
    for (i, t) in request.tools.iter().flatten().enumerate() {
        json_strs(t, &mut |s| f(s, Loc::Tool(i)));
    }
    for (i, d) in request.documents.iter().flatten().enumerate() {
        json_strs(d, &mut |s| f(s, Loc::Document(i)));
    }
    for (k, v) in &request.chat_template_kwargs {
        json_strs(v, &mut |s| f(s, Loc::Kwarg(k)));
    }
}

fn json_mut(value: &mut Json, f: &mut dyn FnMut(&mut String)) {
    match value {
        Json::String(s) => f(s),
        Json::Array(items) => items.iter_mut().for_each(|v| json_mut(v, f)),
        Json::Object(map) => map_mut(map, f),
        _ => {}
    }
}

/// Rewrites values and keys (a map is rebuilt, in order, only when a key changes).
fn map_mut(map: &mut Map<String, Json>, f: &mut dyn FnMut(&mut String)) {
    let mut keys_change = false;
    for k in map.keys() {
        let mut key = k.clone();
        f(&mut key);
        keys_change |= key != *k;
    }
    if keys_change {
        let old = std::mem::take(map);
        for (mut k, v) in old {
            f(&mut k);
            map.insert(k, v);
        }
    }
    for v in map.values_mut() {
        json_mut(v, f);
    }
}

/// [`walk`]'s strings, rewritten in place by `f`.
fn rewrite(request: &mut ChatRequest, f: &mut dyn FnMut(&mut String)) {
    for m in &mut request.messages {
        rewrite_message(m, f);
    }
    for t in request.tools.iter_mut().flatten() {
        json_mut(t, f);
    }
    for d in request.documents.iter_mut().flatten() {
        json_mut(d, f);
    }
    for v in request.chat_template_kwargs.values_mut() {
        json_mut(v, f);
    }
}

fn rewrite_message(m: &mut Message, f: &mut dyn FnMut(&mut String)) {
    f(&mut m.role);
    match &mut m.content {
        Some(MessageContent::Text(t)) => f(t),
        Some(MessageContent::Parts(parts)) => {
            for p in parts {
                f(&mut p.kind);
                if let Some(t) = &mut p.text {
                    f(t);
                }
                map_mut(&mut p.extra, f);
            }
        }
        None => {}
    }
    for s in [&mut m.name, &mut m.tool_call_id, &mut m.reasoning_content]
        .into_iter()
        .flatten()
    {
        f(s);
    }
    for call in m.tool_calls.iter_mut().flatten() {
        if let Some(s) = &mut call.id {
            f(s);
        }
        if let Some(s) = &mut call.kind {
            f(s);
        }
        f(&mut call.function.name);
        json_mut(&mut call.function.arguments, f);
        map_mut(&mut call.function.extra, f);
        map_mut(&mut call.extra, f);
    }
    map_mut(&mut m.extra, f);
}

/// The first whole special-token text in the request and where it is.
pub(crate) fn first_special_text(
    request: &ChatRequest,
    st: &SpecialText,
) -> Option<(String, String)> {
    let mut found = None;
    walk(request, &mut |s, loc| {
        if found.is_none()
            && let Some(text) = st.first_text(s)
        {
            found = Some((loc.to_string(), text.to_owned()));
        }
    });
    found
}

/// The first string that needs marks, and where it is (`None`: no string does).
pub(crate) fn first_marked(request: &ChatRequest, st: &SpecialText) -> Option<String> {
    let mut found = None;
    walk(request, &mut |s, loc| {
        if found.is_none() && st.needs_marks(s) {
            found = Some(loc.to_string());
        }
    });
    found
}

/// Sentinels for one render: `base + index` stands for `alphabet[index]`.
pub(crate) struct Sentinels<'a> {
    st: &'a SpecialText,
    base: u32,
}

/// The private-use planes sentinels may take a window from (planes 15, 16;
/// the last two code points of each are noncharacters).
const PLANES: [(u32, u32); 2] = [(0xF_0000, 0xF_FFFE), (0x10_0000, 0x10_FFFE)];

impl<'a> Sentinels<'a> {
    /// A window of `alphabet.len()` code points that no string of the request
    /// and no char of the template uses.
    pub(crate) fn choose(
        st: &'a SpecialText,
        request: &ChatRequest,
        template: &str,
    ) -> Result<Self> {
        let mut used: Vec<u32> = Vec::new();
        let mut note = |s: &str| {
            used.extend(s.chars().map(u32::from).filter(|&c| c >= PLANES[0].0));
        };
        walk(request, &mut |s, _| note(s));
        note(template);
        used.sort_unstable();
        used.dedup();
        let d = u32::try_from(st.alphabet.len()).unwrap_or(u32::MAX);
        for (lo, hi) in PLANES {
            let mut base = lo;
            while base.checked_add(d).is_some_and(|end| end <= hi) {
                let end = base + d;
                let i = used.partition_point(|&c| c < base);
                match used.get(i) {
                    Some(&c) if c < end => base = c + 1,
                    _ => return Ok(Self { st, base }),
                }
            }
        }
        Err(Error::config(
            "encode_chat: no private-use window is free for special-token sentinels (the request uses too many private-use characters); refusing rather than guessing",
        ))
    }

    fn sentinel(&self, c: char) -> Option<char> {
        let i = *self.st.index.get(&c)?;
        char::from_u32(self.base + i)
    }

    /// The request with every marked range of every string replaced char for
    /// char by sentinels.
    pub(crate) fn protect(&self, request: &ChatRequest) -> ChatRequest {
        let mut out = request.clone();
        rewrite(&mut out, &mut |s| {
            if !self.st.needs_marks(s) {
                return;
            }
            let marks = self.st.marks(s);
            let mut new = String::with_capacity(s.len() + 16);
            for (i, c) in s.char_indices() {
                let marked = marks.iter().any(|r| r.start <= i && i < r.end);
                match self.sentinel(c).filter(|_| marked) {
                    Some(x) => new.push(x),
                    None => new.push(c),
                }
            }
            *s = new;
        });
        out
    }

    /// Maps sentinels in a rendered prompt back; returns the text and the
    /// (sorted, disjoint) byte ranges the sentinels became.
    pub(crate) fn restore(&self, rendered: &str) -> (String, Vec<Range<usize>>) {
        let mut text = String::with_capacity(rendered.len());
        let mut marked: Vec<Range<usize>> = Vec::new();
        let end = self.base + u32::try_from(self.st.alphabet.len()).unwrap_or(0);
        for c in rendered.chars() {
            let code = u32::from(c);
            let original = (code >= self.base && code < end)
                .then(|| self.st.alphabet.get((code - self.base) as usize))
                .flatten();
            match original {
                Some(&o) => {
                    let at = text.len();
                    text.push(o);
                    match marked.last_mut() {
                        Some(r) if r.end == at => r.end = text.len(),
                        _ => marked.push(at..text.len()),
                    }
                }
                None => text.push(c),
            }
        }
        (text, marked)
    }
}

/// Whether `range` overlaps any of the sorted, disjoint `marked` ranges.
pub(crate) fn touches(marked: &[Range<usize>], range: &Range<usize>) -> bool {
    let i = marked.partition_point(|r| r.end <= range.start);
    marked.get(i).is_some_and(|r| r.start < range.end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mock::MockTokenizer;
    use crate::special::ControlTokens;

    #[test]
    fn sentinels_round_trip_and_mark_only_request_bytes() {
        let st =
            SpecialText::new(&MockTokenizer::default(), &[], &ControlTokens::default()).unwrap();
        let request = ChatRequest::new(vec![Message::new("user", "hi <s> there </")]);
        let s = Sentinels::choose(&st, &request, "{{ x }}").unwrap();
        let protected = s.protect(&request);
        let content = match &protected.messages[0].content {
            Some(MessageContent::Text(t)) => t.clone(),
            _ => unreachable!(),
        };
        assert!(!st.has_text(&content));
        assert_eq!(content.chars().count(), "hi <s> there </".chars().count());
        let rendered = format!("<s>[{content}]</s>");
        let (text, marked) = s.restore(&rendered);
        assert_eq!(text, "<s>[hi <s> there </]</s>");
        assert_eq!(marked, vec![7..10, 17..19]);
        assert!(touches(&marked, &(7..10)));
        assert!(!touches(&marked, &(0..3)));
        assert!(!touches(&marked, &(20..24)));
    }

    #[test]
    fn sentinel_window_avoids_private_use_chars_in_the_request() {
        let st =
            SpecialText::new(&MockTokenizer::default(), &[], &ControlTokens::default()).unwrap();
        let taken: String = (0xF_0000..0xF_0004).filter_map(char::from_u32).collect();
        let request = ChatRequest::new(vec![Message::new("user", format!("{taken}<s>"))]);
        let s = Sentinels::choose(&st, &request, "").unwrap();
        assert!(s.base >= 0xF_0004);
        let protected = s.protect(&request);
        let Some(MessageContent::Text(t)) = &protected.messages[0].content else {
            unreachable!()
        };
        let (text, marked) = s.restore(t);
        assert_eq!(text, format!("{taken}<s>"));
        assert_eq!(marked, vec![taken.len()..taken.len() + 3]);
    }
}
