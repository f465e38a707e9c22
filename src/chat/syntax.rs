//! Aligning minijinja's template syntax with transformers' Jinja2 environment:
//!
//! - transformers registers a `{% generation %}...{% endgeneration %}` block (it marks the
//!   assistant's tokens for training masks and otherwise renders its body unchanged);
//!   minijinja has no such tag, so its two tag names are mapped to `if true` / `endif`,
//!   found with minijinja's own lexer so that text in strings, comments and raw blocks is
//!   never touched;
//! - Jinja2's lexer normalizes the template's newlines (`\r\n`, `\r`) to `\n`, also inside
//!   raw blocks and string literals; minijinja keeps them;
//! - transformers does not enable `jinja2.ext.do`, so `{% do %}` is a syntax error there and
//!   is refused here too;
//! - Python's `for` raises on `None` ("'NoneType' object is not iterable") and knows the length
//!   of a string or generator it loops over (`loop.last`, `loop.length`); minijinja loops over
//!   nothing and leaves the length unknown. Every `{% for %}` iterable is therefore wrapped in
//!   the [`FOR_ITER_FILTER`] filter, which raises as Python does and lists strings and
//!   generators first. The spans come from minijinja's own parser, so text in strings,
//!   comments and raw blocks is never touched.

use std::collections::HashMap;

use minijinja::machinery::Token;
use minijinja::machinery::ast::{BinOp, BinOpKind, CallArg, Expr, Slice, Stmt};
use minijinja::syntax::SyntaxConfig;

/// The template with `\r\n` and lone `\r` turned into `\n`, or `None` if it has no `\r`.
pub(crate) fn normalize_newlines(source: &str) -> Option<String> {
    if !source.contains('\r') {
        return None;
    }
    Some(source.replace("\r\n", "\n").replace('\r', "\n"))
}

/// Rewrites `{% generation %}` / `{% endgeneration %}` tags to `{% if true %}` / `{% endif %}`,
/// keeping their whitespace-control markers. Returns `None` when the template has none (or
/// does not lex; compiling it then reports the error).
pub(crate) fn rewrite_generation_tags(source: &str, syntax: &SyntaxConfig) -> Option<String> {
    if !source.contains("generation") {
        return None;
    }
    let mut edits: Vec<(usize, usize, &str)> = Vec::new();
    let mut after_block_start = false;
    for token in minijinja::machinery::tokenize(source, false, syntax.clone()) {
        let Ok((token, span)) = token else {
            return None;
        };
        if after_block_start && let Token::Ident(name) = token {
            let replacement = match name {
                "generation" => Some("if true"),
                "endgeneration" => Some("endif"),
                _ => None,
            };
            if let Some(replacement) = replacement {
                let start = usize::try_from(span.start_offset).ok()?;
                let end = usize::try_from(span.end_offset).ok()?;
                if source.get(start..end) != Some(name) {
                    return None;
                }
                edits.push((start, end, replacement));
            }
        }
        after_block_start = matches!(token, Token::BlockStart);
    }
    if edits.is_empty() {
        return None;
    }
    splice(source, edits)
}

/// `source` with `source[start..end]` replaced by `text` for each `(start, end, text)` of
/// `edits`, which come in order and do not overlap; `None` when one does not (or falls off a
/// char boundary).
pub(crate) fn splice<S: AsRef<str>>(
    source: &str,
    edits: impl IntoIterator<Item = (usize, usize, S)>,
) -> Option<String> {
    let mut out = String::with_capacity(source.len() + source.len() / 8);
    let mut last = 0;
    for (start, end, text) in edits {
        if start < last {
            return None;
        }
        out.push_str(source.get(last..start)?);
        out.push_str(text.as_ref());
        last = end;
    }
    out.push_str(source.get(last..)?);
    Some(out)
}

/// The deepest syntax tree a template may have: [`nesting_bound`] must stay at or below this.
///
/// minijinja's parser limits nesting through parentheses, brackets and blocks, but builds a
/// left-deep tree without limit for a flat chain (`1 + 1 + ... + 1`, `a.b.c...`, `x|f|f|...`,
/// `not not ...`, `- - ...`, `{% elif %}` after `{% elif %}`), and compiling, instrumenting and
/// dropping that tree recurse once per level: a chain of 100,000 terms overflows a 2 MiB stack.
/// Jinja2 fails on such chains too (its generated Python nests one parenthesis per operator and
/// Python allows 200). Templates whose bound exceeds this limit are refused before they are parsed.
pub(crate) const MAX_NESTING: usize = 256;

