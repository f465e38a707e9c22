//! Detects from a template's syntax tree whether it reads message content as a string or
//! iterates over OpenAI content parts, so a router knows whether to flatten `content`.
//!
//! The template is parsed, never rewritten. The rule: if some `{% for %}` loop iterates directly
//! over the `content` of a message (`message.content` / `message['content']`, possibly filtered
//! or sliced, where `message` is a loop variable over `messages`, over a variable assigned from
//! `messages` or a slice or filter of it, or `messages[i]`), the template expects parts
//! (`OpenAi`); otherwise it expects a string.

use std::collections::HashSet;

use minijinja::machinery::ast::{Expr, Stmt};

/// How a template expects `message.content`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContentFormat {
    /// The template uses `content` as a string: send text (flatten parts).
    String,
    /// The template iterates over `content`: send the OpenAI list of parts.
    OpenAi,
}

/// What one pass over the tree collects.
#[derive(Default)]
struct Facts<'a> {
    /// `{% set name = expr %}` with a plain variable as target.
    sets: Vec<(&'a str, &'a Expr<'a>)>,
    /// `{% for target in iter %}` with a plain variable as target.
    loops: Vec<(&'a str, &'a Expr<'a>)>,
}

fn walk_stmts<'a>(stmts: &'a [Stmt<'a>], facts: &mut Facts<'a>) {
    for stmt in stmts {
        walk_stmt(stmt, facts);
    }
}

fn walk_stmt<'a>(stmt: &'a Stmt<'a>, facts: &mut Facts<'a>) {
    match stmt {
        Stmt::Template(t) => walk_stmts(&t.children, facts),
        Stmt::ForLoop(f) => {
            if let Expr::Var(v) = &f.target {
                facts.loops.push((v.id, &f.iter));
            }
            walk_stmts(&f.body, facts);
            walk_stmts(&f.else_body, facts);
        }
        Stmt::IfCond(i) => {
            walk_stmts(&i.true_body, facts);
            walk_stmts(&i.false_body, facts);
        }
        Stmt::WithBlock(w) => {
            for (target, expr) in &w.assignments {
                if let Expr::Var(v) = target {
                    facts.sets.push((v.id, expr));
                }
            }
            walk_stmts(&w.body, facts);
        }
        Stmt::Set(s) => {
            if let Expr::Var(v) = &s.target {
                facts.sets.push((v.id, &s.expr));
            }
        }
        Stmt::SetBlock(s) => walk_stmts(&s.body, facts),
        Stmt::AutoEscape(a) => walk_stmts(&a.body, facts),
        Stmt::FilterBlock(f) => walk_stmts(&f.body, facts),
        Stmt::Block(b) => walk_stmts(&b.body, facts),
        Stmt::Macro(m) => walk_stmts(&m.body, facts),
        Stmt::CallBlock(c) => walk_stmts(&c.macro_decl.body, facts),
        _ => {}
    }
}

/// `name`, or a filter / test / slice of it.
fn derives_from(expr: &Expr<'_>, names: &HashSet<&str>) -> bool {
    match expr {
        Expr::Var(v) => names.contains(v.id),
        Expr::Filter(f) => f.expr.as_ref().is_some_and(|e| derives_from(e, names)),
        Expr::Test(t) => derives_from(&t.expr, names),
        Expr::Slice(s) => derives_from(&s.expr, names),
        _ => false,
    }
}

/// `name[<int>]`: one element of a list variable.
fn element_of(expr: &Expr<'_>, names: &HashSet<&str>) -> bool {
    match expr {
        Expr::GetItem(g) => {
            matches!(&g.subscript_expr, Expr::Const(c) if c.value.is_integer())
                && derives_from(&g.expr, names)
        }
        Expr::Filter(f) if matches!(f.name, "first" | "last") => {
            f.expr.as_ref().is_some_and(|e| derives_from(e, names))
        }
        _ => false,
    }
}

