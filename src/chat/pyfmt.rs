//! Python's value formatting, re-implemented over minijinja values: `str()`, `repr()`,
//! `float.__repr__` and `json.dumps`, so that templates print what Jinja2 under transformers
//! prints.

use std::fmt::Write as _;

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind};

use super::budget;

/// How deep nested containers may be before formatting gives up (Python would hit its own
/// recursion limit near 1000; values built from JSON cannot be cyclic, but they can be deep).
const MAX_DEPTH: usize = 256;

/// `str.isspace()` for one character: Python's whitespace set, which (unlike Rust's
/// `char::is_whitespace`) includes the information separators U+001C..U+001F.
pub(crate) fn is_py_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{0b}'
            | '\u{0c}'
            | '\r'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// `str.strip()` without arguments.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// `str.rstrip()` without arguments.
pub(crate) fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

/// `str.lstrip()` without arguments.
pub(crate) fn py_lstrip(s: &str) -> &str {
    s.trim_start_matches(is_py_space)
}

/// `float.__repr__` (which is also `str(float)`): the shortest round-tripping digits, in
/// positional notation for exponents in `-4..16` and scientific notation otherwise.
pub(crate) fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` prints the shortest round-tripping digits, e.g. `-1.2345e-5`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (sci.as_str(), 0),
    };
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let mut out = String::with_capacity(digits.len() + 8);
    if neg {
        out.push('-');
    }
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", exp.unsigned_abs());
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = usize::try_from(exp).unwrap_or(0) + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            let (int_part, frac) = digits.split_at(int_len);
            out.push_str(int_part);
            out.push('.');
            out.push_str(frac);
        }
    }
    out
}

/// Whether Python's `str.isprintable()` holds for `c` (approximated without the full Unicode
/// tables: control, format, separator, surrogate and private-use characters are not printable).
fn is_py_printable(c: char) -> bool {
    let cp = u32::from(c);
    if c == ' ' {
        return true;
    }
    !(cp < 0x20
        || (0x7f..=0xa0).contains(&cp)
        || cp == 0xad
        || (0x600..=0x605).contains(&cp)
        || cp == 0x61c
        || cp == 0x6dd
        || cp == 0x70f
        || cp == 0x1680
        || cp == 0x180e
        || (0x2000..=0x200f).contains(&cp)
        || (0x2028..=0x202f).contains(&cp)
        || (0x205f..=0x2064).contains(&cp)
        || (0x2066..=0x206f).contains(&cp)
        || cp == 0x3000
        || (0xd800..=0xf8ff).contains(&cp)
        || cp == 0xfeff
        || (0xfff9..=0xfffb).contains(&cp)
        || (0xe0000..=0xe007f).contains(&cp)
        || cp >= 0xf0000)
}

/// `repr(str)`.
pub(crate) fn write_str_repr(out: &mut String, s: &str) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_py_printable(c) => out.push(c),
            c => {
                let cp = u32::from(c);
                let _ = if cp <= 0xff {
                    write!(out, "\\x{cp:02x}")
                } else if cp <= 0xffff {
                    write!(out, "\\u{cp:04x}")
                } else {
                    write!(out, "\\U{cp:08x}")
                };
            }
        }
    }
    out.push(quote);
}

fn depth_error() -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        "value is nested too deeply to be formatted",
    )
}

/// Writes a number the way Python prints it (`int.__repr__` / `float.__repr__`).
fn write_number(out: &mut String, value: &Value) {
    if value.is_integer() {
        let _ = write!(out, "{value}");
    } else {
        match f64::try_from(value.clone()) {
            Ok(f) => out.push_str(&py_float_repr(f)),
            Err(_) => {
                let _ = write!(out, "{value}");
            }
        }
    }
}

/// `str(value)`: what `{{ value }}` prints in Jinja2.
pub(crate) fn write_py_str(out: &mut String, value: &Value) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Undefined => Ok(()),
        ValueKind::String => {
            out.push_str(value.as_str().unwrap_or_default());
            Ok(())
        }
        ValueKind::Number => {
            write_number(out, value);
            Ok(())
        }
        _ => write_py_repr(out, value, 0),
    }
}

/// `str(value)` as a new string.
pub(crate) fn py_str(value: &Value) -> Result<String, Error> {
    if let Some(s) = value.as_str() {
        return Ok(s.to_owned());
    }
    let mut out = String::new();
    write_py_str(&mut out, value)?;
    Ok(out)
}

/// `repr(value)`: how values print inside lists and dicts.
pub(crate) fn write_py_repr(out: &mut String, value: &Value, depth: usize) -> Result<(), Error> {
    if depth > MAX_DEPTH {
        return Err(depth_error());
    }
    match value.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if value.is_true() { "True" } else { "False" }),
        ValueKind::Number => write_number(out, value),
        ValueKind::String => write_str_repr(out, value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable if value.len().is_some() => {
            let tuple = value.is_tuple();
            out.push(if tuple { '(' } else { '[' });
            let mut n = 0usize;
            for item in value.try_iter()? {
                budget::check_room(out.len())?;
                if n > 0 {
                    out.push_str(", ");
                }
                write_py_repr(out, &item, depth + 1)?;
                n += 1;
            }
            if tuple {
                if n == 1 {
                    out.push(',');
                }
                out.push(')');
            } else {
                out.push(']');
            }
        }
        ValueKind::Map => {
            out.push('{');
            if let Some(obj) = value.as_object()
                && let Some(pairs) = obj.try_iter_pairs()
            {
                for (i, (k, v)) in pairs.enumerate() {
                    budget::check_room(out.len())?;
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_py_repr(out, &k, depth + 1)?;
                    out.push_str(": ");
                    write_py_repr(out, &v, depth + 1)?;
                }
            }
            out.push('}');
        }
        _ => {
            let _ = write!(out, "{value}");
        }
    }
    Ok(())
}

/// The options of transformers' `tojson` filter, which forwards them to `json.dumps`.
#[derive(Debug, Clone, Default)]
pub(crate) struct JsonOptions {
    /// `ensure_ascii`: escape every non-ASCII character (transformers' default: `False`).
    pub ensure_ascii: bool,
    /// `indent`: `None` for a single line, otherwise the string used per level.
    pub indent: Option<String>,
    /// `separators`: `(item_separator, key_separator)`; `None` for Python's defaults.
    pub separators: Option<(String, String)>,
    /// `sort_keys`.
    pub sort_keys: bool,
}

fn not_serializable(value: &Value) -> Error {
    let kind = match value.kind() {
        ValueKind::Undefined => "Undefined".to_owned(),
        kind => kind.to_string(),
    };
    Error::new(
        ErrorKind::InvalidOperation,
        format!("Object of type {kind} is not JSON serializable"),
    )
}

struct JsonWriter<'a> {
    out: String,
    opts: &'a JsonOptions,
    item_sep: &'a str,
    key_sep: &'a str,
}

impl JsonWriter<'_> {
    fn string(&mut self, s: &str) {
        let out = &mut self.out;
        out.push('"');
        let ascii = self.opts.ensure_ascii;
        let mut start = 0;
        for (i, c) in s.char_indices() {
            let esc: Option<&str> = match c {
                '"' => Some("\\\""),
                '\\' => Some("\\\\"),
                '\n' => Some("\\n"),
                '\r' => Some("\\r"),
                '\t' => Some("\\t"),
                '\u{08}' => Some("\\b"),
                '\u{0c}' => Some("\\f"),
                _ => None,
            };
            let needs_hex = c < ' ' || (ascii && c > '~');
            if esc.is_none() && !needs_hex {
                continue;
            }
            out.push_str(&s[start..i]);
            start = i + c.len_utf8();
            if let Some(esc) = esc {
                out.push_str(esc);
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
        out.push_str(&s[start..]);
        out.push('"');
    }

    fn newline(&mut self, level: usize) {
        if let Some(indent) = &self.opts.indent {
            self.out.push('\n');
            for _ in 0..level {
                self.out.push_str(indent);
            }
        }
    }

    fn float(&mut self, f: f64) {
        if f.is_nan() {
            self.out.push_str("NaN");
        } else if f.is_infinite() {
            self.out
                .push_str(if f < 0.0 { "-Infinity" } else { "Infinity" });
        } else {
            self.out.push_str(&py_float_repr(f));
        }
    }

    fn key(&mut self, key: &Value) -> Result<(), Error> {
        match key.kind() {
            ValueKind::String => self.string(key.as_str().unwrap_or_default()),
            ValueKind::Number if key.is_integer() => {
                let s = key.to_string();
                self.string(&s);
            }
            ValueKind::Number => {
                let f = f64::try_from(key.clone()).unwrap_or(f64::NAN);
                let mut tmp = JsonWriter {
                    out: String::new(),
                    opts: self.opts,
                    item_sep: self.item_sep,
                    key_sep: self.key_sep,
                };
                tmp.float(f);
                let s = tmp.out;
                self.string(&s);
            }
            ValueKind::Bool => self.string(if key.is_true() { "true" } else { "false" }),
            ValueKind::None => self.string("null"),
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "keys must be str, int, float, bool or None, not {}",
                        key.kind()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn value(&mut self, value: &Value, level: usize) -> Result<(), Error> {
        if level > MAX_DEPTH {
            return Err(depth_error());
        }
        match value.kind() {
            ValueKind::None => self.out.push_str("null"),
            ValueKind::Bool => self
                .out
                .push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => {
                if value.is_integer() {
                    let _ = write!(self.out, "{value}");
                } else {
                    let f = f64::try_from(value.clone()).map_err(|_| not_serializable(value))?;
                    self.float(f);
                }
            }
            ValueKind::String => self.string(value.as_str().unwrap_or_default()),
            ValueKind::Seq | ValueKind::Iterable if value.len().is_some() => {
                let items: Vec<Value> = value.try_iter()?.collect();
                if items.is_empty() {
                    self.out.push_str("[]");
                    return Ok(());
                }
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    budget::check_room(self.out.len())?;
                    if i > 0 {
                        self.out.push_str(self.item_sep);
                    }
                    self.newline(level + 1);
                    self.value(item, level + 1)?;
                }
                self.newline(level);
                self.out.push(']');
            }
            ValueKind::Map => {
                let mut pairs: Vec<(Value, Value)> = match value.as_object() {
                    Some(obj) => obj
                        .try_iter_pairs()
                        .map(|p| p.collect())
                        .unwrap_or_default(),
                    None => Vec::new(),
                };
                if pairs.is_empty() {
                    self.out.push_str("{}");
                    return Ok(());
                }
                if self.opts.sort_keys {
                    sort_keys(&mut pairs)?;
                }
                self.out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    budget::check_room(self.out.len())?;
                    if i > 0 {
                        self.out.push_str(self.item_sep);
                    }
                    self.newline(level + 1);
                    self.key(k)?;
                    self.out.push_str(self.key_sep);
                    self.value(v, level + 1)?;
                }
                self.newline(level);
                self.out.push('}');
            }
            _ => return Err(not_serializable(value)),
        }
        Ok(())
    }
}

/// `sorted(d.items())` as `json.dumps(sort_keys=True)` does: keys of one kind only.
fn sort_keys(pairs: &mut [(Value, Value)]) -> Result<(), Error> {
    let all_str = pairs.iter().all(|(k, _)| k.kind() == ValueKind::String);
    let all_num = pairs
        .iter()
        .all(|(k, _)| matches!(k.kind(), ValueKind::Number | ValueKind::Bool));
    if !all_str && !all_num {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "'<' not supported between instances of mixed key types",
        ));
    }
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(())
}

/// `json.dumps(value, ensure_ascii=..., indent=..., separators=..., sort_keys=...)`.
pub(crate) fn json_dumps(value: &Value, opts: &JsonOptions) -> Result<String, Error> {
    let (item_sep, key_sep) = match &opts.separators {
        Some((i, k)) => (i.as_str(), k.as_str()),
        None if opts.indent.is_some() => (",", ": "),
        None => (", ", ": "),
    };
    let mut w = JsonWriter {
        out: String::new(),
        opts,
        item_sep,
        key_sep,
    };
    w.value(value, 0)?;
    Ok(w.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_repr_matches_python() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (123456789.125, "123456789.125"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (-0.0, "-0.0"),
            (3.0e-310, "3e-310"),
            (f64::MAX, "1.7976931348623157e+308"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float_repr(*x), *want, "{x:e}");
        }
    }

    #[test]
    fn str_repr_quotes_like_python() {
        let mut s = String::new();
        write_str_repr(&mut s, "it's");
        assert_eq!(s, "\"it's\"");
        s.clear();
        write_str_repr(&mut s, "a'b\"c\n\u{7f}é\u{a0}");
        assert_eq!(s, "'a\\'b\"c\\n\\x7fé\\xa0'");
    }
}
