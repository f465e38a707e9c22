//! Where Jinja2's lexer and minijinja's read the same template differently, the template
//! rewritten so that minijinja reads what Jinja2 reads.
//!
//! **String literals.** Jinja2 decodes one with Python's `unicode-escape` codec (after
//! `encode("ascii", "backslashreplace")`); minijinja decodes JSON-style escapes. They differ on
//! a backslash before a newline (a line continuation: Python drops both, as Mistral Small
//! 3.1's published template relies on), `\a`, `\v`, `\UXXXXXXXX` and octal escapes above
//! `\377` (Python decodes them, minijinja keeps or refuses them), `\/` (Python keeps it,
//! minijinja drops the backslash) and a backslash before a non-ASCII char (Python sees that
//! char's `\xhh`, `\uXXXX` or `\UXXXXXXXX` spelling, so `"\é"` is the text `\xe9`). Every
//! literal whose two decodings differ is rewritten into one minijinja decodes to Python's value.
//!
//! **`{% raw %}`.** With `trim_blocks`, minijinja drops the newline right after `{% raw %}`;
//! Jinja2 trims only after `{% endraw %}` (its `raw_begin` rule has no `\n?` suffix), so
//! `{% raw %}\n{% endraw %}` is a newline there (vLLM's `template_dse_qwen2_vl.jinja` writes
//! its line breaks so). A second newline is inserted for minijinja to drop. Jinja2 has no
//! `{% raw +%}` (a syntax error there); a space before its `%}` makes minijinja refuse it too.

use std::fmt::Write as _;

use minijinja::machinery::Token;
use minijinja::syntax::SyntaxConfig;

/// What Python's decoding of one literal's body gives.
#[derive(Debug, PartialEq, Eq)]
enum Decoded {
    /// The literal's value.
    Text(String),
    /// Python raises (a truncated `\x`, `\u` or `\U` escape, a code point past U+10FFFF).
    Raises,
    /// A value a Rust string cannot hold (a surrogate) or a `\N{...}` name: left to minijinja.
    Unsupported,
}

/// The body of a string literal (between its quotes) decoded as Jinja2 decodes it.
fn python_unescape(body: &str) -> Decoded {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            return Decoded::Raises;
        };
        match d {
            '\n' => {}
            '\\' | '\'' | '"' => out.push(d),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut value = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                // At most 0o777: always a scalar value.
                match char::from_u32(value) {
                    Some(c) => out.push(c),
                    None => return Decoded::Unsupported,
                }
            }
            'x' | 'u' | 'U' => {
                let digits = match d {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut value: u32 = 0;
                for _ in 0..digits {
                    match chars.next().and_then(|c| c.to_digit(16)) {
                        Some(digit) => value = value.saturating_mul(16).saturating_add(digit),
                        None => return Decoded::Raises,
                    }
                }
                if value > 0x10FFFF {
                    return Decoded::Raises;
                }
                match char::from_u32(value) {
                    Some(c) => out.push(c),
                    None => return Decoded::Unsupported,
                }
            }
            'N' => return Decoded::Unsupported,
            // `backslashreplace` spelled the char out, and the backslash escapes a backslash.
            _ if !d.is_ascii() => {
                let code = u32::from(d);
                out.push('\\');
                // Writing to a String cannot fail.
                let _ = match code {
                    0..=0xFF => write!(out, "x{code:02x}"),
                    0x100..=0xFFFF => write!(out, "u{code:04x}"),
                    _ => write!(out, "U{code:08x}"),
                };
            }
            // Python keeps an unknown escape, backslash and all.
            _ => {
                out.push('\\');
                out.push(d);
            }
        }
    }
    Decoded::Text(out)
}

/// `value` as a double-quoted literal that minijinja decodes to exactly `value`.
fn minijinja_literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && u32::from(c) < 0x80 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The template rewritten where Jinja2 and minijinja would read it differently (string
/// literals, the newline after `{% raw %}`), or `None` when they agree (or the template does
/// not lex; compiling it then reports the error). A literal Python refuses becomes an
/// unterminated one, so the template fails to compile as it fails in Jinja2.
pub(crate) fn align_with_jinja2(source: &str, syntax: &SyntaxConfig) -> Option<String> {
    if !source.contains('\\') && !source.contains("raw") {
        return None;
    }
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for token in minijinja::machinery::tokenize(source, false, syntax.clone()) {
        let Ok((token, span)) = token else {
            return None;
        };
        let start = usize::try_from(span.start_offset).ok()?;
        let end = usize::try_from(span.end_offset).ok()?;
        let minijinja_value: &str = match &token {
            Token::Str(s) => s,
            Token::String(s) => s,
            Token::TemplateData(minijinja_data) => {
                // The span covers the data minijinja keeps; a raw block's data runs from its
                // tag's `%}` to the `{%` of `{% endraw %}`, past the whitespace it trimmed.
                let data_start = source.get(..start)?.trim_end().len();
                let rest = source.get(end..)?;
                let data_end = end + (rest.len() - rest.trim_start().len());
                if let Some(raw_end) = raw_tag_end(source.get(..data_start)?) {
                    raw_block_edits(
                        source,
                        data_start,
                        data_end,
                        raw_end,
                        minijinja_data,
                        &mut edits,
                    )?;
                }
                continue;
            }
            _ => continue,
        };
        let raw = source.get(start..end)?;
        let Some(body) = raw.get(1..raw.len().saturating_sub(1)) else {
            continue;
        };
        if !body.contains('\\') {
            continue;
        }
        match python_unescape(body) {
            Decoded::Text(value) if value == minijinja_value => {}
            Decoded::Text(value) => edits.push((start, end, minijinja_literal(&value))),
            Decoded::Raises => edits.push((start, end, "\"".to_owned())),
            Decoded::Unsupported => {}
        }
    }
    if edits.is_empty() {
        return None;
    }
    super::syntax::splice(source, edits)
}

/// How the `{% raw %}` tag before a raw block's data ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RawTagEnd {
    /// `%}`
    Plain,
    /// `-%}`
    Minus,
    /// `+%}`
    Plus,
}

