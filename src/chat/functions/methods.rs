//! The unknown-method callback: the Python methods templates call on strings, lists and dicts
//! (`str.split`, `str.partition`, `list.index`, `dict.copy`, ...), with the sandbox's refusal of
//! the mutating ones.

use minijinja::value::{Kwargs, Value, ValueKind, from_args};
use minijinja::{Error, ErrorKind, State};

use super::{budget, charge_replace, pad_width, py_center, py_replace, pyfmt, type_error};

/// Python's `str.title()`: a cased character is upper-cased after an uncased one.
fn py_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_cased = false;
    for c in s.chars() {
        let cased = c.is_uppercase() || c.is_lowercase();
        if cased {
            if prev_cased {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
        } else {
            out.push(c);
        }
        prev_cased = cased;
    }
    out
}

/// Python's `str.split(sep=None, maxsplit=-1)` (and `rsplit` when `from_right`).
fn py_split(s: &str, sep: Option<&str>, maxsplit: i64, from_right: bool) -> Result<Value, Error> {
    let limit = usize::try_from(maxsplit).ok();
    let mut parts: Vec<&str> = Vec::new();
    match sep {
        Some("") => return Err(type_error("ValueError: empty separator")),
        Some(sep) => match (limit, from_right) {
            (None, _) => parts.extend(s.split(sep)),
            (Some(n), false) => parts.extend(s.splitn(n + 1, sep)),
            (Some(n), true) => {
                parts.extend(s.rsplitn(n + 1, sep));
                parts.reverse();
            }
        },
        None => {
            // Runs of whitespace separate; leading/trailing whitespace yields no empty parts,
            // except that the unsplit remainder keeps its inner (and outer) whitespace.
            let mut remaining = limit.unwrap_or(usize::MAX);
            if from_right {
                let mut rest = pyfmt::py_rstrip(s);
                while !rest.is_empty() {
                    if remaining == 0 {
                        parts.push(rest);
                        break;
                    }
                    match rest.rfind(pyfmt::is_py_space) {
                        Some(i) => {
                            let ws_len = rest[i..].chars().next().map_or(1, char::len_utf8);
                            parts.push(&rest[i + ws_len..]);
                            rest = pyfmt::py_rstrip(&rest[..i]);
                            remaining -= 1;
                        }
                        None => {
                            parts.push(rest);
                            break;
                        }
                    }
                }
                parts.reverse();
            } else {
                let mut rest = pyfmt::py_lstrip(s);
                while !rest.is_empty() {
                    if remaining == 0 {
                        parts.push(rest);
                        break;
                    }
                    match rest.find(pyfmt::is_py_space) {
                        Some(i) => {
                            parts.push(&rest[..i]);
                            rest = pyfmt::py_lstrip(&rest[i..]);
                            remaining -= 1;
                        }
                        None => {
                            parts.push(rest);
                            break;
                        }
                    }
                }
            }
        }
    }
    Ok(Value::from_iter(parts.into_iter().map(Value::from)))
}

/// Python's `str.splitlines(keepends=False)` line boundaries.
pub(super) fn py_splitlines(s: &str, keepends: bool) -> Value {
    let mut out = Vec::new();
    let mut start = 0;
    let mut iter = s.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if !is_break {
            continue;
        }
        let mut end = i + c.len_utf8();
        if c == '\r'
            && let Some((_, '\n')) = iter.peek()
        {
            iter.next();
            end += 1;
        }
        out.push(Value::from(if keepends {
            &s[start..end]
        } else {
            &s[start..i]
        }));
        start = end;
    }
    if start < s.len() {
        out.push(Value::from(&s[start..]));
    }
    Value::from(out)
}

/// `str.strip(chars)`, `lstrip` and `rstrip` (`chars` `None`: Python's whitespace).
fn strip_with(s: &str, chars: Option<&Value>, left: bool, right: bool) -> Result<Value, Error> {
    let set: Option<Vec<char>> = match chars {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => match v.as_str() {
            Some(c) => Some(c.chars().collect()),
            None => return Err(type_error("strip arg must be None or str")),
        },
    };
    let out = match set {
        None => match (left, right) {
            (true, true) => pyfmt::py_strip(s),
            (true, false) => pyfmt::py_lstrip(s),
            _ => pyfmt::py_rstrip(s),
        },
        Some(set) => {
            let set = set.as_slice();
            match (left, right) {
                (true, true) => s.trim_matches(set),
                (true, false) => s.trim_start_matches(set),
                _ => s.trim_end_matches(set),
            }
        }
    };
    Ok(Value::from(out))
}

/// The sandbox's error for a mutating `list` or `dict` method.
fn unsafe_attribute(value: &Value, method: &str) -> Error {
    let type_name = match value.kind() {
        ValueKind::Seq => "list",
        ValueKind::Map => "dict",
        _ => "object",
    };
    Error::new(
        ErrorKind::InvalidOperation,
        format!("SecurityError: access to attribute '{method}' of '{type_name}' object is unsafe."),
    )
}

