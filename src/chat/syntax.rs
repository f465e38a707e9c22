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

use minijinja::machinery::Token;
use minijinja::machinery::ast::{BinOpKind, CallArg, Expr, Stmt};
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
    let mut out = String::with_capacity(source.len() + edits.len() * 4);
    let mut last = 0;
    for (start, end, replacement) in edits {
        out.push_str(source.get(last..start)?);
        out.push_str(replacement);
        last = end;
    }
    out.push_str(source.get(last..)?);
    Some(out)
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

/// One span of the template to wrap as `(span)|filter`.
struct Wrap {
    start: usize,
    end: usize,
    filter: &'static str,
}

/// Wraps the iterable of every `{% for %}` loop in [`FOR_ITER_FILTER`] and the operands of
/// `~`, `+` and `*` in the size-checking filters. Returns `None` when there is nothing to wrap,
/// or when the template does not parse (compiling it then reports the error) or the rewrite
/// would not parse (then the template runs as written).
pub(crate) fn instrument(source: &str, syntax: &SyntaxConfig) -> Option<String> {
    let ast = parse(source, syntax).ok()?;
    let mut wraps: Vec<Wrap> = Vec::new();
    visit_stmt(&ast, &mut wraps);
    if wraps.is_empty() {
        return None;
    }
    // (offset, opens, span length, filter): at one offset, closing comes before opening; outer
    // spans open first and close last.
    let mut inserts: Vec<(usize, bool, usize, &str)> = Vec::with_capacity(wraps.len() * 2);
    for w in &wraps {
        if w.start >= w.end || !source.is_char_boundary(w.start) || !source.is_char_boundary(w.end)
        {
            return None;
        }
        inserts.push((w.start, true, w.end - w.start, w.filter));
        inserts.push((w.end, false, w.end - w.start, w.filter));
    }
    inserts.sort_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then_with(|| if a.1 { b.2.cmp(&a.2) } else { a.2.cmp(&b.2) })
    });
    let mut out = String::with_capacity(source.len() + inserts.len() * 12);
    let mut last = 0;
    for (at, open, _, filter) in inserts {
        out.push_str(source.get(last..at)?);
        if open {
            out.push('(');
        } else {
            out.push_str(")|");
            out.push_str(filter);
        }
        last = at;
    }
    out.push_str(source.get(last..)?);
    parse(&out, syntax).ok()?;
    Some(out)
}

/// Where an expression's text starts and ends. minijinja's span of a postfix expression
/// (`a.b`, `a[b]`, `f(x)`, `x|f`, `x is t`) and of some infix ones starts at the operator, so
/// the start is that of the leftmost operand.
fn span_of(expr: &Expr<'_>) -> Option<(usize, usize)> {
    let span = expr.span();
    let own = usize::try_from(span.start_offset).ok()?;
    let leftmost = match expr {
        Expr::GetAttr(g) => span_of(&g.expr),
        Expr::GetItem(g) => span_of(&g.expr),
        Expr::Slice(s) => span_of(&s.expr),
        Expr::Call(c) => span_of(&c.expr),
        Expr::Filter(f) => f.expr.as_ref().and_then(span_of),
        Expr::Test(t) => span_of(&t.expr),
        Expr::BinOp(b) => span_of(&b.left),
        Expr::Compare(c) => span_of(&c.expr),
        Expr::IfExpr(i) => span_of(&i.true_expr),
        _ => None,
    };
    let start = leftmost.map_or(own, |(start, _)| start.min(own));
    Some((start, usize::try_from(span.end_offset).ok()?))
}

fn wrap(expr: &Expr<'_>, filter: &'static str, wraps: &mut Vec<Wrap>) {
    if matches!(expr, Expr::Const(_)) {
        return;
    }
    if let Some((start, end)) = span_of(expr) {
        wraps.push(Wrap { start, end, filter });
    }
}

