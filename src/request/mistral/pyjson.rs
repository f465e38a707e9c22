//! Python's `json.dumps(value, ensure_ascii=False)` and `json.loads`, as
//! mistral_common applies them to tools, arguments and tool results: the
//! model saw that exact text (`", "` and `": "` separators, floats as
//! `repr`), so the ids depend on it.

use serde_json::Value as Json;

/// `json.dumps(value, ensure_ascii=False)`.
pub(super) fn dumps(value: &Json) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// `json.loads(text)`, `None` where Python raises `JSONDecodeError`.
pub(super) fn loads(text: &str) -> Option<Json> {
    serde_json::from_str(text).ok()
}

fn write(value: &Json, out: &mut String) {
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            if n.is_f64() {
                out.push_str(&float_repr(n.as_f64().unwrap_or_default()));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Json::String(s) => write_str(s, out),
        Json::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(item, out);
            }
            out.push(']');
        }
        Json::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_str(k, out);
                out.push_str(": ");
                write(v, out);
            }
            out.push('}');
        }
    }
}

/// A JSON string as Python writes it without `ensure_ascii`: only `"`, `\`
/// and control characters below U+0020 are escaped.
fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `float.__repr__`: the shortest round-trip digits, positional
/// for exponents in `-4..16`, else `d.ddde+XX`.
fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // `{:e}` gives the shortest round-trip digits: `-1.2345e-7`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        if exp < 0 {
            let zeros = "0".repeat((-exp - 1) as usize);
            format!("{sign}0.{zeros}{digits}")
        } else if exp + 1 >= n {
            let zeros = "0".repeat((exp + 1 - n) as usize);
            format!("{sign}{digits}{zeros}.0")
        } else {
            let (int, frac) = digits.split_at((exp + 1) as usize);
            format!("{sign}{int}.{frac}")
        }
    } else {
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_as_python_repr() {
        for (f, want) in [
            (1.0, "1.0"),
            (2.5, "2.5"),
            (1e20, "1e+20"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-3.25e-7, "-3.25e-07"),
            (123.456, "123.456"),
            (1.5e300, "1.5e+300"),
        ] {
            assert_eq!(float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn separators_and_escapes() {
        let v: Json =
            serde_json::from_str(r#"{"a": [1, 2.0, "x\"\n\u0001é"], "b": null}"#).unwrap();
        assert_eq!(
            dumps(&v),
            "{\"a\": [1, 2.0, \"x\\\"\\n\\u0001é\"], \"b\": null}"
        );
    }
}
