//! The filters, globals and Python methods that transformers' Jinja environment provides:
//! `tojson` (Python `json.dumps`), `raise_exception`, `strftime_now`, and the `str`/`list`/`dict`
//! methods that templates call, with the sandbox's refusal of mutating methods (in [`methods`]).

mod methods;

use minijinja::value::{Kwargs, Rest, Value, ValueKind};
use minijinja::{Error, ErrorKind, State};

use super::budget;
use super::pyfmt::{self, JsonOptions};
use methods::py_splitlines;
pub(crate) use methods::python_methods;

/// The context key under which a render passes its pinned "now" (`YYYY-MM-DDTHH:MM:SS`) to
/// `strftime_now`. It is not a valid identifier, so templates cannot read or shadow it.
pub(crate) const NOW_KEY: &str = "rtok.strftime_now";

/// Marks an error as raised by the template's `raise_exception(...)`.
#[derive(Debug)]
pub(crate) struct RaisedException(pub(crate) String);

impl std::fmt::Display for RaisedException {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RaisedException {}

/// `raise_exception(message)`: aborts the render with the template's message.
pub(crate) fn raise_exception(message: &Value) -> Result<Value, Error> {
    let message = pyfmt::py_str(message)?;
    Err(Error::new(ErrorKind::InvalidOperation, message.clone())
        .with_source(RaisedException(message)))
}

fn type_error(detail: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidOperation, detail.into())
}

/// transformers' `tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`,
/// which returns `json.dumps(...)` without Jinja's HTML escaping.
pub(crate) fn tojson(value: &Value, args: &[Value], kwargs: Kwargs) -> Result<Value, Error> {
    const NAMES: [&str; 4] = ["ensure_ascii", "indent", "separators", "sort_keys"];
    if args.len() > NAMES.len() {
        return Err(Error::from(ErrorKind::TooManyArguments));
    }
    let mut slots: [Option<Value>; 4] = Default::default();
    for (slot, arg) in slots.iter_mut().zip(args) {
        *slot = Some(arg.clone());
    }
    for (i, name) in NAMES.iter().enumerate() {
        if kwargs.has(name) {
            if slots[i].is_some() {
                return Err(type_error(format!(
                    "tojson() got multiple values for argument '{name}'"
                )));
            }
            slots[i] = Some(kwargs.get::<Value>(name)?);
        }
    }
    kwargs.assert_all_used()?;
    let [ensure_ascii, indent, separators, sort_keys] = slots;
    let mut opts = JsonOptions {
        ensure_ascii: ensure_ascii.is_some_and(|v| v.is_true()),
        sort_keys: sort_keys.is_some_and(|v| v.is_true()),
        ..JsonOptions::default()
    };
    if let Some(indent) = indent {
        opts.indent = match indent.kind() {
            ValueKind::None | ValueKind::Undefined => None,
            ValueKind::String => Some(indent.as_str().unwrap_or_default().to_owned()),
            ValueKind::Number | ValueKind::Bool => {
                let n = i64::try_from(indent.clone())
                    .map_err(|_| type_error("tojson(): indent must be an int or a string"))?;
                Some(" ".repeat(usize::try_from(n).unwrap_or(0).min(1024)))
            }
            _ => return Err(type_error("tojson(): indent must be an int or a string")),
        };
    }
    if let Some(separators) = separators
        && !separators.is_none()
        && !separators.is_undefined()
    {
        let parts: Vec<Value> = separators.try_iter()?.collect();
        match parts.as_slice() {
            [item, key] => match (item.as_str(), key.as_str()) {
                (Some(item), Some(key)) => {
                    opts.separators = Some((item.to_owned(), key.to_owned()));
                }
                _ => return Err(type_error("tojson(): separators must be strings")),
            },
            _ => {
                return Err(type_error(
                    "tojson(): separators must be an (item_separator, key_separator) pair",
                ));
            }
        }
    }
    let text = pyfmt::json_dumps(value, &opts)?;
    budget::charge_bytes(text.len())?;
    Ok(Value::from(text))
}

/// Jinja2's `string` filter: `str(value)`.
pub(crate) fn string(value: &Value) -> Result<Value, Error> {
    if value.kind() == ValueKind::String {
        return Ok(value.clone());
    }
    pyfmt::py_str(value).map(Value::from)
}

