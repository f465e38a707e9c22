//! One memory/output and work budget per render, shared by everything a render builds.
//!
//! minijinja meters instructions (fuel) but not the size of the values a template builds nor
//! the work done inside one builtin call: `'x'|indent(10**12)`, forty `x ~ x` doublings,
//! `[0] * 10**8`, `range(100000)|sort` in a loop. Every builtin of this layer therefore checks
//! the size of what it is about to build against the render's byte budget *before* allocating
//! and charges it, the operands of `~`, `+` and `*` are checked by filters the template is
//! instrumented with ([`super::syntax::instrument`]), and printing charges the same budget.
//! Work inside builtins (items visited, comparisons of a sort) is charged to a work budget
//! proportional to the render's fuel. The budget lives in a thread-local for the duration of
//! one render (renders are synchronous and never migrate threads).

use std::cell::{Cell, RefCell};

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind};

/// Work units a builtin may spend per unit of the render's fuel.
pub(crate) const WORK_PER_FUEL: u64 = 64;
/// What one list item is counted as, in bytes (a minijinja `Value` is 24 bytes; with the list's
/// own overhead and what the item points to, 32 is a fair floor).
pub(crate) const ITEM_BYTES: usize = 32;

/// Marks the error a render stops with when it builds or prints more than its byte budget.
#[derive(Debug)]
pub(crate) struct SizeLimitExceeded;

impl std::fmt::Display for SizeLimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the template built or printed more than the render's size limit")
    }
}

impl std::error::Error for SizeLimitExceeded {}

/// Marks the error a render stops with when builtins did more work than its work budget.
#[derive(Debug)]
pub(crate) struct WorkLimitExceeded;

impl std::fmt::Display for WorkLimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the template's filters and methods did more work than the render's fuel allows",
        )
    }
}

impl std::error::Error for WorkLimitExceeded {}

#[derive(Clone, Copy)]
struct Meter {
    bytes: usize,
    byte_limit: usize,
    work: u64,
    work_limit: u64,
}

const UNLIMITED: Meter = Meter {
    bytes: 0,
    byte_limit: usize::MAX,
    work: 0,
    work_limit: u64::MAX,
};

thread_local! {
    static METER: Cell<Meter> = const { Cell::new(UNLIMITED) };
    /// Left operands of `*` waiting for their right operand (see `mul_lhs`).
    static MUL_STACK: RefCell<Vec<Operand>> = const { RefCell::new(Vec::new()) };
    /// What the `+` whose right operand [`add_rhs`] just saw makes of its sum (see
    /// [`add_result`], which runs right after minijinja adds).
    static ADD_MARKUP: Cell<SumMarkup> = const { Cell::new(SumMarkup::Plain) };
}

/// Installs a fresh budget for one render on this thread; restores the previous one (if renders
/// ever nest) when dropped.
pub(crate) struct RenderBudget {
    previous: Meter,
    previous_stack: Vec<Operand>,
}

impl RenderBudget {
    pub(crate) fn start(byte_limit: usize, fuel: u64) -> Self {
        let meter = Meter {
            bytes: 0,
            byte_limit,
            work: 0,
            work_limit: fuel.saturating_mul(WORK_PER_FUEL),
        };
        ADD_MARKUP.set(SumMarkup::Plain);
        RenderBudget {
            previous: METER.replace(meter),
            previous_stack: MUL_STACK.take(),
        }
    }
}

impl Drop for RenderBudget {
    fn drop(&mut self) {
        METER.set(self.previous);
        MUL_STACK.set(std::mem::take(&mut self.previous_stack));
    }
}

pub(crate) fn size_error() -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        "the template built or printed more than the render's size limit",
    )
    .with_source(SizeLimitExceeded)
}

/// Charges `bytes` about to be built or printed; fails (before the allocation) past the limit.
pub(crate) fn charge_bytes(bytes: usize) -> Result<(), Error> {
    let mut meter = METER.get();
    meter.bytes = meter.bytes.saturating_add(bytes);
    if meter.bytes > meter.byte_limit {
        return Err(size_error());
    }
    METER.set(meter);
    Ok(())
}

/// Fails if a value being built (not yet charged) has grown to `bytes` past what the budget has
/// left; writers of long values call it as they go.
pub(crate) fn check_room(bytes: usize) -> Result<(), Error> {
    let meter = METER.get();
    if meter.bytes.saturating_add(bytes) > meter.byte_limit {
        return Err(size_error());
    }
    Ok(())
}