impl RawTagEnd {
    fn len(self) -> usize {
        match self {
            RawTagEnd::Plain => 2,
            RawTagEnd::Minus | RawTagEnd::Plus => 3,
        }
    }
}

/// The end of the `{% raw %}` tag `before` ends with, if it does.
fn raw_tag_end(before: &str) -> Option<RawTagEnd> {
    let tag = before.strip_suffix("%}")?;
    let (tag, end) = if let Some(tag) = tag.strip_suffix('+') {
        (tag, RawTagEnd::Plus)
    } else if let Some(tag) = tag.strip_suffix('-') {
        (tag, RawTagEnd::Minus)
    } else {
        (tag, RawTagEnd::Plain)
    };
    let inner = &tag[tag.rfind("{%")? + 2..];
    let inner = inner.strip_prefix(['-', '+']).unwrap_or(inner);
    (inner.trim_matches(|c: char| c.is_ascii_whitespace()) == "raw").then_some(end)
}

/// Python's `str.isspace` (what `\s`, `strip` and `rstrip` use in Jinja2's lexer): Unicode
/// White_Space and the four separators U+001C..U+001F.
fn is_python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// The data of the raw block at `source[start..end]` as Jinja2 (`trim_blocks`, `lstrip_blocks`)
/// reads it, given how its `{% raw %}` tag ends and how the `{% endraw %}` at `end` starts.
/// `None` for `{% raw +%}`, which Jinja2 refuses.
fn jinja2_raw_data(data: &str, raw_end: RawTagEnd, endraw_sign: Option<char>) -> Option<&str> {
    let mut line_starting = false;
    let mut data = data;
    match raw_end {
        RawTagEnd::Plus => return None,
        // `raw_begin` takes `-%}\s*`; no `\n?` after a plain `%}`.
        RawTagEnd::Minus => {
            let rest = data.trim_start_matches(is_python_space);
            line_starting = data[..data.len() - rest.len()].ends_with('\n');
            data = rest;
        }
        RawTagEnd::Plain => {}
    }
    Some(match endraw_sign {
        Some('-') => data.trim_end_matches(is_python_space),
        Some(_) => data,
        // `lstrip_blocks`: whitespace alone between a line's start and the tag goes.
        None => {
            let line = data.rfind('\n').map_or(0, |nl| nl + 1);
            if (line > 0 || line_starting) && data[line..].chars().all(is_python_space) {
                &data[..line]
            } else {
                data
            }
        }
    })
}

