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
//!   is refused here too.

use minijinja::machinery::Token;
use minijinja::machinery::ast::Stmt;
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
}
