//! Memory and CPU bombs in one template line (issue #11 item 11) must stop with a typed
//! `LimitExceeded` error before they allocate, not abort or stall the process.
//!
//! The bombs run in a child process (this test binary re-invoked with `CHILD_ENV` set) whose
//! address space is capped with `ulimit -v`, so that a bomb that does allocate fails the test
//! instead of taking the machine down; the parent kills a child that stalls.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use router_tokenizer::chat::{
    ChatRequest, ChatTemplate, ChatTemplateError, Message, TemplateSpecialTokens,
};

const CHILD_ENV: &str = "RTOK_CHAT_BOMB_CHILD";
/// The child's address-space cap (KiB): far below what any bomb would allocate, far above what
/// the test needs.
const CAP_KIB: u64 = 1 << 20;
/// A stalled child is killed after this long.
const STALL: Duration = Duration::from_secs(120);

const BOMBS: &[&str] = &[
    "{{ 'x\\ny'|indent(10**12) }}",
    "{% set ns = namespace(x='xxxxxxxx') %}{% for i in range(40) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x|length }}",
    "{% set ns = namespace(x='xxxxxxxx') %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}",
    "{% set ns = namespace(x=[1]) %}{% for i in range(40) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}",
    "{{ ('x' * 10000000)|replace('', 'y' * 100) }}",
    "{{ ('x' * 10000000).replace('', 'y' * 100) }}",
    "{{ [1]|slice(10**9) }}",
    "{{ [1]|batch(10**9, 'x') }}",
    "{{ (['x' * 1000000] * 1000)|join }}",
    "{{ ['x' * 1000000] * 1000 }}",
    "{{ ('x' * 1000000)|list|join(',' * 100) }}",
    "{{ '%999999999s'|format('x') }}",
    "{{ '%s%s'|format('x' * 40000000, 'y' * 40000000) }}",
    "{% for i in range(100000) %}{{ range(100000)|sort|length }}{% endfor %}",
    "{% for i in range(100000) %}{{ range(100000)|unique|list|length }}{% endfor %}",
    "{{ ([0] * 10**8)|list|length }}",
    "{{ 'x' * 10**9 }}",
    "{{ 10**9 * 'x' }}",
    "{{ [] * 10**12 }}",
    "{% for c in 'x' * 60000000 %}{% endfor %}",
    "{{ ('x' * 60000000)|center(10**9) }}",
];

/// Lazy list concatenation (minijinja nests one level per `+`) doubled over an empty list or a
/// generator: free in size, 2^n steps to iterate or flatten before the fix (found by the
/// `chat_template` fuzz target). Each renders (`Ok`) or fails like Python (`Err`: a generator
/// cannot be added).
const LAZY_CONCAT: &[(&str, Result<&str, &str>)] = &[
    (
        "{% set ns = namespace(x=('')|list) %}{% for i in range(1000) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}",
        Ok("0"),
    ),
    (
        "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x }}{{ ns.x|list }}{{ ns.x|tojson }}",
        Ok("[][][]"),
    ),
    (
        "{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = ns.x + [] + ns.x %}{% endfor %}{{ (ns.x + [1])[0] }}",
        Ok("1"),
    ),
    (
        "{% set ns = namespace(x=[1]|map('string')) %}{% for i in range(1000) %}{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|list }}",
        Err("unsupported operand type(s) for +"),
    ),
];

fn run_lazy_concat() {
    let request = ChatRequest::new(vec![Message::new("user", "hi")]);
    for (source, want) in LAZY_CONCAT {
        let start = Instant::now();
        let result = ChatTemplate::from_text(source, &TemplateSpecialTokens::new())
            .and_then(|t| t.render(&request));
        match (&result, want) {
            (Ok(text), Ok(want)) if text == want => {}
            (Err(ChatTemplateError::Render { detail }), Err(want)) if detail.contains(want) => {}
            _ => panic!("{source:?}: expected {want:?}, got {result:?}"),
        }
        println!("{source:?}: stopped after {:?}", start.elapsed());
    }
}

fn run_bombs() {
    let request = ChatRequest::new(vec![Message::new("user", "hi")]);
    for bomb in BOMBS {
        let start = Instant::now();
        let result = ChatTemplate::from_text(bomb, &TemplateSpecialTokens::new())
            .and_then(|t| t.render(&request));
        match result {
            Err(ChatTemplateError::LimitExceeded { .. }) => {}
            Err(other) => panic!("{bomb:?}: expected LimitExceeded, got {other:?}"),
            Ok(text) => panic!(
                "{bomb:?}: expected LimitExceeded, rendered {} bytes",
                text.len()
            ),
        }
        println!("{bomb:?}: stopped after {:?}", start.elapsed());
    }
}

#[test]
fn bombs_stop_with_a_typed_error_under_a_memory_cap() {
    if std::env::var_os(CHILD_ENV).is_some() {
        run_bombs();
        run_lazy_concat();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    // A file, not a pipe: a child that prints a lot must not block on a full pipe.
    let log_path = std::env::temp_dir().join(format!("rtok-chat-bombs-{}.log", std::process::id()));
    let log_file = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args([
            "--exact",
            "chat_bombs::bombs_stop_with_a_typed_error_under_a_memory_cap",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::from(log_file.try_clone().unwrap()))
        .stderr(Stdio::from(log_file))
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > STALL {
            child.kill().unwrap();
            panic!("the bombs stalled for over {STALL:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    let _ = std::fs::remove_file(&log_path);
    assert!(
        status.success(),
        "the capped child failed ({status}):\n{log}"
    );
    for bomb in BOMBS
        .iter()
        .copied()
        .chain(LAZY_CONCAT.iter().map(|(source, _)| *source))
    {
        assert!(
            log.contains(&format!("{bomb:?}: stopped")),
            "{bomb:?} did not run:\n{log}"
        );
    }
}