/// Jinja2's `trim` filter: `str(value).strip(chars)`.
pub(crate) fn trim(value: &Value, chars: Option<Value>) -> Result<Value, Error> {
    if chars.is_none()
        && let Some(s) = value.as_str()
    {
        let trimmed = pyfmt::py_strip(s);
        if trimmed.len() == s.len() {
            return Ok(value.clone());
        }
        return Ok(Value::from(trimmed));
    }
    let s = pyfmt::py_str(value)?;
    let trimmed = match chars.as_ref().and_then(|c| c.as_str()) {
        Some(chars) => {
            let set: Vec<char> = chars.chars().collect();
            s.trim_matches(set.as_slice())
        }
        None => pyfmt::py_strip(&s),
    };
    if trimmed.len() == s.len() {
        return Ok(Value::from(s));
    }
    Ok(Value::from(trimmed))
}

/// Jinja2's `length`/`count`: `len(value)`, which is 0 for an undefined value.
pub(crate) fn length(value: &Value) -> Result<Value, Error> {
    if value.is_undefined() {
        return Ok(Value::from(0));
    }
    minijinja::filters::length(value).map(Value::from)
}

/// Jinja2's `iterable` test: whether `iter(value)` works (strings, lists, dicts and undefined
/// do; `None`, numbers and booleans do not).
pub(crate) fn is_iterable(value: &Value) -> bool {
    match value.kind() {
        ValueKind::Undefined
        | ValueKind::String
        | ValueKind::Bytes
        | ValueKind::Seq
        | ValueKind::Map
        | ValueKind::Iterable => true,
        ValueKind::None | ValueKind::Bool | ValueKind::Number => false,
        _ => value.try_iter().is_ok(),
    }
}

/// Jinja2's `sequence` test: has `len()` and `[]` (strings, lists, dicts, undefined).
pub(crate) fn is_sequence(value: &Value) -> bool {
    matches!(
        value.kind(),
        ValueKind::Undefined
            | ValueKind::String
            | ValueKind::Bytes
            | ValueKind::Seq
            | ValueKind::Map
    )
}

/// Jinja2's `divisibleby` test, `value % num == 0`: a zero divisor raises
/// `ZeroDivisionError` (minijinja 3.0.5's test divides by it and panics).
pub(crate) fn is_divisible_by(value: &Value, num: &Value) -> Result<bool, Error> {
    let int = |v: &Value| match v.kind() {
        ValueKind::Bool => Some(i64::from(v.is_true())),
        ValueKind::Number if v.is_integer() => v.as_i64(),
        _ => None,
    };
    let float = |v: &Value| match v.kind() {
        ValueKind::Bool | ValueKind::Number => f64::try_from(v.clone()).ok(),
        _ => None,
    };
    if let (Some(a), Some(b)) = (int(value), int(num)) {
        if b == 0 {
            return Err(type_error("ZeroDivisionError: integer modulo by zero"));
        }
        // `i64::MIN % -1` overflows in Rust; it is 0 in Python.
        return Ok(a.checked_rem(b).unwrap_or(0) == 0);
    }
    match (float(value), float(num)) {
        (Some(_), Some(0.0)) => Err(type_error("ZeroDivisionError: float modulo")),
        (Some(a), Some(b)) => Ok(a % b == 0.0),
        _ => Ok(false),
    }
}

/// Jinja2's `attr` filter: attribute lookup only, so a dict's keys are not attributes.
pub(crate) fn attr(value: &Value, name: &Value) -> Result<Value, Error> {
    if value.kind() == ValueKind::Map {
        return Ok(Value::UNDEFINED);
    }
    minijinja::filters::attr(value, name)
}

/// The comparison class of a value for Python's `<`: values of different classes do not order.
fn order_class(value: &Value) -> u8 {
    match value.kind() {
        ValueKind::Bool | ValueKind::Number => 0,
        ValueKind::String => 1,
        ValueKind::Seq => 2,
        _ => 3,
    }
}

