//! Hostile templates: each must stop with a typed error, quickly, without crashing the process.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use router_tokenizer::chat::{
    ChatRequest, ChatTemplate, ChatTemplateError, Limit, Message, RenderLimits, SpecialTokens,
    TemplateSource,
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
            let result = ChatTemplate::from_text(&source, &SpecialTokens::new())
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

#[test]
fn deeply_nested_expressions_are_a_syntax_error() {
    let deep = format!("{{{{ {}1{} }}}}", "(".repeat(10_000), ")".repeat(10_000));
    let (result, took) = render(&deep);
    assert!(
        matches!(result, Err(ChatTemplateError::Syntax { .. })),
        "{result:?}"
    );
    assert!(took < BOUND);
    let deep_blocks = "{% if true %}".repeat(5_000) + &"{% endif %}".repeat(5_000);
    let (result, _) = render(&deep_blocks);
    assert!(
        matches!(result, Err(ChatTemplateError::Syntax { .. })),
        "{result:?}"
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
        &SpecialTokens::new(),
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