/// Statement tags whose body nests one level deeper (`{% set x %}` only without `=`).
const BLOCK_TAGS: &[&str] = &[
    "if",
    "for",
    "macro",
    "call",
    "filter",
    "with",
    "autoescape",
    "block",
    "set",
];

/// An upper bound on the depth of the syntax tree minijinja builds for `source`, computed from
/// the tokens alone in one pass (linear time, no recursion): the open blocks, each `{% elif %}`
/// of an open `{% if %}`, and in an expression, per open parenthesis, bracket or brace, the
/// operators (`+`, `.`, `|`, `is`, `not`, `if`, a call or subscript, ...) since the last `,`, `:`
/// or `=` at that level. Stops early once the bound passes `limit` and returns it then.
/// Returns `None` when the template does not lex (the parser then reports the error).
pub(crate) fn nesting_bound(source: &str, syntax: &SyntaxConfig, limit: usize) -> Option<usize> {
    let mut scan = NestingScan::default();
    let mut max = 0usize;
    for token in minijinja::machinery::tokenize(source, false, syntax.clone()) {
        let Ok((token, _)) = token else {
            return None;
        };
        scan.step(&token);
        max = max.max(scan.block_total + scan.expr_total);
        if max > limit {
            return Some(max);
        }
    }
    Some(max)
}

/// The state of [`nesting_bound`]'s pass over the tokens: the open blocks and the open
/// brackets of the current expression.
#[derive(Default)]
struct NestingScan<'s> {
    /// Open blocks: (tag, weight); weight is 1 + the `elif`s seen so far.
    blocks: Vec<(&'s str, usize)>,
    block_total: usize,
    /// Open brackets of the current expression: operators since the last separator, per level.
    levels: Vec<usize>,
    expr_total: usize,
    /// The current block tag's keyword and whether it had a top-level `=`.
    keyword: Option<&'s str>,
    assigns: bool,
    in_block: bool,
}

impl<'s> NestingScan<'s> {
    /// Accounts for one token.
    fn step(&mut self, token: &Token<'s>) {
        match *token {
            Token::VariableStart | Token::BlockStart => {
                self.in_block = matches!(token, Token::BlockStart);
                self.keyword = None;
                self.assigns = false;
                self.levels.clear();
                self.levels.push(0);
                self.expr_total = 1;
            }
            Token::VariableEnd => {
                self.levels.clear();
                self.expr_total = 0;
            }
            Token::BlockEnd => self.end_block_tag(),
            Token::TemplateData(_) => {}
            Token::BracketOpen | Token::ParenOpen | Token::BraceOpen => {
                // The call, subscript or literal is one node, its contents one level deeper.
                if let Some(top) = self.levels.last_mut() {
                    *top += 1;
                }
                self.levels.push(0);
                self.expr_total += 2;
            }
            Token::BracketClose | Token::ParenClose | Token::BraceClose => {
                if self.levels.len() > 1
                    && let Some(count) = self.levels.pop()
                {
                    self.expr_total = self.expr_total.saturating_sub(count + 1);
                }
            }
            Token::Comma | Token::Colon | Token::Assign => {
                if self.levels.len() == 1 && matches!(token, Token::Assign) {
                    self.assigns = true;
                }
                if let Some(top) = self.levels.last_mut() {
                    self.expr_total = self.expr_total.saturating_sub(*top);
                    *top = 0;
                }
            }
            Token::Ident(name) => {
                if self.in_block && self.keyword.is_none() {
                    self.keyword = Some(name);
                }
                if matches!(name, "is" | "not" | "and" | "or" | "if" | "else" | "in") {
                    self.operator();
                }
            }
            Token::Plus
            | Token::Minus
            | Token::Mul
            | Token::Div
            | Token::FloorDiv
            | Token::Pow
            | Token::Mod
            | Token::Dot
            | Token::Tilde
            | Token::Pipe
            | Token::Eq
            | Token::Ne
            | Token::Gt
            | Token::Gte
            | Token::Lt
            | Token::Lte => self.operator(),
            _ => {}
        }
    }

