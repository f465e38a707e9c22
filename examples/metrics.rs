//! The crate's metrics in Prometheus' text format: the names, HELP lines and
//! labels a dashboard would use (`rtok_*`, labelled by `tokenizer` and
//! `backend`).
//!
//! ```sh
//! cargo run --example metrics [TOKENIZER]
//! ```
//!
//! The recorder may be installed at any time. Here `o200k_base` is loaded
//! first, before any recorder exists, and still reports: its handles
//! register on its first call after the recorder is installed (its load,
//! counted as it happened, has no `rtok_loads_total` here). Encode and
//! decode durations are sampled (one call in 16 per thread), so their
//! histograms hold fewer values than the request counters count.

mod common;

use metrics_exporter_prometheus::PrometheusBuilder;
use router_tokenizer::chat::{ChatRequest, Message};
use router_tokenizer::{DecodeStream, EncodeChatOptions, StopConfig, StopSequenceDecoder};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Loaded before the recorder exists.
    let o200k = router_tokenizer::create_tokenizer("o200k_base")?;

    let handle = PrometheusBuilder::new().install_recorder()?;

    let source = common::source_arg("Qwen/Qwen3-8B");
    let tok = common::load(&source);
    // A failed load: `rtok_load_errors_total{kind="not_found"}`.
    let _ = router_tokenizer::create_tokenizer("/nonexistent/tokenizer.json");

    // A little traffic on both tokenizers: encodes, a long (parallel) encode,
    // decodes, one failed decode, a chat request where there is a template,
    // a stream and a generation that stops on a string.
    let text = common::corpus_text(4 * 1024);
    for t in [&tok, &o200k] {
        for line in text.lines().take(50) {
            let enc = t.encode(line, true)?;
            t.decode(enc.ids(), true)?;
        }
        let long = common::corpus_text(1024 * 1024);
        t.encode(&long, false)?;
        let _ = t.decode(&[u32::MAX], false);

        if t.chat_template().is_ok() {
            let request = ChatRequest::new(vec![Message::new("user", "Count to three.")]);
            t.encode_chat(&request, &EncodeChatOptions::default())?;
        }

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
            if stop.process_token(id)?.is_stopped() {
                break;
            }
        }
    }

    let rendered = handle.render();
    // What this example promises: the early tokenizer reports, and the
    // series are described.
    for expected in [
        "rtok_encode_requests_total{tokenizer=\"o200k_base\",backend=\"tiktoken\"}",
        "rtok_stops_total{tokenizer=\"o200k_base\",backend=\"tiktoken\",reason=\"string\"}",
        "# HELP rtok_encode_duration_seconds",
        "rtok_load_errors_total{tokenizer=\"/nonexistent/tokenizer.json\",kind=\"not_found\"}",
    ] {
        if !rendered.contains(expected) {
            return Err(format!("missing from the metrics: {expected}").into());
        }
    }
    print!("{rendered}");
    Ok(())
}
