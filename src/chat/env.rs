//! The minijinja environment, configured as transformers configures Jinja2:
//! `ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])`
//! with its `tojson`, `raise_exception` and `strftime_now`, plus Python value formatting and
//! methods, a fuel budget, a recursion limit, and no way to load other templates or files.

use std::borrow::Cow;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Rest, Value};
use minijinja::{AutoEscape, Environment, Error, Output, State, UndefinedBehavior};

use super::budget;
use super::content_format::{self, ContentFormat};
use super::error::{ChatTemplateError, Limit};
use super::functions;
use super::lexing;
use super::pyfmt;
use super::syntax;

/// The safety limits of one render.
///
/// Fuel (minijinja's instruction budget) grows with the request, so that long conversations
/// render while a template that loops forever stops after a time proportional to the request:
/// `fuel_base + fuel_per_item × (messages + tools + documents)`, rounded up to
/// `fuel_base × 2^k`. The shared templates use about 100 instructions per message; the defaults
/// leave a 50× margin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderLimits {
    /// Instructions any render may execute.
    pub fuel_base: u64,
    /// Extra instructions per message, tool and document of the request.
    pub fuel_per_item: u64,
    /// minijinja's recursion budget (capped at 500 by minijinja; a macro call costs more than a
    /// loop level).
    pub recursion: usize,
    /// The render's byte budget: the final prompt may not exceed it, and every value the
    /// template prints (also inside macros and `{% set %}` blocks) or builds with a builtin,
    /// `~`, `+` or `*` is charged to it before it is allocated (a list item counts 32 bytes).
    /// Builtins also charge their work to `64 ×` the render's fuel.
    pub max_output_bytes: usize,
}

impl Default for RenderLimits {
    fn default() -> Self {
        RenderLimits {
            fuel_base: 100_000,
            fuel_per_item: 5_000,
            recursion: 500,
            max_output_bytes: 64 << 20,
        }
    }
}

impl RenderLimits {
    /// The fuel of a render over `items` messages, tools and documents.
    pub(crate) fn fuel_for(&self, items: usize) -> u64 {
        let items = u64::try_from(items).unwrap_or(u64::MAX);
        self.fuel_base
            .saturating_add(self.fuel_per_item.saturating_mul(items))
            .max(1)
    }
}

/// `{{ value }}`: Python's `str(value)` (`None`, `True`, `1e-05`, `['a', 1]`, ...).
fn python_formatter(out: &mut Output, _state: &mut State, value: &Value) -> Result<(), Error> {
    if let Some(s) = value.as_str() {
        budget::charge_bytes(s.len())?;
        return out.write_str(s).map_err(Error::from);
    }
    let mut buf = String::new();
    pyfmt::write_py_str(&mut buf, value)?;
    budget::charge_bytes(buf.len())?;
    out.write_str(&buf).map_err(Error::from)
}

/// The final prompt's buffer: fails the render once it would exceed the limit.
pub(crate) struct LimitedWriter {
    pub(crate) buf: Vec<u8>,
    limit: usize,
    pub(crate) exceeded: bool,
}

impl LimitedWriter {
    pub(crate) fn new(limit: usize, capacity: usize) -> Self {
        LimitedWriter {
            buf: Vec::with_capacity(capacity.min(limit)),
            limit,
            exceeded: false,
        }
    }
}