/// Jinja2's `sort`, refusing (like Python) to order values that do not compare.
pub(crate) fn sort(state: &State, value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let n = value.len().unwrap_or(0);
    budget::charge_items(n)?;
    budget::charge_work((n as u64).saturating_mul(u64::from(usize::BITS - n.leading_zeros()) + 1))?;
    if !kwargs.has("attribute") && !value.is_undefined() {
        let classes: Vec<u8> = value.try_iter()?.map(|item| order_class(&item)).collect();
        if classes.len() > 1 && classes.iter().any(|c| *c == 3 || *c != classes[0]) {
            return Err(type_error(
                "'<' not supported between instances of these types",
            ));
        }
    }
    minijinja::filters::sort(state, value, kwargs)
}

/// Jinja2's attribute getter for filters: `"a.b.0"` walks items, integers as indices.
fn lookup_path(item: &Value, path: &str) -> Value {
    let mut current = item.clone();
    for part in path.split('.') {
        let key = match part.parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => Value::from(part),
        };
        current = current.get_item(&key).unwrap_or(Value::UNDEFINED);
    }
    current
}

/// Jinja2's `join(d='', attribute=None)`: `d.join(str(item) for item in value)`.
pub(crate) fn join(
    value: &Value,
    joiner: Option<Value>,
    attribute: Option<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let joiner = match kwargs.get::<Option<Value>>("d")?.or(joiner) {
        Some(j) => pyfmt::py_str(&j)?,
        None => String::new(),
    };
    let attribute = kwargs.get::<Option<Value>>("attribute")?.or(attribute);
    kwargs.assert_all_used()?;
    if value.is_undefined() {
        return Ok(Value::from(""));
    }
    let mut out = String::new();
    for (i, item) in value.try_iter()?.enumerate() {
        let before = out.len();
        if i > 0 {
            out.push_str(&joiner);
        }
        budget::charge_work(1)?;
        match attribute.as_ref().and_then(|a| a.as_str()) {
            Some(path) => pyfmt::write_py_str(&mut out, &lookup_path(&item, path))?,
            None => pyfmt::write_py_str(&mut out, &item)?,
        }
        budget::charge_bytes(out.len() - before)?;
    }
    Ok(Value::from(out))
}

/// Python's `str.center(width, fill)`.
fn py_center(s: &str, width: usize, fill: char) -> String {
    let len = s.chars().count();
    if width <= len {
        return s.to_owned();
    }
    let total = width - len;
    // CPython: `left = marg / 2 + (marg & width & 1)`.
    let left = total / 2 + (total & width & 1);
    let mut out = String::with_capacity(s.len() + total);
    out.extend(std::iter::repeat_n(fill, left));
    out.push_str(s);
    out.extend(std::iter::repeat_n(fill, total - left));
    out
}

/// The widest padding `center`, `ljust`, `rjust` and `zfill` produce.
const MAX_PAD: usize = 1 << 20;

fn pad_width(width: i64) -> Result<usize, Error> {
    let width = usize::try_from(width).unwrap_or(0);
    if width > MAX_PAD {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "padded string is too large",
        ));
    }
    Ok(width)
}

/// Jinja2's `center(width=80)`.
pub(crate) fn center(value: &Value, width: Option<i64>) -> Result<Value, Error> {
    let s = pyfmt::py_str(value)?;
    Ok(Value::from(py_center(
        &s,
        pad_width(width.unwrap_or(80))?,
        ' ',
    )))
}

/// Jinja2's `wordcount`: the number of `\w+` runs.
pub(crate) fn wordcount(value: &Value) -> Result<Value, Error> {
    let s = pyfmt::py_str(value)?;
    let words = s
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .count();
    Ok(Value::from(words))
}

/// `strftime_now(format)`: `datetime.now().strftime(format)` (local time), or the render's
/// pinned time when the request carries one.
pub(crate) fn strftime_now(state: &State, format: &str) -> Result<Value, Error> {
    let now = match state.lookup(NOW_KEY) {
        Some(pinned) if pinned.as_str().is_some() => pinned
            .as_str()
            .unwrap_or_default()
            .parse::<jiff::civil::DateTime>()
            .map_err(|e| type_error(format!("strftime_now: invalid pinned time: {e}")))?,
        _ => jiff::Zoned::now().datetime(),
    };
    // A naive Python datetime prints `%z` and `%Z` as empty strings.
    let mut fmt = String::with_capacity(format.len());
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.peek() {
                Some('z' | 'Z') => {
                    chars.next();
                    continue;
                }
                Some('%') => {
                    chars.next();
                    fmt.push_str("%%");
                    continue;
                }
                _ => {}
            }
        }
        fmt.push(c);
    }
    jiff::fmt::strtime::format(fmt.as_str(), now)
        .map(Value::from)
        .map_err(|e| type_error(format!("strftime_now({format:?}): {e}")))
}

