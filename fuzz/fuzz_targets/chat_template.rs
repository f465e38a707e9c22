//! Fuzzes chat-template compilation and rendering with a grammar-aware generator: the input
//! bytes drive a small Jinja grammar (statements, expressions, the filters, tests, methods and
//! globals transformers' environment has, and the sizes that make bombs), so most inputs are
//! templates that parse and run. Every template must render or give a typed error, within the
//! render's limits: never a panic, an abort, a stack overflow or a huge allocation (libFuzzer's
//! `-rss_limit_mb` and `-timeout` catch the last two). The raw bytes are also tried as a
//! template, to cover the parser.
#![no_main]

#[path = "../grammar/chat_template.rs"]
mod grammar;

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use router_tokenizer::chat::{ChatRequest, ChatTemplate, TemplateSpecialTokens};

/// libFuzzer's bytes as the grammar's choices.
struct Bytes<'a>(Unstructured<'a>);

impl grammar::Choices for Bytes<'_> {
    fn below(&mut self, n: usize) -> Option<usize> {
        self.0.int_in_range(0..=n.checked_sub(1)?).ok()
    }
}

fn render(template: &str, request: &ChatRequest) {
    if let Ok(t) = ChatTemplate::from_text(template, &TemplateSpecialTokens::new()) {
        let _ = t.render(request);
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(request) = serde_json::from_str::<ChatRequest>(grammar::REQUEST) else {
        return;
    };
    if let Some(template) = grammar::template(&mut Bytes(Unstructured::new(data))) {
        // To see what a finding generates: `RTOK_FUZZ_PRINT=1 cargo fuzz run chat_template FILE`.
        if std::env::var_os("RTOK_FUZZ_PRINT").is_some() {
            eprintln!("template: {template:?}");
        }
        render(&template, &request);
    }
    if let Ok(text) = std::str::from_utf8(data) {
        render(text, &request);
    }
});