impl std::io::Write for LimitedWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.buf.len().saturating_add(data.len()) > self.limit {
            self.exceeded = true;
            return Err(std::io::Error::other(budget::SizeLimitExceeded));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What minijinja's parser reports when nesting passes its limit (150 levels of blocks,
/// brackets and parenthesized expressions, each bracket counting two).
const PARSER_DEPTH_ERROR: &str = "template exceeds maximum recursion limits";

/// Builds the environment holding the one template `source` under `name`, and detects the
/// template's content format.
pub(crate) fn build(
    name: &str,
    source: &str,
    limits: RenderLimits,
) -> Result<(Environment<'static>, ContentFormat), ChatTemplateError> {
    let mut env = Environment::new();
    let syntax = SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .build()
        .map_err(|e| syntax_error(name, e.to_string()))?;
    let source = prepare_source(source, &syntax);
    let format = check(name, &source, &syntax)?;
    let instrumented = syntax::instrument(&source, &syntax);
    let source = instrumented.as_deref().unwrap_or(&source);
    configure(&mut env, syntax, limits);
    register_builtins(&mut env);
    env.add_template_owned(name.to_owned(), source.to_owned())
        .map_err(|e| {
            // The template parsed before it was instrumented; the rewrite nests each wrapped
            // operand of a chain one parenthesis deeper and can pass minijinja's parser limit.
            if instrumented.is_some() && e.to_string().contains(PARSER_DEPTH_ERROR) {
                ChatTemplateError::LimitExceeded {
                    limit: Limit::Nesting,
                    detail: format!(
                        "an operator chain is too long to instrument (each operand of `~`, `+` and `*` nests one level deeper): {}",
                        describe(&e)
                    ),
                }
            } else {
                syntax_error(name, describe(&e))
            }
        })?;
    Ok((env, format))
}

/// A syntax error of the template `name`.
fn syntax_error(name: &str, detail: String) -> ChatTemplateError {
    ChatTemplateError::Syntax {
        name: name.to_owned(),
        detail,
    }
}

/// `source` as Jinja2 reads it (newlines, string escapes) and with transformers'
/// `{% generation %}` tags, the text every later step of [`build`] works on.
fn prepare_source<'s>(source: &'s str, syntax: &SyntaxConfig) -> Cow<'s, str> {
    let mut text = Cow::Borrowed(source);
    // Jinja2's lexer turns every `\r\n` and `\r` of the template (text, raw blocks, string
    // literals) into `\n`; minijinja keeps them, so normalize first.
    if let Some(normalized) = syntax::normalize_newlines(&text) {
        text = Cow::Owned(normalized);
    }
    // Jinja2 decodes string literals with Python's escapes, minijinja with JSON's.
    if let Some(unescaped) = lexing::align_with_jinja2(&text, syntax) {
        text = Cow::Owned(unescaped);
    }
    if let Some(rewritten) = syntax::rewrite_generation_tags(&text, syntax) {
        text = Cow::Owned(rewritten);
    }
    text
}

/// Refuses what the template may not be (too deep, unparsable, a tag Jinja2 lacks) before it is
/// compiled, and detects its content format from the parsed tree.
fn check(
    name: &str,
    source: &str,
    syntax: &SyntaxConfig,
) -> Result<ContentFormat, ChatTemplateError> {
    // Bound the tree's depth before anything recurses over it (see `syntax::MAX_NESTING`).
    if let Some(depth) = syntax::nesting_bound(source, syntax, syntax::MAX_NESTING)
        && depth > syntax::MAX_NESTING
    {
        return Err(ChatTemplateError::LimitExceeded {
            limit: Limit::Nesting,
            detail: format!(
                "the template nests more than {} levels deep (operator chains such as `a ~ b ~ ...`, brackets, blocks and `elif`s count)",
                syntax::MAX_NESTING
            ),
        });
    }
    match syntax::parse(source, syntax) {
        Ok(ast) => {
            if let Some(detail) = syntax::unsupported_statement(&ast) {
                return Err(syntax_error(name, detail.to_owned()));
            }
            Ok(content_format::detect(&ast))
        }
        Err(e) if e.to_string().contains(PARSER_DEPTH_ERROR) => {
            Err(ChatTemplateError::LimitExceeded {
                limit: Limit::Nesting,
                detail: format!(
                    "the template nests brackets or blocks deeper than minijinja's parser allows: {}",
                    describe(&e)
                ),
            })
        }
        Err(e) => Err(syntax_error(name, describe(&e))),
    }
}

/// transformers' environment settings (`trim_blocks`, `lstrip_blocks`, lenient undefined, no
/// autoescape, Python formatting and methods) with the render's fuel and recursion limits.
fn configure(env: &mut Environment<'static>, syntax: SyntaxConfig, limits: RenderLimits) {
    env.set_syntax(syntax);
    env.set_undefined_behavior(UndefinedBehavior::Lenient);
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_formatter(python_formatter);
    env.set_fuel(Some(limits.fuel_base));
    env.set_recursion_limit(limits.recursion);
    env.set_unknown_method_callback(functions::python_methods);
}