/// Python's `str` methods: `None` where `method` is none of ours.
fn string_method(s: &str, method: &str, args: &[Value]) -> Option<Result<Value, Error>> {
    Some(match method {
        "strip" | "lstrip" | "rstrip" => from_args::<(Option<&Value>,)>(args)
            .and_then(|(c,)| strip_with(s, c, method != "rstrip", method != "lstrip")),
        "split" | "rsplit" => str_split(s, method, args),
        "splitlines" => from_args::<(Option<bool>,)>(args)
            .map(|(keep,)| py_splitlines(s, keep.unwrap_or(false))),
        "removeprefix" => {
            from_args::<(&str,)>(args).map(|(p,)| Value::from(s.strip_prefix(p).unwrap_or(s)))
        }
        "removesuffix" => {
            from_args::<(&str,)>(args).map(|(p,)| Value::from(s.strip_suffix(p).unwrap_or(s)))
        }
        "partition" | "rpartition" => str_partition(s, method, args),
        "index" | "rindex" => str_index(s, method, args),
        "join" => str_join(s, args),
        "replace" => from_args::<(&str, &str, Option<i64>)>(args).and_then(|(from, to, count)| {
            charge_replace(s, from, to)?;
            Ok(Value::from(py_replace(s, from, to, count)))
        }),
        "isspace" => from_args::<()>(args)
            .map(|()| Value::from(!s.is_empty() && s.chars().all(pyfmt::is_py_space))),
        "casefold" => from_args::<()>(args).map(|()| Value::from(s.to_lowercase())),
        "swapcase" => from_args::<()>(args).map(|()| Value::from(py_swapcase(s))),
        "zfill" => str_zfill(s, args),
        "title" => from_args::<()>(args).map(|()| Value::from(py_title(s))),
        "center" | "ljust" | "rjust" => str_pad(s, method, args),
        _ => return None,
    })
}

/// `str.split(sep=None, maxsplit=-1)` and `rsplit`: the arguments, positional or by keyword.
fn str_split(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    from_args::<(Option<Value>, Option<i64>, Kwargs)>(args).and_then(|(sep, max, kw)| {
        let sep = match kw.get::<Option<Value>>("sep")? {
            Some(v) => Some(v),
            None => sep,
        };
        let max = kw.get::<Option<i64>>("maxsplit")?.or(max).unwrap_or(-1);
        kw.assert_all_used()?;
        let sep = match &sep {
            Some(v) if v.is_none() => None,
            Some(v) => Some(
                v.as_str()
                    .ok_or_else(|| type_error("must be str or None"))?,
            ),
            None => None,
        };
        py_split(s, sep, max, method == "rsplit")
    })
}

/// `str.partition(sep)` and `rpartition`: a `(head, sep, tail)` tuple.
fn str_partition(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    from_args::<(&str,)>(args).and_then(|(sep,)| {
        if sep.is_empty() {
            return Err(type_error("ValueError: empty separator"));
        }
        let found = if method == "partition" {
            s.find(sep)
        } else {
            s.rfind(sep)
        };
        let parts = match found {
            Some(i) => [&s[..i], sep, &s[i + sep.len()..]],
            None if method == "partition" => [s, "", ""],
            None => ["", "", s],
        };
        Ok(Value::from(minijinja::value::Tuple::from(
            parts.map(Value::from),
        )))
    })
}

/// `str.index(sub)` and `rindex`: a char index, or Python's `ValueError`.
fn str_index(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    from_args::<(&str,)>(args).and_then(|(sub,)| {
        let found = if method == "index" {
            s.find(sub)
        } else {
            s.rfind(sub)
        };
        match found {
            Some(i) => Ok(Value::from(s[..i].chars().count())),
            None => Err(type_error("ValueError: substring not found")),
        }
    })
}

/// `s.join(items)`: strings only, each charged before it is appended.
fn str_join(s: &str, args: &[Value]) -> Result<Value, Error> {
    from_args::<(&Value,)>(args).and_then(|(items,)| {
        let mut out = String::new();
        for (i, item) in items.try_iter()?.enumerate() {
            let Some(text) = item.as_str() else {
                return Err(type_error(format!(
                    "sequence item {i}: expected str instance, {} found",
                    item.kind()
                )));
            };
            budget::charge_bytes(text.len().saturating_add(s.len()))?;
            budget::charge_work(1)?;
            if i > 0 {
                out.push_str(s);
            }
            out.push_str(text);
        }
        Ok(Value::from(out))
    })
}

