//! The crate's metrics in Prometheus' text format: the names and labels a
//! dashboard would use (`rtok_*`, labelled by `backend`).
//!
//! ```sh
//! cargo run --example metrics [TOKENIZER]
//! ```
//!
//! Install the recorder before loading: each tokenizer registers its metric
//! handles once, against the recorder installed when it is built.

mod common;

use metrics_exporter_prometheus::PrometheusBuilder;
use router_tokenizer::{DecodeStream, StopConfig, StopSequenceDecoder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let handle = PrometheusBuilder::new().install_recorder()?;

    let source = common::source_arg("Qwen/Qwen3-8B");
    let tok = common::load(&source);
    let o200k = router_tokenizer::create_tokenizer("o200k_base")?;

    // A little traffic on both tokenizers: encodes, a long (parallel) encode,
    // decodes, one failed decode, and a stream.
    let text = common::corpus_text(4 * 1024);
    for t in [&tok, &o200k] {
        for line in text.lines().take(50) {
            let enc = t.encode(line, true)?;
            t.decode(enc.ids(), true)?;
        }
        let long = common::corpus_text(1024 * 1024);
        t.encode(&long, false)?;
        let _ = t.decode(&[u32::MAX], false);

        let prompt = t.encode("Count to three:", false)?;
        let generated = t.encode(" one, two, three.", false)?;
        let mut stream = DecodeStream::new(t, prompt.ids(), false);
        for &id in generated.ids() {
            stream.step(id)?;
        }
        let mut stop = StopSequenceDecoder::new(
            t,
            prompt.ids(),
            StopConfig {
                stop_strings: vec!["three".into()],
                ..StopConfig::default()
            },
        )?;
        for &id in generated.ids() {
            stop.process_token(id)?;
        }
    }

    print!("{}", handle.render());
    Ok(())
}
