//! Hostile templates: each must stop with a typed error, quickly, without crashing the process.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use router_tokenizer::chat::{
    ChatRequest, ChatTemplate, ChatTemplateError, Limit, Message, RenderLimits, TemplateSource,
    TemplateSpecialTokens,
};

/// Generous: the limits stop these in well under a second on a quiet machine.
const BOUND: Duration = Duration::from_secs(10);

fn request() -> ChatRequest {
    ChatRequest::new(vec![Message::new("user", "hi")])
}

/// Renders on a thread with a 2 MiB stack (a typical async worker), so that runaway recursion
/// shows up as a crash rather than hiding behind the main thread's larger stack.
fn render(source: &str) -> (Result<String, ChatTemplateError>, Duration) {
    let source = source.to_owned();
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let start = Instant::now();
            let result = ChatTemplate::from_text(&source, &TemplateSpecialTokens::new())
                .and_then(|t| t.render(&request()));
            (result, start.elapsed())
        })
        .unwrap()
        .join()
        .expect("render thread crashed")
}

fn assert_limit(source: &str, want: Limit) {
    let (result, took) = render(source);
    match result {
        Err(ChatTemplateError::LimitExceeded { limit, .. }) if limit == want => {}
        other => panic!("{source:?}: expected LimitExceeded({want:?}), got {other:?}"),
    }
    assert!(took < BOUND, "{source:?} took {took:?}");
}

#[test]
fn nested_loops_run_out_of_fuel() {
    assert_limit(
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        Limit::Fuel,
    );
}

#[test]
fn loop_over_huge_range_is_refused() {
    // Python's sandbox refuses ranges over 100000 items too (OverflowError).
    assert_limit("{% for i in range(10**9) %}x{% endfor %}", Limit::Size);
}

#[test]
fn recursive_macro_hits_the_recursion_limit() {
    assert_limit(
        "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        Limit::Recursion,
    );
    assert_limit(
        "{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(0) }}",
        Limit::Recursion,
    );
}

#[test]
fn recursive_loop_hits_the_recursion_limit() {
    assert_limit(
        "{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}",
        Limit::Recursion,
    );
}

#[test]
fn huge_string_multiplication_is_refused() {
    assert_limit("{{ 'x' * 10**12 }}", Limit::Size);
    assert_limit("{{ 'abc' * 1000000000 }}", Limit::Size);
    assert_limit("{{ [1, 2] * 10**12 }}", Limit::Size);
}

#[test]
fn printing_too_much_is_refused() {
    // Each print is allowed, the total is not: top level and inside a macro.
    assert_limit(
        "{% for i in range(100000) %}{{ 'x' * 10000000 }}{% endfor %}",
        Limit::Size,
    );
    assert_limit(
        "{% macro m() %}{% for i in range(100000) %}{{ 'x' * 10000000 }}{% endfor %}{% endmacro %}{{ m() }}",
        Limit::Size,
    );
    // Raw text in a loop, bounded by the writer.
    let raw = "y".repeat(64 * 1024);
    let src = format!(
        "{{% for i in range(100000) %}}{{% for j in range(100000) %}}{raw}{{% endfor %}}{{% endfor %}}"
    );
    let (result, took) = render(&src);
    assert!(
        matches!(result, Err(ChatTemplateError::LimitExceeded { .. })),
        "{result:?}"
    );
    assert!(took < BOUND, "took {took:?}");
}

/// Shapes that nest the syntax tree one level per repetition: `(prefix, unit, middle, close,
/// tail)` gives `prefix + unit × n + middle + close × n + tail`. minijinja's parser limits only some of them
/// (parentheses, brackets, blocks); flat chains build a left-deep tree of any depth.
const DEEP_SHAPES: &[(&str, &str, &str, &str, &str)] = &[
    ("{{ 1", " + 1", " }}", "", ""),
    ("{{ 1", " ~ 1", " }}", "", ""),
    ("{{ 1", " * 1", " }}", "", ""),
    ("{{ 1", " - 1", " }}", "", ""),
    ("{{ 1", " // 1", " }}", "", ""),
    ("{{ 1", " and 1", " }}", "", ""),
    ("{{ 1", " or 1", " }}", "", ""),
    ("{{ 1", " == 1", " }}", "", ""),
    ("{{ 1", " if 1 else 1", " }}", "", ""),
    ("{{ ", "not ", "1 }}", "", ""),
    ("{{ ", "- ", "1 }}", "", ""),
    ("{{ x", ".a", " }}", "", ""),
    ("{{ 'abc'", "[0]", " }}", "", ""),
    ("{{ 'abc'", "[0:2]", " }}", "", ""),
    ("{{ x", "()", " }}", "", ""),
    ("{{ 'x'", "|string", " }}", "", ""),
    ("{{ 'x'", " is string", " }}", "", ""),
    ("{{ ", "(", "1", ")", " }}"),
    ("{{ ", "[", "1", "]", " }}"),
    ("{{ ", "{'a': ", "1", "}", " }}"),
    ("{{ ", "x(", "1", ")", " }}"),
    ("{{ ", "'x'|replace('x', ", "'y'", ")", " }}"),
    ("{% if 0 %}", "{% elif 0 %}", "{% endif %}", "", ""),
    ("", "{% if 1 %}", "x", "{% endif %}", ""),
    ("", "{% for i in [1] %}", "x", "{% endfor %}", ""),
    ("", "{% set x %}", "x", "{% endset %}", ""),
    ("", "{% macro m() %}", "x", "{% endmacro %}", ""),
    (
        "{% set ns = namespace(a=1) %}{{ ",
        "ns.a + (",
        "1",
        ")",
        " }}",
    ),
];