/// The globals, filters and tests of transformers' Jinja2 environment, and the hidden filters
/// the instrumented template calls.
fn register_builtins(env: &mut Environment<'static>) {
    // Only what Jinja2 has: no `debug()` global, no minijinja-only filters and tests.
    env.remove_global("debug");
    for filter in ["split", "lines", "chain", "zip", "bool"] {
        env.remove_filter(filter);
    }
    for test in ["safe", "int", "startingwith", "endingwith", "containing"] {
        env.remove_test(test);
    }
    env.add_function("raise_exception", functions::raise_exception);
    env.add_function("strftime_now", functions::strftime_now);
    env.add_function("cycler", minijinja_contrib::globals::cycler);
    env.add_function("joiner", minijinja_contrib::globals::joiner);

    env.add_filter(syntax::FOR_ITER_FILTER, functions::for_iter);
    env.add_filter(syntax::SLICE_FILTER, functions::python_slice);
    env.add_filter(syntax::SIZED_FILTER, budget::sized);
    env.add_filter(syntax::MUL_LHS_FILTER, budget::push_lhs);
    env.add_filter(syntax::ADD_LHS_FILTER, budget::add_lhs);
    env.add_filter(syntax::ADD_RHS_FILTER, budget::add_rhs);
    env.add_filter(syntax::ADD_RESULT_FILTER, budget::add_result);
    env.add_filter(syntax::MUL_RHS_FILTER, budget::mul_rhs);
    // Jinja2's map/select/reject/selectattr/rejectattr return generators: minijinja's list
    // results are kept under hidden names and handed out as one-shot iterators.
    env.add_filter("__rtok_map", minijinja::filters::map);
    env.add_filter("__rtok_select", minijinja::filters::select);
    env.add_filter("__rtok_reject", minijinja::filters::reject);
    env.add_filter("__rtok_selectattr", minijinja::filters::selectattr);
    env.add_filter("__rtok_rejectattr", minijinja::filters::rejectattr);
    for (name, hidden) in [
        ("map", "__rtok_map"),
        ("select", "__rtok_select"),
        ("reject", "__rtok_reject"),
        ("selectattr", "__rtok_selectattr"),
        ("rejectattr", "__rtok_rejectattr"),
    ] {
        env.add_filter(
            name,
            move |s: &mut State, v: Value, a: Rest<Value>, k: Kwargs| {
                functions::generator(s, hidden, v, &a, k)
            },
        );
    }
    env.add_filter("__rtok_format", minijinja::filters::format);
    env.add_filter("indent", functions::indent);
    env.add_filter("items", functions::items);
    env.add_filter("list", functions::list);
    env.add_filter("slice", functions::slice);
    env.add_filter("batch", functions::batch);
    env.add_filter("replace", functions::replace);
    env.add_filter("format", functions::format);
    env.add_filter("unique", functions::unique);
    env.add_filter("tojson", functions::tojson);
    env.add_filter("string", functions::string);
    env.add_filter("trim", functions::trim);
    env.add_filter("length", functions::length);
    env.add_filter("count", functions::length);
    env.add_filter("attr", functions::attr);
    env.add_filter("sort", functions::sort);
    env.add_filter("join", functions::join);
    env.add_filter("center", functions::center);
    env.add_filter("wordcount", functions::wordcount);
    env.add_filter("filesizeformat", minijinja_contrib::filters::filesizeformat);
    env.add_filter("truncate", minijinja_contrib::filters::truncate);
    env.add_filter("striptags", minijinja_contrib::filters::striptags);
    env.add_test("iterable", functions::is_iterable);
    env.add_test("sequence", functions::is_sequence);
    env.add_test("divisibleby", functions::is_divisible_by);
}

/// A one-line description of a minijinja error with its location.
pub(crate) fn describe(e: &Error) -> String {
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}
