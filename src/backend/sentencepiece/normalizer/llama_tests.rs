use super::*;

fn run(prefix: bool, merge: bool, text: &str) -> (String, Vec<usize>) {
    let spec = NormalizerSpec {
        add_dummy_prefix: prefix,
        remove_extra_whitespaces: merge,
        escape_whitespaces: true,
        ..NormalizerSpec::default()
    };
    let n = Normalizer::new(&spec, false, "test")
        .unwrap()
        .with_flavor(Flavor::LlamaCpp);
    let (mut out, mut n2o) = (Vec::new(), Vec::new());
    n.normalize(text.as_bytes(), &mut out, Some(&mut n2o), None);
    assert_eq!(n2o.len(), out.len() + 1, "{text:?}");
    (
        String::from_utf8(out).unwrap().replace('\u{2581}', "_"),
        n2o,
    )
}

/// llama.cpp's `llm_tokenizer_ugm_session::normalize` whitespace pass.
#[test]
fn whitespace_pass_is_llama_cpps() {
    // Merging: one mark before every word, no other space, even without
    // the dummy prefix (sentencepiece would give "a_b" there).
    assert_eq!(run(false, true, "  a  b  ").0, "_a_b");
    assert_eq!(run(true, true, "  a  b  ").0, "_a_b");
    assert_eq!(run(true, true, "   ").0, "");
    // Not merging: every space is a mark, the prefix goes before the first
    // non-space byte, and a text of spaces gets no prefix.
    assert_eq!(run(true, false, "  a b ").0, "___a_b_");
    assert_eq!(run(true, false, "   ").0, "___");
    assert_eq!(run(false, false, " a").0, "_a");
    // Offsets: the prefix mark maps to its word.
    assert_eq!(run(true, true, " ab").1, vec![1, 1, 1, 1, 2, 3]);
}