/// The filter every `{% for %}` iterable is wrapped in: Python's `for` raises on `None`,
/// numbers and booleans, and knows the length of a string or generator (`loop.last`,
/// `loop.length`), so strings and generators become lists first.
pub(crate) fn for_iter(value: Value) -> Result<Value, Error> {
    match value.kind() {
        ValueKind::None => Err(type_error("TypeError: 'NoneType' object is not iterable")),
        ValueKind::Bool => Err(type_error("TypeError: 'bool' object is not iterable")),
        ValueKind::Number => Err(type_error(format!(
            "TypeError: '{}' object is not iterable",
            if value.is_integer() { "int" } else { "float" }
        ))),
        ValueKind::String => {
            let s = value.as_str().unwrap_or_default();
            budget::charge_items(s.len())?;
            budget::charge_work(s.len() as u64)?;
            Ok(Value::from_iter(s.chars().map(Value::from)))
        }
        ValueKind::Iterable => collect_charged(&value),
        _ => Ok(value),
    }
}

/// The filter a slice with a step (`x[a:b:c]`) is rewritten to call: Python's slice, where
/// minijinja 3.0.5's walk down a sequence includes a given stop of 0 (`'abc'[:0:-1]` is `cba`,
/// Python `cb`) and indexes an empty one (`''[::-1]` panicked). Strings slice by char, other
/// sequences give lists; `None` and numbers raise as in Python; undefined stays undefined.
pub(crate) fn python_slice(
    value: Value,
    start: Value,
    stop: Value,
    step: Value,
) -> Result<Value, Error> {
    let bound = |v: &Value| -> Result<Option<i64>, Error> {
        if v.is_none() || v.is_undefined() {
            return Ok(None);
        }
        match v.kind() {
            ValueKind::Bool => Ok(Some(i64::from(v.is_true()))),
            ValueKind::Number if v.is_integer() => v.as_i64().map(Some).ok_or_else(|| {
                type_error("IndexError: cannot fit 'int' into an index-sized integer")
            }),
            _ => Err(type_error(
                "TypeError: slice indices must be integers or None or have an __index__ method",
            )),
        }
    };
    let (start, stop) = (bound(&start)?, bound(&stop)?);
    let step = bound(&step)?.unwrap_or(1);
    if step == 0 {
        return Err(type_error("ValueError: slice step cannot be zero"));
    }
    match value.kind() {
        ValueKind::Undefined => Ok(value),
        ValueKind::String => {
            let chars: Vec<char> = value.as_str().unwrap_or_default().chars().collect();
            budget::charge_work(chars.len() as u64)?;
            let picked: String = slice_indices(chars.len(), start, stop, step)
                .filter_map(|i| chars.get(i))
                .collect();
            Ok(Value::from(picked))
        }
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<Value> = value.try_iter()?.collect();
            budget::charge_items(items.len())?;
            budget::charge_work(items.len() as u64)?;
            Ok(Value::from_iter(
                slice_indices(items.len(), start, stop, step).filter_map(|i| items.get(i).cloned()),
            ))
        }
        ValueKind::None => Err(type_error(
            "TypeError: 'NoneType' object is not subscriptable",
        )),
        kind => Err(type_error(format!(
            "TypeError: '{kind}' object is not subscriptable"
        ))),
    }
}

/// The indices `range(len)[start:stop:step]` visits (CPython's `PySlice_AdjustIndices`).
fn slice_indices(
    len: usize,
    start: Option<i64>,
    stop: Option<i64>,
    step: i64,
) -> impl Iterator<Item = usize> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let adjust = |v: i64| {
        if v < 0 {
            let v = v.saturating_add(len);
            if v < 0 {
                if step < 0 { -1 } else { 0 }
            } else {
                v
            }
        } else if v >= len {
            if step < 0 { len - 1 } else { len }
        } else {
            v
        }
    };
    let (mut at, stop) = if step < 0 {
        (start.map_or(len - 1, adjust), stop.map_or(-1, adjust))
    } else {
        (start.map_or(0, adjust), stop.map_or(len, adjust))
    };
    std::iter::from_fn(move || {
        let inside = if step < 0 { at > stop } else { at < stop };
        if !inside {
            return None;
        }
        let here = usize::try_from(at).ok();
        at = at.saturating_add(step);
        here
    })
}