    /// An operator: one node deeper at the current bracket level.
    fn operator(&mut self) {
        if let Some(top) = self.levels.last_mut() {
            *top += 1;
            self.expr_total += 1;
        }
    }

    /// `%}`: the tag's keyword opens a block, adds an `elif` to its `if`, or closes a block.
    fn end_block_tag(&mut self) {
        self.in_block = false;
        self.levels.clear();
        self.expr_total = 0;
        match self.keyword {
            Some("elif") => {
                if let Some(top) = self.blocks.last_mut()
                    && top.0 == "if"
                {
                    top.1 += 1;
                    self.block_total += 1;
                }
            }
            Some("set") if self.assigns => {}
            Some(tag) if BLOCK_TAGS.contains(&tag) => {
                self.blocks.push((tag, 1));
                self.block_total += 1;
            }
            Some(tag) => {
                if let Some(opened) = tag.strip_prefix("end")
                    && self.blocks.last().is_some_and(|top| top.0 == opened)
                    && let Some((_, weight)) = self.blocks.pop()
                {
                    self.block_total = self.block_total.saturating_sub(weight);
                }
            }
            None => {}
        }
    }
}

/// The filter every `{% for %}` iterable is wrapped in (see the module docs).
pub(crate) const FOR_ITER_FILTER: &str = "__rtok_for_iter";
/// The filter the operands of `~` and `+` are wrapped in: charges their size to the render's
/// memory budget before minijinja builds the result.
pub(crate) const SIZED_FILTER: &str = "__rtok_sized";
/// The filters the operands of `*` are wrapped in: the left one remembers its operand, the
/// right one checks the size of the product before minijinja builds it.
pub(crate) const MUL_LHS_FILTER: &str = "__rtok_mul_lhs";
/// See [`MUL_LHS_FILTER`].
pub(crate) const MUL_RHS_FILTER: &str = "__rtok_mul_rhs";
/// The filters the operands of `+` are wrapped in: both charge their operand's size; the right
/// one escapes a plain string added to a safe one (Python's `Markup.__add__`).
pub(crate) const ADD_LHS_FILTER: &str = "__rtok_add_lhs";
/// See [`ADD_LHS_FILTER`].
pub(crate) const ADD_RHS_FILTER: &str = "__rtok_add_rhs";
/// The filter a whole `a + b` is wrapped in: the sum is safe where Python's is a `Markup`
/// (`Markup + str`, `str + Markup`), so that what is added to it next is escaped too.
pub(crate) const ADD_RESULT_FILTER: &str = "__rtok_add_result";

/// The filter a slice with a step is rewritten to call (`x[a:b:c]` → `(x)|f(a, b, c)`), so
/// that it slices as Python does (see `functions::python_slice`).
pub(crate) const SLICE_FILTER: &str = "__rtok_slice";

/// The edits of [`instrument`], collected over the template's tree.
struct Rewrites<'s> {
    source: &'s str,
    edits: Vec<Edit>,
    /// The closing edit of each span [`push`] has wrapped: a second wrap of the same span adds
    /// its filter there (`(x)|f|g`) instead of nesting another pair of parentheses.
    closes: HashMap<(usize, usize), usize>,
}

/// One edit of the template: at byte `at`, `remove` bytes replaced by `text`.
struct Edit {
    at: usize,
    /// At one offset: closing parentheses (0), then replaced punctuation (1), then opening
    /// parentheses (2).
    class: u8,
    /// The length of the span a parenthesis opens or closes: outer spans open first and close
    /// last.
    span: usize,
    /// Among opens of one span at one offset: a wrap (0) encloses a slice's (1).
    inner: u8,
    remove: usize,
    text: std::borrow::Cow<'static, str>,
}