/// Wraps both operands (constants too: the right filter pairs with the left one).
fn wrap_pair(
    b: &minijinja::machinery::ast::BinOp<'_>,
    lhs: &'static str,
    rhs: &'static str,
    wraps: &mut Vec<Wrap>,
) {
    if let (Some((ls, le)), Some((rs, re))) = (span_of(&b.left), span_of(&b.right)) {
        wraps.push(Wrap {
            start: ls,
            end: le,
            filter: lhs,
        });
        wraps.push(Wrap {
            start: rs,
            end: re,
            filter: rhs,
        });
    }
}

fn visit_all(stmts: &[Stmt<'_>], wraps: &mut Vec<Wrap>) {
    for s in stmts {
        visit_stmt(s, wraps);
    }
}

fn visit_stmt(stmt: &Stmt<'_>, wraps: &mut Vec<Wrap>) {
    match stmt {
        Stmt::Template(t) => visit_all(&t.children, wraps),
        Stmt::EmitExpr(e) => visit_expr(&e.expr, wraps),
        Stmt::ForLoop(f) => {
            visit_expr(&f.iter, wraps);
            if let Some((start, end)) = span_of(&f.iter) {
                wraps.push(Wrap {
                    start,
                    end,
                    filter: FOR_ITER_FILTER,
                });
            }
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
        Stmt::Set(s) => visit_expr(&s.expr, wraps),
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

fn visit_call_args(args: &[CallArg<'_>], wraps: &mut Vec<Wrap>) {
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

fn visit_expr(expr: &Expr<'_>, wraps: &mut Vec<Wrap>) {
    match expr {
        Expr::Var(_) | Expr::Const(_) => {}
        Expr::Slice(s) => {
            visit_expr(&s.expr, wraps);
            for e in [&s.start, &s.stop, &s.step].into_iter().flatten() {
                visit_expr(e, wraps);
            }
        }
        Expr::UnaryOp(u) => visit_expr(&u.expr, wraps),
        Expr::BinOp(b) => {
            visit_expr(&b.left, wraps);
            visit_expr(&b.right, wraps);
            match b.op {
                BinOpKind::Concat => {
                    wrap(&b.left, SIZED_FILTER, wraps);
                    wrap(&b.right, SIZED_FILTER, wraps);
                }
                BinOpKind::Add => wrap_pair(b, ADD_LHS_FILTER, ADD_RHS_FILTER, wraps),
                BinOpKind::Mul => wrap_pair(b, MUL_LHS_FILTER, MUL_RHS_FILTER, wraps),
                _ => {}
            }
        }
        Expr::Compare(c) => {
            visit_expr(&c.expr, wraps);
            for op in &c.ops {
                visit_expr(&op.expr, wraps);
            }
        }
        Expr::IfExpr(i) => {
            visit_expr(&i.test_expr, wraps);
            visit_expr(&i.true_expr, wraps);
            if let Some(e) = &i.false_expr {
                visit_expr(e, wraps);
            }
        }
        Expr::Filter(f) => {
            if let Some(e) = &f.expr {
                visit_expr(e, wraps);
            }
            visit_call_args(&f.args, wraps);
        }
        Expr::Test(t) => {
            visit_expr(&t.expr, wraps);
            visit_call_args(&t.args, wraps);
        }
        Expr::GetAttr(g) => visit_expr(&g.expr, wraps),
        Expr::GetItem(g) => {
            visit_expr(&g.expr, wraps);
            visit_expr(&g.subscript_expr, wraps);
        }
        Expr::Call(c) => {
            visit_expr(&c.expr, wraps);
            visit_call_args(&c.args, wraps);
        }
        Expr::List(l) => l.items.iter().for_each(|e| visit_expr(e, wraps)),
        Expr::Tuple(t) => t.items.iter().for_each(|e| visit_expr(e, wraps)),
        Expr::Map(m) => {
            m.keys.iter().for_each(|e| visit_expr(e, wraps));
            m.values.iter().for_each(|e| visit_expr(e, wraps));
        }
    }
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
        assert_eq!(
            instrument("{{ [0] * n * 2 }}", &syntax).as_deref(),
            Some(
                "{{ (([0])|__rtok_mul_lhs * (n)|__rtok_mul_rhs)|__rtok_mul_lhs * (2)|__rtok_mul_rhs }}"
            )
        );
    }
}