/// Lists an iterable, charging every item before it is kept.
fn collect_charged(value: &Value) -> Result<Value, Error> {
    let mut items = Vec::new();
    for item in value.try_iter()? {
        budget::charge_items(1)?;
        budget::charge_work(1)?;
        items.push(item);
    }
    Ok(Value::from(items))
}

/// Appends `kwargs` to the arguments of a filter called through `State::apply_filter`
/// (marking them used here, as the callee checks them).
fn forward_kwargs(kwargs: Kwargs, args: &mut Vec<Value>) -> Result<(), Error> {
    let names: Vec<String> = kwargs.args().map(str::to_owned).collect();
    if names.is_empty() {
        return Ok(());
    }
    for name in &names {
        kwargs.get::<Value>(name)?;
    }
    args.push(Value::from(kwargs));
    Ok(())
}

/// Jinja2's `map`, `select`, `reject`, `selectattr` and `rejectattr` return generators: the
/// result of minijinja's filter (registered as `hidden`) handed out as a one-shot iterator, so
/// that `|length`, `|tojson` and `[0]` fail on it and a second loop sees nothing, as in Python.
pub(crate) fn generator(
    state: &mut State,
    hidden: &str,
    value: Value,
    args: &[Value],
    kwargs: Kwargs,
) -> Result<Value, Error> {
    budget::charge_work(value.len().unwrap_or(0) as u64)?;
    let mut all = Vec::with_capacity(args.len() + 2);
    all.push(value);
    all.extend(args.iter().cloned());
    forward_kwargs(kwargs, &mut all)?;
    let result = state.apply_filter(hidden, &all)?;
    let items: Vec<Value> = result.try_iter()?.collect();
    budget::charge_items(items.len())?;
    Ok(Value::make_one_shot_iterator(items.into_iter()))
}

/// Jinja2's `indent(width=4, first=False, blank=False)`, including its quirk of appending a
/// newline before splitting (so a trailing newline is kept), with the size of the result checked
/// before it is built.
pub(crate) fn indent(
    value: &Value,
    width: Option<Value>,
    first: Option<bool>,
    blank: Option<bool>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let width = kwargs.get::<Option<Value>>("width")?.or(width);
    let first = kwargs
        .get::<Option<bool>>("first")?
        .or(first)
        .unwrap_or(false);
    let blank = kwargs
        .get::<Option<bool>>("blank")?
        .or(blank)
        .unwrap_or(false);
    kwargs.assert_all_used()?;
    let s = pyfmt::py_str(value)?;
    let lines = py_splitlines(&format!("{s}\n"), false);
    let lines: Vec<Value> = lines.try_iter()?.collect();
    let indention_len = match &width {
        Some(w) if w.kind() == ValueKind::String => w.as_str().unwrap_or_default().len(),
        Some(w) => usize::try_from(i64::try_from(w.clone())?.max(0)).unwrap_or(usize::MAX),
        None => 4,
    };
    let total = s
        .len()
        .saturating_add(indention_len.saturating_mul(lines.len().saturating_add(1)));
    budget::charge_bytes(total)?;
    let indention = match &width {
        Some(w) if w.kind() == ValueKind::String => w.as_str().unwrap_or_default().to_owned(),
        _ => " ".repeat(indention_len),
    };
    let mut out = String::with_capacity(total);
    if first {
        out.push_str(&indention);
    }
    for (i, line) in lines.iter().enumerate() {
        let line = line.as_str().unwrap_or_default();
        if i > 0 {
            out.push('\n');
            if blank || !pyfmt::py_strip(line).is_empty() {
                out.push_str(&indention);
            }
        }
        out.push_str(line);
    }
    Ok(Value::from(out))
}

/// Jinja2's `items`: an undefined value has no items (minijinja fails).
pub(crate) fn items(value: &Value) -> Result<Value, Error> {
    if value.is_undefined() {
        return Ok(Value::from(Vec::<Value>::new()));
    }
    budget::charge_items(value.len().unwrap_or(0))?;
    minijinja::filters::items(value)
}