/// Wraps the iterable of every `{% for %}` loop in [`FOR_ITER_FILTER`] and the operands of
/// `~`, `+` and `*` in the size-checking filters. Returns `None` when there is nothing to wrap
/// or when the template does not parse (compiling it then reports the error). The rewrite
/// parses whenever the template does, except that each wrapped operand of a chain nests one
/// parenthesis deeper and minijinja's parser allows about 75 nested parentheses: compiling
/// then fails with [`Limit::Nesting`](super::error::Limit::Nesting), never runs the template
/// without its checks.
pub(crate) fn instrument(source: &str, syntax: &SyntaxConfig) -> Option<String> {
    let ast = parse(source, syntax).ok()?;
    let mut rewrites = Rewrites {
        source,
        edits: Vec::new(),
        closes: HashMap::new(),
    };
    visit_stmt(&ast, &mut rewrites);
    let mut wraps = rewrites.edits;
    if wraps.is_empty() {
        return None;
    }
    wraps.sort_by(|a, b| {
        (a.at, a.class)
            .cmp(&(b.at, b.class))
            .then_with(|| match a.class {
                0 => a.span.cmp(&b.span),
                _ => b.span.cmp(&a.span).then(a.inner.cmp(&b.inner)),
            })
    });
    splice(
        source,
        wraps
            .iter()
            .map(|e| (e.at, e.at + e.remove, e.text.as_ref())),
    )
}

/// An expression's own span. minijinja's span of a postfix expression (`a.b`, `a[b]`, `f(x)`,
/// `x|f`, `x is t`) and of some infix ones starts at the operator; [`visit_expr`] widens it to
/// the leftmost operand.
fn own_span(expr: &Expr<'_>) -> Option<(usize, usize)> {
    let span = expr.span();
    Some((
        usize::try_from(span.start_offset).ok()?,
        usize::try_from(span.end_offset).ok()?,
    ))
}

/// Wraps `span` as `(span)|filter`; a span already wrapped (children are visited first, so by
/// an inner expression's wrap) gets `|filter` after its first filter.
fn push(wraps: &mut Rewrites<'_>, span: Option<(usize, usize)>, filter: &'static str) {
    let Some((start, end)) = span.filter(|(start, end)| start < end) else {
        return;
    };
    if let Some(close) = wraps
        .closes
        .get(&(start, end))
        .and_then(|&i| wraps.edits.get_mut(i))
    {
        let text = close.text.to_mut();
        text.push('|');
        text.push_str(filter);
        return;
    }
    let (open, close) = open_close(start, end, 0);
    wraps.edits.push(open);
    wraps.closes.insert((start, end), wraps.edits.len());
    wraps.edits.push(Edit {
        text: format!(")|{filter}").into(),
        ..close
    });
}

/// The `(` and `)` around `start..end`.
fn open_close(start: usize, end: usize, inner: u8) -> (Edit, Edit) {
    let span = end - start;
    let edit = |at, class, text: &'static str| Edit {
        at,
        class,
        span,
        inner,
        remove: 0,
        text: text.into(),
    };
    (edit(start, 2, "("), edit(end, 0, ")"))
}

