//! The chat-template grammar shared by the `chat_template` fuzz target and the test
//! suite's smoke run of it (`tests/it/chat_fuzz_smoke.rs`, CI has no cargo-fuzz): a source
//! of choices drives a small Jinja grammar (statements, expressions, the filters, tests,
//! methods and globals transformers' environment has, and the sizes that make bombs), so
//! most outputs are templates that parse and run.

/// Where the grammar's choices come from: libFuzzer's bytes, or a seeded generator.
pub trait Choices {
    /// A number below `n` (`n > 0`), or `None` when the source is exhausted.
    fn below(&mut self, n: usize) -> Option<usize>;
}

/// The conversation every generated template renders.
pub const REQUEST: &str = r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"type": "function", "function": {"arguments": "{}", "name": "f"}}]}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}"#;

/// A template drawn from `u`, or `None` when the choices ran out first.
pub fn template(u: &mut impl Choices) -> Option<String> {
    let mut out = String::new();
    block(u, &mut out, 0)?;
    Some(out)
}

const VARS: &[&str] = &[
    "messages",
    "tools",
    "documents",
    "add_generation_prompt",
    "bos_token",
    "eos_token",
    "message",
    "m",
    "x",
    "ns.x",
    "loop.index",
    "loop.last",
    "loop.length",
    "undefined_var",
    "messages[0]",
    "messages[-1].content",
    "message.tool_calls",
    "message['content']",
];
const CONSTS: &[&str] = &[
    "''",
    "'x'",
    "'<b>'",
    "'a\\nb'",
    "'{\\n'",
    "'%s'",
    "'%999s'",
    "0",
    "1",
    "-1",
    "3",
    "100000",
    "10**9",
    "10**12",
    "1.5",
    "none",
    "true",
    "false",
    "[]",
    "[1, 2]",
    "[0]",
    "{}",
    "{'a': 1}",
    "range(5)",
    "range(100000)",
    "namespace(x=1)",
];
const FILTERS: &[&str] = &[
    "length",
    "count",
    "list",
    "string",
    "trim",
    "upper",
    "lower",
    "title",
    "capitalize",
    "tojson",
    "tojson(indent=4)",
    "items",
    "first",
    "last",
    "reverse",
    "sort",
    "unique",
    "join",
    "join(', ')",
    "indent(4)",
    "indent(10**12)",
    "indent(2, first=true)",
    "replace('', 'yy')",
    "replace('x', 'y')",
    "slice(3)",
    "slice(10**9)",
    "batch(2)",
    "batch(10**9, 'x')",
    "map('string')",
    "map(attribute='role')",
    "select",
    "reject",
    "selectattr('role')",
    "rejectattr('role')",
    "default('d')",
    "safe",
    "int",
    "float",
    "abs",
    "round",
    "sum",
    "min",
    "max",
    "center(10)",
    "center(10**9)",
    "format(1)",
    "wordcount",
    "truncate(3)",
    "dictsort",
    "groupby('role')",
    "e",
    "striptags",
    "filesizeformat",
    "attr('x')",
];
const METHODS: &[&str] = &[
    "strip()",
    "split()",
    "split(',')",
    "splitlines()",
    "startswith('a')",
    "endswith('b')",
    "replace('', 'x')",
    "join(['a', 'b'])",
    "upper()",
    "lower()",
    "title()",
    "format(1)",
    "items()",
    "keys()",
    "values()",
    "get('a')",
    "get('role', 'x')",
    "append(1)",
    "pop()",
    "center(10**9)",
    "zfill(5)",
    "ljust(10)",
    "count('x')",
    "find('x')",
    "index('x')",
];
const TESTS: &[&str] = &[
    "defined",
    "undefined",
    "none",
    "string",
    "number",
    "mapping",
    "iterable",
    "sequence",
    "true",
    "false",
    "odd",
    "even",
    "divisibleby(2)",
    "equalto(1)",
    "in([1])",
    "boolean",
];
const BINOPS: &[&str] = &[
    "+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "in", "not in", "and", "or",
];

