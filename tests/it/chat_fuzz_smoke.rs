//! A smoke run of the `chat_template` fuzz target's grammar (CI has no cargo-fuzz): seeded
//! choices draw templates from the same grammar (`fuzz/grammar/chat_template.rs`), and each
//! must render or stop with a typed error within the render's limits, never panic.

#[path = "../../fuzz/grammar/chat_template.rs"]
mod grammar;

use router_tokenizer::chat::{ChatRequest, ChatTemplate, TemplateSpecialTokens};

/// xorshift64: deterministic choices, so a failure names the seed that reproduces it.
struct Seeded(u64);

impl grammar::Choices for Seeded {
    fn below(&mut self, n: usize) -> Option<usize> {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        Some((self.0 % n.max(1) as u64) as usize)
    }
}

#[test]
fn generated_templates_render_or_fail_with_a_typed_error() {
    let request: ChatRequest = serde_json::from_str(grammar::REQUEST).unwrap();
    let (mut compiled, mut rendered, mut refused) = (0, 0, 0);
    for seed in 1..=1000u64 {
        let mut choices = Seeded(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let template = grammar::template(&mut choices).unwrap();
        let outcome = std::panic::catch_unwind(|| {
            ChatTemplate::from_text(&template, &TemplateSpecialTokens::new())
                .map(|t| t.render(&request))
        });
        match outcome {
            Ok(Ok(Ok(_))) => (compiled, rendered) = (compiled + 1, rendered + 1),
            Ok(Ok(Err(err))) => {
                compiled += 1;
                assert!(!err.to_string().is_empty(), "seed {seed}: empty error");
            }
            Ok(Err(err)) => {
                refused += 1;
                assert!(!err.to_string().is_empty(), "seed {seed}: empty error");
            }
            Err(_) => panic!("seed {seed} panicked on template {template:?}"),
        }
    }
    // Uniform choices draw long chains often, which the nesting limit refuses (also a
    // case under test); a smoke run where nothing compiles or renders would test nothing.
    assert!(
        compiled >= 100,
        "only {compiled} of 1000 compiled ({refused} refused)"
    );
    assert!(rendered >= 50, "only {rendered} of 1000 rendered");
    eprintln!("{compiled} compiled, {rendered} rendered, {refused} refused");
}