/// Rewrites `x[a:b:c]` (with a step) to `(x)|__rtok_slice(a, b, c)` in place: `(` before `x`,
/// and the brackets and colons replaced, so that the bounds keep their own edits. `sliced` is
/// the true span of `x`, `bounds` those of `a`, `b`, `c`, `end` the slice's end. Gives up (no
/// edit) when the punctuation is not where the spans put it.
fn push_slice(
    wraps: &mut Rewrites<'_>,
    sliced: (usize, usize),
    bounds: [Option<(usize, usize)>; 3],
    end: usize,
) {
    let bytes = wraps.source.as_bytes();
    // The next byte at or after `from` that is not whitespace or a closing parenthesis.
    let next = |from: usize| {
        (from..end).find(|&i| !matches!(bytes.get(i), Some(b' ' | b'\t' | b'\n' | b'\r' | b')')))
    };
    let Some(open) = next(sliced.1).filter(|&i| bytes.get(i) == Some(&b'[')) else {
        return;
    };
    let first = if bounds[0].is_none() { "none" } else { "" };
    let mut marks: Vec<(usize, std::borrow::Cow<'static, str>)> =
        vec![(open, format!(")|{SLICE_FILTER}({first}").into())];
    let mut after = bounds[0].map_or(open + 1, |(_, e)| e);
    for bound in &bounds[1..] {
        let Some(colon) = next(after).filter(|&i| bytes.get(i) == Some(&b':')) else {
            return;
        };
        marks.push((colon, if bound.is_none() { ", none" } else { ", " }.into()));
        after = bound.map_or(colon + 1, |(_, e)| e);
    }
    let Some(close) = next(after).filter(|&i| bytes.get(i) == Some(&b']') && i + 1 == end) else {
        return;
    };
    marks.push((close, ")".into()));
    let (paren, _) = open_close(sliced.0, end, 1);
    wraps.edits.push(paren);
    for (at, text) in marks {
        wraps.edits.push(Edit {
            at,
            class: 1,
            span: 0,
            inner: 0,
            remove: 1,
            text,
        });
    }
}

fn visit_all(stmts: &[Stmt<'_>], wraps: &mut Rewrites<'_>) {
    for s in stmts {
        visit_stmt(s, wraps);
    }
}

fn visit_stmt(stmt: &Stmt<'_>, wraps: &mut Rewrites<'_>) {
    match stmt {
        Stmt::Template(t) => visit_all(&t.children, wraps),
        Stmt::EmitExpr(e) => {
            visit_expr(&e.expr, wraps);
        }
        Stmt::ForLoop(f) => {
            let iter = visit_expr(&f.iter, wraps);
            push(wraps, iter, FOR_ITER_FILTER);
            if let Some(e) = &f.filter_expr {
                visit_expr(e, wraps);
            }
            visit_all(&f.body, wraps);
            visit_all(&f.else_body, wraps);
        }
        Stmt::IfCond(i) => {
            visit_expr(&i.expr, wraps);
            visit_all(&i.true_body, wraps);
            visit_all(&i.false_body, wraps);
        }
        Stmt::WithBlock(w) => {
            for (_, value) in &w.assignments {
                visit_expr(value, wraps);
            }
            visit_all(&w.body, wraps);
        }
        Stmt::Set(s) => {
            visit_expr(&s.expr, wraps);
        }
        Stmt::SetBlock(s) => visit_all(&s.body, wraps),
        Stmt::AutoEscape(a) => visit_all(&a.body, wraps),
        Stmt::FilterBlock(f) => visit_all(&f.body, wraps),
        Stmt::Block(b) => visit_all(&b.body, wraps),
        Stmt::Macro(m) => visit_all(&m.body, wraps),
        Stmt::CallBlock(c) => {
            visit_call_args(&c.call.args, wraps);
            visit_all(&c.macro_decl.body, wraps);
        }
        _ => {}
    }
}

fn visit_call_args(args: &[CallArg<'_>], wraps: &mut Rewrites<'_>) {
    for arg in args {
        match arg {
            CallArg::Pos(e)
            | CallArg::Kwarg(_, e)
            | CallArg::PosSplat(e)
            | CallArg::KwargSplat(e) => {
                visit_expr(e, wraps);
            }
        }
    }
}

/// Collects the wraps of `expr` and its children; returns `expr`'s true span (from its leftmost
/// operand), computed bottom-up so that long operator chains cost linear time.
fn visit_expr(expr: &Expr<'_>, wraps: &mut Rewrites<'_>) -> Option<(usize, usize)> {
    let own = own_span(expr)?;
    let leftmost = match expr {
        Expr::Var(_) | Expr::Const(_) => None,
        Expr::Slice(s) => visit_slice(s, own, wraps),
        // `x is not t` parses as `not (x is t)` spanned from `not`: it starts at `x`.
        Expr::UnaryOp(u) => visit_expr(&u.expr, wraps),
        Expr::BinOp(b) => visit_bin_op(b, own, wraps),
        Expr::Compare(c) => {
            let inner = visit_expr(&c.expr, wraps);
            for op in &c.ops {
                visit_expr(&op.expr, wraps);
            }
            inner
        }
        Expr::IfExpr(i) => {
            visit_expr(&i.test_expr, wraps);
            let inner = visit_expr(&i.true_expr, wraps);
            if let Some(e) = &i.false_expr {
                visit_expr(e, wraps);
            }
            inner
        }
        Expr::Filter(f) => {
            let inner = f.expr.as_ref().and_then(|e| visit_expr(e, wraps));
            visit_call_args(&f.args, wraps);
            inner
        }
        Expr::Test(t) => {
            let inner = visit_expr(&t.expr, wraps);
            visit_call_args(&t.args, wraps);
            inner
        }
        Expr::GetAttr(g) => visit_expr(&g.expr, wraps),
        Expr::GetItem(g) => {
            let inner = visit_expr(&g.expr, wraps);
            visit_expr(&g.subscript_expr, wraps);
            inner
        }
        Expr::Call(c) => {
            let inner = visit_expr(&c.expr, wraps);
            visit_call_args(&c.args, wraps);
            inner
        }
        Expr::List(l) => {
            l.items.iter().for_each(|e| {
                visit_expr(e, wraps);
            });
            None
        }
        Expr::Tuple(t) => {
            t.items.iter().for_each(|e| {
                visit_expr(e, wraps);
            });
            None
        }
        Expr::Map(m) => {
            m.keys.iter().chain(&m.values).for_each(|e| {
                visit_expr(e, wraps);
            });
            None
        }
    };
    Some(leftmost.map_or(own, |(start, _)| (start.min(own.0), own.1)))
}

/// [`visit_expr`] of a slice: a slice with a step is rewritten to call [`SLICE_FILTER`].
fn visit_slice(
    s: &Slice<'_>,
    own: (usize, usize),
    wraps: &mut Rewrites<'_>,
) -> Option<(usize, usize)> {
    let inner = visit_expr(&s.expr, wraps);
    let bounds =
        [&s.start, &s.stop, &s.step].map(|e| e.as_ref().and_then(|e| visit_expr(e, wraps)));
    if s.step.is_some()
        && let Some(sliced) = inner
    {
        push_slice(wraps, sliced, bounds, own.1);
    }
    inner
}

/// [`visit_expr`] of a binary operation: the operands of `~`, `+` and `*` are wrapped in the
/// size-checking filters, a sum also in [`ADD_RESULT_FILTER`].
fn visit_bin_op(
    b: &BinOp<'_>,
    own: (usize, usize),
    wraps: &mut Rewrites<'_>,
) -> Option<(usize, usize)> {
    let left = visit_expr(&b.left, wraps);
    let right = visit_expr(&b.right, wraps);
    let constant = |e: &Expr<'_>| matches!(e, Expr::Const(_));
    match b.op {
        BinOpKind::Concat => {
            if !constant(&b.left) {
                push(wraps, left, SIZED_FILTER);
            }
            if !constant(&b.right) {
                push(wraps, right, SIZED_FILTER);
            }
        }
        // Both operands, constants too: the right filter pairs with the left one.
        BinOpKind::Add | BinOpKind::Mul if left.is_some() && right.is_some() => {
            let (lhs, rhs) = if matches!(b.op, BinOpKind::Add) {
                (ADD_LHS_FILTER, ADD_RHS_FILTER)
            } else {
                (MUL_LHS_FILTER, MUL_RHS_FILTER)
            };
            push(wraps, left, lhs);
            push(wraps, right, rhs);
            if matches!(b.op, BinOpKind::Add) {
                let sum = left.map(|(start, _)| (start.min(own.0), own.1));
                push(wraps, sum, ADD_RESULT_FILTER);
            }
        }
        _ => {}
    }
    left
}

/// Finds statements that transformers' Jinja2 environment does not accept.
pub(crate) fn unsupported_statement(stmt: &Stmt<'_>) -> Option<&'static str> {
    let in_all = |stmts: &[Stmt<'_>]| stmts.iter().find_map(unsupported_statement);
    match stmt {
        Stmt::Do(_) => Some("Encountered unknown tag 'do'"),
        Stmt::Template(t) => in_all(&t.children),
        Stmt::ForLoop(f) => in_all(&f.body).or_else(|| in_all(&f.else_body)),
        Stmt::IfCond(i) => in_all(&i.true_body).or_else(|| in_all(&i.false_body)),
        Stmt::WithBlock(w) => in_all(&w.body),
        Stmt::SetBlock(s) => in_all(&s.body),
        Stmt::AutoEscape(a) => in_all(&a.body),
        Stmt::FilterBlock(f) => in_all(&f.body),
        Stmt::Block(b) => in_all(&b.body),
        Stmt::Macro(m) => in_all(&m.body),
        Stmt::CallBlock(c) => in_all(&c.macro_decl.body),
        _ => None,
    }
}

/// Parses `source` (as the environment will) for the checks and analyses that need the tree.
pub(crate) fn parse<'s>(
    source: &'s str,
    syntax: &SyntaxConfig,
) -> Result<Stmt<'s>, minijinja::Error> {
    minijinja::machinery::parse(source, "<chat template>", syntax.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_only_tags() {
        let syntax = SyntaxConfig::default();
        let src = "{%- generation -%}{{ 'generation' }}{% raw %}{% generation %}{% endraw %}{% endgeneration %}";
        assert_eq!(
            rewrite_generation_tags(src, &syntax).as_deref(),
            Some(
                "{%- if true -%}{{ 'generation' }}{% raw %}{% generation %}{% endraw %}{% endif %}"
            )
        );
        assert_eq!(rewrite_generation_tags("{{ generation }}", &syntax), None);
    }

    #[test]
    fn bounds_the_tree_depth() {
        let syntax = SyntaxConfig::default();
        let bound = |src: &str| nesting_bound(src, &syntax, usize::MAX);
        assert_eq!(bound("text only"), Some(0));
        assert_eq!(bound("{{ x }}"), Some(1));
        assert_eq!(bound("{{ a + b + c }}"), Some(3));
        // Separators end a sibling; closing a bracket drops its level.
        assert_eq!(bound("{{ [a + b, c] + d }}"), Some(4));
        assert_eq!(bound("{{ f(a.b.c, d) }}"), Some(5));
        // Blocks and elifs nest; `{% set x = ... %}` does not, `{% set x %}` does.
        assert_eq!(
            bound("{% if a %}{% elif b %}{% elif c %}{{ x }}{% endif %}{{ y }}"),
            Some(4)
        );
        assert_eq!(
            bound("{% set x = 1 %}{% set y %}{{ x }}{% endset %}"),
            Some(2)
        );
        // A mismatched end tag pops nothing.
        assert_eq!(bound("{% for x in y %}{% endif %}{{ x }}"), Some(2));
        // Stops once past the limit.
        let chain = format!("{{{{ 1{} }}}}", " + 1".repeat(100_000));
        assert_eq!(nesting_bound(&chain, &syntax, 10), Some(11));
        assert_eq!(nesting_bound("{{ 'unterminated }}", &syntax, 10), None);
    }

    #[test]
    fn wraps_loops_and_operands() {
        let syntax = SyntaxConfig::default();
        let src = "{% for a, b in x|items if a %}{% for c in 'for x in y' %}{{ c ~ (d) }}{% endfor %}{% endfor %}{# for z in w #}";
        assert_eq!(
            instrument(src, &syntax).as_deref(),
            Some(
                "{% for a, b in (x|items)|__rtok_for_iter if a %}{% for c in ('for x in y')|__rtok_for_iter %}{{ (c)|__rtok_sized ~ ((d)|__rtok_sized) }}{% endfor %}{% endfor %}{# for z in w #}"
            )
        );
        assert_eq!(instrument("{{ for_x }}", &syntax), None);
        // A stepped slice calls the slice filter, its bounds keep their own wraps, and the
        // `(` of an enclosing wrap opens before the slice's.
        assert_eq!(
            instrument(
                "{{ 'a' ~ x[:n ~ 1:-1] }}{% for m in ms[::-1] %}{% endfor %}{{ y[1:2] }}",
                &syntax
            )
            .as_deref(),
            Some(
                "{{ 'a' ~ ((x)|__rtok_slice(none, (n)|__rtok_sized ~ 1, -1))|__rtok_sized }}{% for m in ((ms)|__rtok_slice(none, none, -1))|__rtok_for_iter %}{% endfor %}{{ y[1:2] }}"
            )
        );
        assert_eq!(
            instrument("{{ (a)[ 1 : (2) : 3 ] }}", &syntax).as_deref(),
            Some("{{ ((a))|__rtok_slice( 1 ,  (2) ,  3 ) }}")
        );
        // A sum is wrapped in the result filter; a wrap of the same span (the sum as an
        // operand) adds its filter after it instead of another pair of parentheses.
        assert_eq!(
            instrument("{{ a + b + c }}{% for x in d + e %}{% endfor %}", &syntax).as_deref(),
            Some(
                "{{ (((a)|__rtok_add_lhs + (b)|__rtok_add_rhs)|__rtok_add_result|__rtok_add_lhs + (c)|__rtok_add_rhs)|__rtok_add_result }}{% for x in ((d)|__rtok_add_lhs + (e)|__rtok_add_rhs)|__rtok_add_result|__rtok_for_iter %}{% endfor %}"
            )
        );
        assert_eq!(
            instrument("{{ [0] * n * 2 }}", &syntax).as_deref(),
            Some(
                "{{ (([0])|__rtok_mul_lhs * (n)|__rtok_mul_rhs)|__rtok_mul_lhs * (2)|__rtok_mul_rhs }}"
            )
        );
    }
}