/// The edits that make minijinja read the raw block whose data is `source[start..end]` as
/// Jinja2 does: where the two differ, the block's tags keep and give nothing (`+`) and its data
/// is Jinja2's; a `{% raw +%}` gets a space before its `%}` (Jinja2 reads `raw` as an unknown
/// tag there, and so does minijinja then).
fn raw_block_edits(
    source: &str,
    start: usize,
    end: usize,
    raw_end: RawTagEnd,
    minijinja_data: &str,
    edits: &mut Vec<(usize, usize, String)>,
) -> Option<()> {
    let tag_end = start.checked_sub(raw_end.len())?;
    let endraw = source.get(end..)?.strip_prefix("{%")?;
    let endraw_sign = endraw.chars().next().filter(|c| matches!(c, '-' | '+'));
    let Some(data) = jinja2_raw_data(source.get(start..end)?, raw_end, endraw_sign) else {
        edits.push((start - 2, start - 2, " ".to_owned()));
        return Some(());
    };
    if data != minijinja_data {
        edits.push((tag_end, start, "+%}".to_owned()));
        edits.push((start, end, data.to_owned()));
        let sign_end = end + 2 + endraw_sign.map_or(0, char::len_utf8);
        edits.push((end, sign_end, "{%+".to_owned()));
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(body: &str) -> String {
        match python_unescape(body) {
            Decoded::Text(s) => s,
            other => panic!("{body:?}: {other:?}"),
        }
    }

    /// Each body's value under Python's `unicode-escape` after `backslashreplace`, as
    /// `jinja2.lexer` computes it (checked against CPython 3.11).
    #[test]
    fn bodies_decode_as_python_does() {
        let table: &[(&str, &str)] = &[
            ("plain", "plain"),
            ("a\\\nb", "ab"),
            ("\\\\\n", "\\\n"),
            ("\\n\\t\\r", "\n\t\r"),
            ("\\a\\v\\b\\f", "\x07\x0b\x08\x0c"),
            ("\\/", "\\/"),
            ("\\d\\s\\w", "\\d\\s\\w"),
            ("\\'\\\"", "'\""),
            ("\\x41\\u00e9\\U0001F600", "Aé😀"),
            ("\\101\\0\\7770", "A\0ǿ0"),
            ("\\é", "\\xe9"),
            ("\\中", "\\u4e2d"),
            ("\\😀", "\\U0001f600"),
            ("é\\\\é", "é\\é"),
        ];
        for (body, want) in table {
            assert_eq!(decoded(body), *want, "body {body:?}");
        }
        assert_eq!(python_unescape("\\x4"), Decoded::Raises);
        assert_eq!(python_unescape("\\u12g4"), Decoded::Raises);
        assert_eq!(python_unescape("\\U00110000"), Decoded::Raises);
        assert_eq!(python_unescape("\\ud800"), Decoded::Unsupported);
        assert_eq!(python_unescape("\\N{BULLET}"), Decoded::Unsupported);
    }

    /// `template` aligned and rendered by minijinja, with transformers' `trim_blocks` and
    /// `lstrip_blocks` when `trimmed`.
    fn render_with(template: &str, trimmed: bool) -> Result<String, minijinja::Error> {
        let syntax = SyntaxConfig::builder()
            .trim_blocks(trimmed)
            .lstrip_blocks(trimmed)
            .build()?;
        let source = align_with_jinja2(template, &syntax).unwrap_or_else(|| template.to_owned());
        let mut env = minijinja::Environment::new();
        env.set_syntax(syntax);
        env.add_template_owned("t", source)?;
        env.get_template("t")?.render(())
    }

    fn render(template: &str) -> Result<String, minijinja::Error> {
        render_with(template, false)
    }

    #[test]
    fn literals_render_as_jinja2() {
        assert_eq!(
            render("{{ \"Paris.\\\nYour\" }}|{{ '\\a' ~ \"\\/\" }}").unwrap(),
            "Paris.Your|\x07\\/"
        );
        assert_eq!(render("{{ \"\\é\" }}").unwrap(), "\\xe9");
        // Untouched where the two decodings agree, and in text outside expressions.
        assert_eq!(render("a\\\nb{{ 'x\\ny' }}").unwrap(), "a\\\nbx\ny");
        // Python refuses a truncated escape; so does the rewritten template.
        assert!(render("{{ '\\x4' }}").is_err());
    }

    fn render_trimmed(template: &str) -> Result<String, minijinja::Error> {
        render_with(template, true)
    }

    /// What Jinja2 3.1.6 renders with `trim_blocks` and `lstrip_blocks` (transformers' setup).
    #[test]
    fn raw_blocks_keep_their_first_newline() {
        let table: &[(&str, &str)] = &[
            ("a{% raw %}\n{% endraw %}b", "a\nb"),
            ("a{% raw %}\n\nx{% endraw %}\nb", "a\n\nxb"),
            ("a{%raw%}\nx{%endraw%}", "a\nx"),
            ("a{% raw -%}\n x{% endraw %}", "ax"),
            ("a{% raw %}x\n{% endraw %}", "ax\n"),
            ("a{% if true %}\nraw{% endif %}", "araw"),
            ("{%- raw %}  {% endraw %}|", "  |"),
            ("{% raw %}a\n  {% endraw %}|", "a\n|"),
            ("{% raw %}a\n \u{3000}{% endraw %}|", "a\n|"),
            ("{% raw %}a\n \u{1c}{% endraw %}|", "a\n|"),
            ("{% raw -%}\n  x\u{1c} {%- endraw %}|", "x|"),
            ("{%- raw -%}\u{1c}{%+ endraw +%}|", "|"),
            ("{% raw -%} \n  {% endraw %}|", "|"),
            ("x{% raw %}\t{%+ endraw %}|", "x\t|"),
        ];
        for (template, want) in table {
            assert_eq!(
                render_trimmed(template).unwrap(),
                *want,
                "template {template:?}"
            );
        }
        // Jinja2 has no `{% raw +%}`: a syntax error there.
        assert!(render_trimmed("a{% raw +%}\nx{% endraw %}").is_err());
    }
}