/// Charges a list of `items` items about to be built.
pub(crate) fn charge_items(items: usize) -> Result<(), Error> {
    charge_bytes(items.saturating_mul(ITEM_BYTES))
}

/// Charges `units` of work (items visited, comparisons made) done inside a builtin.
pub(crate) fn charge_work(units: u64) -> Result<(), Error> {
    let mut meter = METER.get();
    meter.work = meter.work.saturating_add(units);
    if meter.work > meter.work_limit {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "the template's filters and methods did more work than the render's fuel allows",
        )
        .with_source(WorkLimitExceeded));
    }
    METER.set(meter);
    Ok(())
}

/// The bytes a value occupies as far as the budget is concerned: a string's length, a list's or
/// map's items; anything else is small.
pub(crate) fn size_of(value: &Value) -> usize {
    match value.kind() {
        ValueKind::String => value.as_str().map_or(0, str::len),
        ValueKind::Seq | ValueKind::Map | ValueKind::Iterable => {
            value.len().unwrap_or(0).saturating_mul(ITEM_BYTES)
        }
        _ => 0,
    }
}

/// The filter around each operand of `~` and `+`: charges the operand's size, so that the
/// result (at most the sum of its operands) is paid for before minijinja builds it, and a chain
/// of doublings stops once the total passes the budget.
pub(crate) fn sized(value: Value) -> Result<Value, Error> {
    charge_bytes(size_of(&value))?;
    Ok(value)
}

/// What the left operand of `*` or `+` contributes to the result.
#[derive(Clone, Copy)]
struct Operand {
    /// The integer value of a number (a repeat count).
    count: Option<i128>,
    /// The size of a string or list.
    size: usize,
    /// Whether it is a string marked safe (`|safe`, Python's `Markup`).
    safe_str: bool,
    /// A string's length in bytes.
    str_len: Option<usize>,
    /// Whether `*` repeats it (a string or list).
    repeatable: bool,
}

fn operand(value: &Value) -> Operand {
    let count = match value.kind() {
        ValueKind::Number | ValueKind::Bool => i128::try_from(value.clone()).ok(),
        _ => None,
    };
    Operand {
        count,
        size: size_of(value),
        safe_str: value.kind() == ValueKind::String && value.is_safe(),
        str_len: value.as_str().map(str::len),
        repeatable: matches!(
            value.kind(),
            ValueKind::String | ValueKind::Seq | ValueKind::Iterable
        ),
    }
}

fn pop_lhs() -> Option<Operand> {
    MUL_STACK.with_borrow_mut(|stack| stack.pop())
}

/// The filter around the left operand of `*` and `+`: remembers it for the right one.
pub(crate) fn push_lhs(value: Value) -> Value {
    MUL_STACK.with_borrow_mut(|stack| stack.push(operand(&value)));
    value
}

/// The filter around the right operand of `*`: charges the size of `lhs * rhs` before
/// minijinja builds it.
pub(crate) fn mul_rhs(value: Value) -> Result<Value, Error> {
    let rhs = operand(&value);
    // An empty string or list repeated still costs a step per repetition: count one byte.
    let repeat = |n: i128, size: usize| {
        usize::try_from(n.max(0))
            .unwrap_or(usize::MAX)
            .saturating_mul(size.max(1))
    };
    let bytes = match pop_lhs() {
        Some(lhs) => match (lhs.count, rhs.count) {
            (Some(n), None) if rhs.repeatable => repeat(n, rhs.size),
            (None, Some(n)) if lhs.repeatable => repeat(n, lhs.size),
            _ => 0,
        },
        None => 0,
    };
    charge_bytes(bytes)?;
    Ok(value)
}

/// A sequence operand of `+` as a plain list. minijinja concatenates sequences lazily, one
/// level of nesting per `+`, so `{% set ns.x = ns.x + ns.x %}` in a loop over an empty list
/// builds 2^n parts that cost nothing in size but 2^n steps to iterate (and, past 32 levels,
/// to flatten). Turning each sequence operand into a list first (its size is charged before)
/// keeps lazy concatenations one level deep. A sequence of unknown length (a generator of
/// `map`, `select`, ...) cannot be added, as in Python.
fn flat_operand(value: Value) -> Result<Value, Error> {
    if !matches!(value.kind(), ValueKind::Seq | ValueKind::Iterable)
        || value.is_tuple()
        || value.downcast_object_ref::<Vec<Value>>().is_some()
    {
        return Ok(value);
    }
    if value.len().is_none() {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            "unsupported operand type(s) for +: 'generator'",
        ));
    }
    let items: Vec<Value> = value.try_iter()?.collect();
    Ok(Value::from(items))
}