/// `msg.content` or `msg['content']` (possibly filtered or sliced) for a message variable.
fn content_of(expr: &Expr<'_>, messages: &HashSet<&str>) -> bool {
    match expr {
        Expr::GetAttr(a) => a.name == "content" && derives_from(&a.expr, messages),
        Expr::GetItem(g) => {
            matches!(&g.subscript_expr, Expr::Const(c) if c.value.as_str() == Some("content"))
                && derives_from(&g.expr, messages)
        }
        Expr::Filter(f) => f.expr.as_ref().is_some_and(|e| content_of(e, messages)),
        Expr::Slice(s) => content_of(&s.expr, messages),
        _ => false,
    }
}

/// Grows `names` with every `set` target assigned from a member of `names` until nothing
/// changes.
fn close_over_sets<'a>(
    names: &mut HashSet<&'a str>,
    facts: &Facts<'a>,
    assigned: impl Fn(&Expr<'_>, &HashSet<&str>) -> bool,
) {
    loop {
        let before = names.len();
        for (target, expr) in &facts.sets {
            if !names.contains(target) && assigned(expr, names) {
                names.insert(target);
            }
        }
        if names.len() == before {
            break;
        }
    }
}

/// Detects the content format of a parsed template.
pub(crate) fn detect(ast: &Stmt<'_>) -> ContentFormat {
    let mut facts = Facts::default();
    walk_stmt(ast, &mut facts);

    // Lists of messages: `messages` and everything assigned from it.
    let mut lists: HashSet<&str> = HashSet::from(["messages"]);
    close_over_sets(&mut lists, &facts, derives_from);

    // Single messages: loop variables over those lists, and `set m = messages[0]`.
    let mut messages: HashSet<&str> = facts
        .loops
        .iter()
        .filter(|(_, iter)| derives_from(iter, &lists))
        .map(|(target, _)| *target)
        .collect();
    for (target, expr) in &facts.sets {
        if element_of(expr, &lists) {
            messages.insert(target);
        }
    }
    close_over_sets(&mut messages, &facts, derives_from);

    let iterates_content = facts
        .loops
        .iter()
        .any(|(_, iter)| content_of(iter, &messages));
    if iterates_content {
        ContentFormat::OpenAi
    } else {
        ContentFormat::String
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::syntax::SyntaxConfig;

    fn fmt(src: &str) -> ContentFormat {
        match minijinja::machinery::parse(src, "t", SyntaxConfig::default()) {
            Ok(ast) => detect(&ast),
            Err(_) => ContentFormat::String,
        }
    }

    #[test]
    fn detects_parts_loops() {
        assert_eq!(
            fmt("{% for m in messages %}{{ m['content'] }}{% endfor %}"),
            ContentFormat::String
        );
        assert_eq!(
            fmt(
                "{% for m in messages %}{% for p in m['content'] %}{{ p.text }}{% endfor %}{% endfor %}"
            ),
            ContentFormat::OpenAi
        );
        assert_eq!(
            fmt(
                "{% set loop_messages = messages[1:] %}{% for m in loop_messages %}{% for p in m.content | selectattr('type', 'equalto', 'text') %}{{ p.text }}{% endfor %}{% endfor %}"
            ),
            ContentFormat::OpenAi
        );
        assert_eq!(
            fmt("{% set first = messages[0] %}{% for p in first.content %}{{ p }}{% endfor %}"),
            ContentFormat::OpenAi
        );
        // Loops over a variable copied from the content are not followed (Mistral-Nemo copies
        // `message.content` into `tool_calls` for a legacy role; it is a string template).
        assert_eq!(
            fmt(
                "{% for m in messages %}{% set c = m.content %}{% for p in c %}{{ p }}{% endfor %}{% endfor %}"
            ),
            ContentFormat::String
        );
        assert_eq!(
            fmt("{% for x in tools %}{% for p in x.content %}{% endfor %}{% endfor %}"),
            ContentFormat::String
        );
        assert_eq!(fmt("{% for"), ContentFormat::String);
    }
}