/// Python's `str.swapcase()`.
fn py_swapcase(s: &str) -> String {
    s.chars()
        .flat_map(|c| -> Vec<char> {
            if c.is_uppercase() {
                c.to_lowercase().collect()
            } else if c.is_lowercase() {
                c.to_uppercase().collect()
            } else {
                vec![c]
            }
        })
        .collect::<String>()
}

/// `str.zfill(width)`: zeros after a leading sign, the width bounded by `MAX_PAD`.
fn str_zfill(s: &str, args: &[Value]) -> Result<Value, Error> {
    from_args::<(i64,)>(args).and_then(|(width,)| {
        let len = s.chars().count();
        let width = pad_width(width)?;
        if width <= len {
            return Ok(Value::from(s));
        }
        let pad = "0".repeat(width - len);
        Ok(match s.chars().next() {
            Some(sign @ ('+' | '-')) => Value::from(format!("{sign}{pad}{}", &s[1..])),
            _ => Value::from(format!("{pad}{s}")),
        })
    })
}

/// `str.center(width, fill=' ')`, `ljust` and `rjust`, the width bounded like `zfill`'s.
fn str_pad(s: &str, method: &str, args: &[Value]) -> Result<Value, Error> {
    from_args::<(i64, Option<&str>)>(args).and_then(|(width, fill)| {
        let fill = match fill {
            None => ' ',
            Some(f) => {
                let mut it = f.chars();
                match (it.next(), it.next()) {
                    (Some(c), None) => c,
                    _ => {
                        return Err(type_error(
                            "The fill character must be exactly one character long",
                        ));
                    }
                }
            }
        };
        let width = pad_width(width)?;
        let len = s.chars().count();
        if width <= len {
            return Ok(Value::from(s));
        }
        let pad = |n: usize| std::iter::repeat_n(fill, n).collect::<String>();
        Ok(Value::from(match method {
            "ljust" => format!("{s}{}", pad(width - len)),
            "rjust" => format!("{}{s}", pad(width - len)),
            _ => py_center(s, width, fill),
        }))
    })
}

/// Python's `list` methods: `None` where `method` is none of ours.
fn seq_method(value: &Value, method: &str, args: &[Value]) -> Option<Result<Value, Error>> {
    Some(match method {
        "index" => from_args::<(&Value,)>(args).and_then(|(needle,)| {
            for (i, item) in value.try_iter()?.enumerate() {
                if item == *needle {
                    return Ok(Value::from(i));
                }
            }
            Err(type_error("ValueError: value is not in list"))
        }),
        "copy" => from_args::<()>(args).and_then(|()| Ok(Value::from_iter(value.try_iter()?))),
        "append" | "extend" | "insert" | "pop" | "remove" | "clear" | "sort" | "reverse" => {
            Err(unsafe_attribute(value, method))
        }
        _ => return None,
    })
}

/// Python's `dict` methods: `None` where `method` is none of ours.
fn map_method(value: &Value, method: &str, args: &[Value]) -> Option<Result<Value, Error>> {
    Some(match method {
        "copy" => from_args::<()>(args).map(|()| {
            let pairs = value
                .as_object()
                .and_then(|o| o.try_iter_pairs())
                .map(|p| p.collect::<Vec<_>>())
                .unwrap_or_default();
            Value::from_pairs(pairs)
        }),
        "pop" | "popitem" | "setdefault" | "update" | "clear" => {
            Err(unsafe_attribute(value, method))
        }
        _ => return None,
    })
}

/// The unknown-method callback: Python methods on strings, lists and dicts, first ours, then
/// minijinja-contrib's `pycompat` ones.
pub(crate) fn python_methods(
    state: &mut State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> Result<Value, Error> {
    let ours = match value.kind() {
        ValueKind::String => string_method(value.as_str().unwrap_or_default(), method, args),
        ValueKind::Seq => seq_method(value, method, args),
        ValueKind::Map => map_method(value, method, args),
        _ => None,
    };
    match ours {
        Some(result) => result,
        None => minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str, sep: Option<&str>, max: i64, right: bool) -> Vec<String> {
        py_split(s, sep, max, right)
            .and_then(|v| {
                v.try_iter().map(|it| {
                    it.map(|x| x.as_str().unwrap_or_default().to_owned())
                        .collect()
                })
            })
            .unwrap_or_default()
    }

    #[test]
    fn split_matches_python() {
        assert_eq!(split("  a  b c ", None, -1, false), ["a", "b", "c"]);
        assert_eq!(split("  a  b c ", None, 1, false), ["a", "b c "]);
        assert_eq!(split("  a  b c ", None, 1, true), ["  a  b", "c"]);
        assert_eq!(split("a,b,,c", Some(","), -1, false), ["a", "b", "", "c"]);
        assert_eq!(split("a,b,c", Some(","), 1, true), ["a,b", "c"]);
        assert_eq!(split("", None, -1, false), Vec::<String>::new());
        assert_eq!(split("", Some(","), -1, false), [""]);
    }
}