fn pick<'a>(u: &mut impl Choices, items: &'a [&'a str]) -> Option<&'a str> {
    items.get(u.below(items.len())?).copied()
}

fn range(u: &mut impl Choices, lo: u32, hi: u32) -> Option<u32> {
    Some(lo + u.below((hi - lo + 1) as usize)? as u32)
}

fn flip(u: &mut impl Choices) -> Option<bool> {
    Some(u.below(2)? == 1)
}

fn expr(u: &mut impl Choices, out: &mut String, depth: u32) -> Option<()> {
    let choice = if depth > 4 {
        range(u, 0, 1)?
    } else {
        range(u, 0, 10)?
    };
    match choice {
        0 => out.push_str(pick(u, VARS)?),
        1 => out.push_str(pick(u, CONSTS)?),
        2 | 3 => {
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push_str(")|");
            out.push_str(pick(u, FILTERS)?);
        }
        4 => {
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push(' ');
            out.push_str(pick(u, BINOPS)?);
            out.push(' ');
            expr(u, out, depth + 1)?;
            out.push(')');
        }
        5 => {
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push_str(").");
            out.push_str(pick(u, METHODS)?);
        }
        6 => {
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push_str(" is ");
            if flip(u)? {
                out.push_str("not ");
            }
            out.push_str(pick(u, TESTS)?);
            out.push(')');
        }
        7 => {
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push_str(" if ");
            expr(u, out, depth + 1)?;
            out.push_str(" else ");
            expr(u, out, depth + 1)?;
            out.push(')');
        }
        8 => {
            out.push('[');
            expr(u, out, depth + 1)?;
            out.push_str(", ");
            expr(u, out, depth + 1)?;
            out.push(']');
        }
        9 => {
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push_str(")[");
            expr(u, out, depth + 1)?;
            out.push(']');
        }
        _ => chain(u, out, depth)?,
    }
    Some(())
}

/// Long operator chains and deep nesting (up to 400 levels, past the nesting limit): they
/// must render or stop with a typed error, never overflow the stack.
fn chain(u: &mut impl Choices, out: &mut String, depth: u32) -> Option<()> {
    let n = range(u, 2, 400)?;
    match range(u, 0, 3)? {
        0 => {
            let op = pick(u, BINOPS)?;
            out.push('(');
            expr(u, out, depth + 1)?;
            for _ in 1..n {
                out.push(' ');
                out.push_str(op);
                out.push(' ');
                out.push_str(pick(u, CONSTS)?);
            }
            out.push(')');
        }
        1 => {
            let postfix = pick(
                u,
                &[
                    "|string",
                    "|list",
                    "|first",
                    ".x",
                    "[0]",
                    "()",
                    " is string",
                ],
            )?;
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push(')');
            for _ in 1..n {
                out.push_str(postfix);
            }
        }
        2 => {
            let unary = pick(u, &["not ", "- "])?;
            for _ in 1..n {
                out.push_str(unary);
            }
            out.push('(');
            expr(u, out, depth + 1)?;
            out.push(')');
        }
        _ => {
            let (open, close) =
                [("(", ")"), ("[", "]"), ("f(", ")"), ("{'a': ", "}")][u.below(4)?];
            for _ in 1..n {
                out.push_str(open);
            }
            expr(u, out, depth + 1)?;
            for _ in 1..n {
                out.push_str(close);
            }
        }
    }
    Some(())
}

fn block(u: &mut impl Choices, out: &mut String, depth: u32) -> Option<()> {
    let count = range(u, 1, 4)?;
    for _ in 0..count {
        let choice = if depth > 3 {
            range(u, 0, 2)?
        } else {
            range(u, 0, 8)?
        };
        match choice {
            0 => out.push_str("text\n"),
            1 | 2 => {
                out.push_str("{{ ");
                expr(u, out, 0)?;
                out.push_str(" }}");
            }
            3 | 4 => {
                out.push_str("{% for x in ");
                expr(u, out, 0)?;
                out.push_str(" %}");
                block(u, out, depth + 1)?;
                if flip(u)? {
                    out.push_str("{% else %}");
                    block(u, out, depth + 1)?;
                }
                out.push_str("{% endfor %}");
            }
            5 => {
                out.push_str("{% if ");
                expr(u, out, 0)?;
                out.push_str(" %}");
                block(u, out, depth + 1)?;
                for _ in 0..range(u, 0, 300)? {
                    out.push_str("{% elif ");
                    expr(u, out, 4)?;
                    out.push_str(" %}x");
                }
                out.push_str("{% else %}");
                block(u, out, depth + 1)?;
                out.push_str("{% endif %}");
            }
            6 => {
                out.push_str(if flip(u)? {
                    "{% set x = "
                } else {
                    "{% set ns.x = "
                });
                expr(u, out, 0)?;
                out.push_str(" %}");
            }
            7 => {
                out.push_str("{% macro f(a, b=1) %}");
                block(u, out, depth + 1)?;
                out.push_str("{% endmacro %}{{ f(");
                expr(u, out, 0)?;
                out.push_str(") }}");
            }
            _ => {
                out.push_str("{% set ns = namespace(x=");
                expr(u, out, 0)?;
                out.push_str(") %}{% for i in range(");
                out.push_str(pick(u, &["3", "40", "1000"])?);
                out.push_str(") %}{% set ns.x = ns.x ");
                out.push_str(pick(u, &["~", "+", "*"])?);
                out.push_str(" ns.x %}{% endfor %}{{ ns.x|length }}");
            }
        }
    }
    Some(())
}