/// The filter around the left operand of `+`: charges it, makes a sequence a plain list (see
/// [`flat_operand`]) and remembers it for the right one.
pub(crate) fn add_lhs(value: Value) -> Result<Value, Error> {
    charge_bytes(size_of(&value))?;
    let value = flat_operand(value)?;
    // Paid for above: the right operand's filter charges only its own size.
    let lhs = Operand {
        size: 0,
        ..operand(&value)
    };
    MUL_STACK.with_borrow_mut(|stack| stack.push(lhs));
    Ok(value)
}

/// What a `+` of strings is in Python when one side is a `Markup`: the sum is a `Markup`, and
/// the plain side is escaped first (`Markup.__add__`, and `__radd__` for `str + Markup`), even
/// with autoescape off. minijinja's sum is a plain string of the unescaped text.
#[derive(Clone, Copy)]
enum SumMarkup {
    /// Not a `Markup` sum: minijinja's is right.
    Plain,
    /// A `Markup` sum whose text is right (the right side was escaped, or neither needed it).
    Safe,
    /// `str + Markup`: the first this many bytes (the left side) are still to be escaped.
    EscapeLeft(usize),
}

/// The filter around the right operand of `+`: charges it (the left one is charged by
/// [`add_lhs`], so the sum is paid for before it is built), makes a sequence a plain list, and
/// records for [`add_result`] what the sum is when a side is a safe string; a plain string
/// added to a safe one is escaped here (Python's `Markup.__add__`).
pub(crate) fn add_rhs(value: Value) -> Result<Value, Error> {
    let lhs = pop_lhs();
    charge_bytes(size_of(&value).saturating_add(lhs.map_or(0, |l| l.size)))?;
    let value = flat_operand(value)?;
    let mut markup = SumMarkup::Plain;
    if let (Some(lhs), Some(lhs_len), Some(rhs)) =
        (lhs, lhs.and_then(|l| l.str_len), value.as_str())
    {
        markup = match (lhs.safe_str, value.is_safe()) {
            (true, false) => {
                let escaped = Value::from_safe_string(html_escape(rhs)?);
                ADD_MARKUP.set(SumMarkup::Safe);
                return Ok(escaped);
            }
            (true, true) => SumMarkup::Safe,
            (false, true) => SumMarkup::EscapeLeft(lhs_len),
            (false, false) => SumMarkup::Plain,
        };
    }
    ADD_MARKUP.set(markup);
    Ok(value)
}

/// The filter around a whole `a + b`: makes the sum a safe string where Python's would be a
/// `Markup` (see [`SumMarkup`]), escaping its left side for `str + Markup`, so that what is
/// added to it next is escaped as Jinja2 escapes it.
pub(crate) fn add_result(value: Value) -> Result<Value, Error> {
    let markup = ADD_MARKUP.replace(SumMarkup::Plain);
    let Some(text) = value.as_str() else {
        return Ok(value);
    };
    match markup {
        SumMarkup::Plain => Ok(value),
        SumMarkup::Safe if value.is_safe() => Ok(value),
        SumMarkup::Safe => {
            charge_bytes(text.len())?;
            Ok(Value::from_safe_string(text.to_owned()))
        }
        SumMarkup::EscapeLeft(at) => {
            let (Some(left), Some(right)) = (text.get(..at), text.get(at..)) else {
                return Ok(value);
            };
            let mut sum = html_escape(left)?;
            charge_bytes(right.len())?;
            sum.push_str(right);
            Ok(Value::from_safe_string(sum))
        }
    }
}

/// markupsafe's `escape`; charges the escaped text (up to five times `s`) before building it.
fn html_escape(s: &str) -> Result<String, Error> {
    let extra: usize = s
        .bytes()
        .map(|b| match b {
            b'&' | b'<' | b'>' => 3,
            b'"' | b'\'' => 4,
            _ => 0,
        })
        .sum();
    let len = s.len().saturating_add(extra);
    charge_bytes(len)?;
    let mut out = String::with_capacity(len);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    Ok(out)
}