/// `list`, charging the items before they are collected.
pub(crate) fn list(state: &State, value: Value) -> Result<Value, Error> {
    match value.len() {
        Some(n) if value.kind() != ValueKind::Iterable => {
            budget::charge_items(n)?;
            budget::charge_work(n as u64)?;
            minijinja::filters::list(state, value)
        }
        _ if value.kind() == ValueKind::Iterable => collect_charged(&value),
        _ => minijinja::filters::list(state, value),
    }
}

/// `slice(count, fill_with)`: `count` lists, checked before they are made.
pub(crate) fn slice(
    state: &State,
    value: Value,
    count: usize,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    budget::charge_items(count.saturating_add(value.len().unwrap_or(0)))?;
    budget::charge_work(count as u64)?;
    minijinja::filters::slice(state, value, count, fill_with)
}

/// `batch(count, fill_with)`: the last batch is padded to `count` items, checked first.
pub(crate) fn batch(
    state: &State,
    value: Value,
    count: usize,
    fill_with: Option<Value>,
) -> Result<Value, Error> {
    let len = value.len().unwrap_or(0);
    let padded = if fill_with.is_some() {
        len.saturating_add(count)
    } else {
        len
    };
    budget::charge_items(padded)?;
    budget::charge_work(padded as u64)?;
    minijinja::filters::batch(state, value, count, fill_with)
}

/// The size of `s.replace(from, to)`, charged before it is built (an empty `from` inserts `to`
/// around every character, as in Python).
fn charge_replace(s: &str, from: &str, to: &str) -> Result<(), Error> {
    budget::charge_work(s.len() as u64)?;
    let count = if from.is_empty() {
        s.chars().count().saturating_add(1)
    } else {
        s.matches(from).count()
    };
    let grow = to.len().saturating_sub(from.len());
    budget::charge_bytes(s.len().saturating_add(count.saturating_mul(grow)))
}

/// Jinja2's `replace(old, new, count=None)`, size-checked.
pub(crate) fn replace(
    value: &Value,
    from: &Value,
    to: &Value,
    count: Option<i64>,
) -> Result<Value, Error> {
    let (s, f, t) = (
        pyfmt::py_str(value)?,
        pyfmt::py_str(from)?,
        pyfmt::py_str(to)?,
    );
    charge_replace(&s, &f, &t)?;
    Ok(Value::from(py_replace(&s, &f, &t, count)))
}

/// Python's `str.replace(old, new, count)`: a negative or absent count replaces all.
fn py_replace(s: &str, from: &str, to: &str, count: Option<i64>) -> String {
    match count.and_then(|n| usize::try_from(n).ok()) {
        Some(n) => s.replacen(from, to, n),
        None => s.replace(from, to),
    }
}

/// The widths and precisions of a `%` format string, summed: what padding it can produce.
fn printf_padding(format: &str) -> usize {
    let bytes = format.as_bytes();
    let mut total: usize = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        let mut number: usize = 0;
        while i < bytes.len() && !bytes[i].is_ascii_alphabetic() && bytes[i] != b'%' {
            if bytes[i].is_ascii_digit() {
                number = number
                    .saturating_mul(10)
                    .saturating_add(usize::from(bytes[i] - b'0'));
            } else {
                total = total.saturating_add(number);
                number = 0;
            }
            i += 1;
        }
        total = total.saturating_add(number);
        i += 1;
    }
    total
}

/// Jinja2's `format` (`printf` style), with the padding it would produce checked first.
pub(crate) fn format(
    state: &mut State,
    format: &Value,
    args: Rest<Value>,
    kwargs: Kwargs,
) -> Result<Value, Error> {
    let text = format.as_str().unwrap_or_default();
    let args_size: usize = args.iter().map(budget::size_of).sum();
    budget::charge_bytes(
        text.len()
            .saturating_add(printf_padding(text))
            .saturating_add(args_size),
    )?;
    let mut all = Vec::with_capacity(args.len() + 1);
    all.push(format.clone());
    all.extend(args.iter().cloned());
    forward_kwargs(kwargs, &mut all)?;
    state.apply_filter("__rtok_format", &all)
}

/// `unique`, charging its work and result.
pub(crate) fn unique(state: &State, value: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let n = value.len().unwrap_or(0);
    budget::charge_items(n)?;
    budget::charge_work(n as u64)?;
    minijinja::filters::unique(state, value, kwargs)
}