fn deep(shape: &(&str, &str, &str, &str, &str), n: usize) -> String {
    let (prefix, unit, middle, close, tail) = shape;
    format!(
        "{prefix}{}{middle}{}{tail}",
        unit.repeat(n),
        close.repeat(n)
    )
}

#[test]
fn deep_nesting_and_long_chains_are_refused_on_a_small_stack() {
    // Every shape, far past the limit: a typed `Nesting` error, no stack overflow, on a thread
    // with a 2 MiB stack. A chain of 100,000 terms overflowed that stack before.
    for shape in DEEP_SHAPES {
        for n in [300, 100_000] {
            let src = deep(shape, n);
            let (result, _) = render(&src);
            assert!(
                matches!(
                    result,
                    Err(ChatTemplateError::LimitExceeded {
                        limit: Limit::Nesting,
                        ..
                    })
                ),
                "{shape:?} × {n}: {:?}",
                result.map(|s| s.len())
            );
        }
    }
    // A deep part after a long harmless one is still found.
    let src = "{{ 'x' }}".repeat(10_000) + &deep(&DEEP_SHAPES[0], 100_000);
    assert!(matches!(
        render(&src).0,
        Err(ChatTemplateError::LimitExceeded {
            limit: Limit::Nesting,
            ..
        })
    ));
}

#[test]
fn nesting_below_the_limit_renders_on_a_small_stack() {
    // Below the limit every shape compiles on a 2 MiB stack and renders (or fails as Jinja2
    // would: `x` is undefined). minijinja's parser allows about 75 nested brackets, and the
    // operands of `~`, `+` and `*` are nested one level deeper each by instrumentation.
    for shape in DEEP_SHAPES {
        let instrumented = [" + ", " ~ ", " * "].iter().any(|op| shape.1.contains(op));
        let n = match (instrumented, !shape.3.is_empty()) {
            (false, false) => 120,
            (true, true) => 30,
            _ => 60,
        };
        let src = deep(shape, n);
        let (result, _) = render(&src);
        match result {
            Ok(_) => {}
            Err(ChatTemplateError::Render { .. }) if src.contains("x") => {}
            other => panic!("{shape:?} × {n}: {other:?}"),
        }
    }
    // The nested levels of different kinds add up.
    let src = "{% if 1 %}".repeat(40)
        + "{{ 1"
        + &" - (1".repeat(30)
        + &" - 1".repeat(100)
        + &")".repeat(30)
        + " }}"
        + &"{% endif %}".repeat(40);
    assert_eq!(render(&src).0.unwrap(), "-99");
    let src =
        "{% if 1 %}".repeat(40) + "{{ 1" + &" - 1".repeat(250) + " }}" + &"{% endif %}".repeat(40);
    assert!(matches!(
        render(&src).0,
        Err(ChatTemplateError::LimitExceeded {
            limit: Limit::Nesting,
            ..
        })
    ));
    // Chains of `~`, `+` and `*` are instrumented (each operand is checked against the size
    // budget), which nests every operand one parenthesis deeper: a chain too long for that is
    // refused rather than run without its checks.
    let (result, _) = render(&deep(&DEEP_SHAPES[1], 100));
    match result {
        Err(ChatTemplateError::LimitExceeded {
            limit: Limit::Nesting,
            detail,
        }) => assert!(detail.contains("instrument"), "{detail}"),
        other => panic!("{other:?}"),
    }
}

/// The fastest of seven compiles and renders of `small` and of `large`, alternating, on one
/// thread with a 2 MiB stack; `check` judges each result.
fn best_times(
    small: String,
    large: String,
    check: fn(&Result<String, ChatTemplateError>) -> bool,
) -> (Duration, Duration) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let mut best = (Duration::MAX, Duration::MAX);
            for _ in 0..7 {
                for (source, slot) in [(&small, &mut best.0), (&large, &mut best.1)] {
                    let start = Instant::now();
                    let result = ChatTemplate::from_text(source, &TemplateSpecialTokens::new())
                        .and_then(|t| t.render(&request()));
                    *slot = (*slot).min(start.elapsed());
                    assert!(check(&result), "{result:?}");
                }
            }
            best
        })
        .unwrap()
        .join()
        .expect("timing thread crashed")
}

#[test]
fn compile_and_render_time_is_linear_in_template_size() {
    // One unit has allowed chains, nesting, elifs, filters and text; 4× the units must take
    // about 4× the time, far from 16× (a ratio, not a time: the bound is generous).
    let unit = concat!(
        "{% if messages[0].content == 'x' %}a{% elif 0 %}b{% elif 0 %}c{% elif 1 %}",
        "{{ 'a' ~ 'b' ~ 'c' ~ 'd' ~ 'e' ~ 'f' ~ 'g' ~ 'h' ~ 'i' ~ 'j' ~ 'k' ~ 'l' }}",
        "{{ 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 - 1 }}",
        "{{ ((((([1, 2, 3]|map('string')|join(',')|upper|lower)))))|length }}",
        "{% for m in messages %}{{ m.role|upper ~ ': ' ~ m.content|trim }}{% endfor %}",
        "{% endif %}{# a comment #}some text between the tags\n",
    );
    let (t1, t4) = best_times(unit.repeat(250), unit.repeat(1000), |r| r.is_ok());
    let ratio = t4.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    println!("rendered 1×: {t1:?}, 4×: {t4:?}, ratio {ratio:.2}");
    assert!(
        ratio < 10.0,
        "rendered 1×: {t1:?}, 4×: {t4:?}, ratio {ratio:.2}"
    );

    // A template refused for its depth is refused in time linear in its length: the deep
    // chain comes after a long harmless part.
    let refused = |n: usize| "{{ 'x' }}".repeat(n) + &deep(&DEEP_SHAPES[0], n);
    let (t1, t4) = best_times(refused(20_000), refused(80_000), |r| {
        matches!(
            r,
            Err(ChatTemplateError::LimitExceeded {
                limit: Limit::Nesting,
                ..
            })
        )
    });
    let ratio = t4.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    println!("refused 1×: {t1:?}, 4×: {t4:?}, ratio {ratio:.2}");
    assert!(
        ratio < 10.0,
        "refused 1×: {t1:?}, 4×: {t4:?}, ratio {ratio:.2}"
    );
}

#[test]
fn deeply_nested_values_are_refused_by_python_formatting() {
    // Printing, `string` and `tojson` of a 2000-level [[[...]]] stop at a depth limit with an
    // error instead of recursing (Python raises RecursionError at ~1000 levels).
    // Known limit: minijinja's own recursive operations (dropping, `==`, `~`) on values nested
    // tens of thousands of levels deep (which a hostile template can build within its fuel)
    // need stack in proportion; see the module documentation.
    for tail in [
        "{{ ns.x }}",
        "{{ ns.x | tojson }}",
        "{{ ns.x | string }}",
        "{{ [ns.x] | join(',') }}",
    ] {
        let src = format!(
            "{{% set ns = namespace(x=[]) %}}{{% for i in range(2000) %}}{{% set ns.x = [ns.x] %}}{{% endfor %}}{tail}"
        );
        let (result, took) = render(&src);
        assert!(took < BOUND, "{tail}: took {took:?}");
        assert!(result.is_err(), "{tail}: {result:?}");
    }
    let (result, _) = render(
        "{% set ns = namespace(x=[]) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x | length }}",
    );
    assert_eq!(result.unwrap(), "1");
}

#[test]
fn no_file_or_template_access() {
    for src in [
        "{% include '/etc/passwd' %}",
        "{% import 'x.jinja' as x %}",
        "{% extends 'base' %}",
        "{% from 'x' import y %}{{ y }}",
        "{% include 'default' %}",
    ] {
        let (result, _) = render(src);
        assert!(result.is_err(), "{src}: {result:?}");
    }
}

#[test]
fn fuel_scales_with_the_request() {
    // A loop of 60000 iterations needs more than the base fuel of 1000, but fits when the
    // request is large enough to earn it.
    let limits = RenderLimits {
        fuel_base: 1_000,
        fuel_per_item: 10_000,
        ..RenderLimits::default()
    };
    let t = ChatTemplate::with_limits(
        TemplateSource::from_text("{% for i in range(20000) %}{% endfor %}ok"),
        &TemplateSpecialTokens::new(),
        limits,
    )
    .unwrap();
    let small = request();
    assert!(matches!(
        t.render(&small),
        Err(ChatTemplateError::LimitExceeded {
            limit: Limit::Fuel,
            ..
        })
    ));
    let big = ChatRequest::new(vec![Message::new("user", "hi"); 10]);
    assert_eq!(t.render(&big).unwrap(), "ok");
}

#[test]
fn raise_exception_is_typed() {
    let (result, _) = render("{{ raise_exception('nope: ' ~ messages[0].content) }}");
    assert_eq!(
        result,
        Err(ChatTemplateError::Raised {
            message: "nope: hi".into()
        })
    );
}
