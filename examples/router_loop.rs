//! A router's request loop: load once, then per request count the prompt
//! tokens (`count_chat`) and check the budget, render the chat template,
//! encode the prompt, and stream a generation through a
//! [`StopSequenceDecoder`] with stop strings, EOS and `min_tokens`. Then
//! vLLM's `/tokenize` and `/detokenize` bodies, the HTTP status each kind of
//! failure maps to (`Error::http_status`), and the `rtok_*` metrics the loop
//! left in the recorder.
//!
//! The "model" replays ids: each request's reply is a passage of the shared
//! corpus, encoded, followed by an EOS id, so the example runs offline and its
//! output can be checked (the streamed text is `decode(ids)` up to the stop).
//!
//! ```sh
//! cargo run --release --example router_loop [TOKENIZER] [REQUESTS]
//! ```

mod common;

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use router_tokenizer::chat::ChatRequest;
use router_tokenizer::{
    DetokenizeRequest, EncodeChatOptions, Error, MatchedStop, StopConfig, StopSequenceDecoder,
    TokenizeRequest, Tokenizer,
};
use std::time::{Duration, Instant};

/// What one request did, and how long each stage took.
struct Served {
    index: usize,
    /// The chunks sent to the client, in order.
    chunks: Vec<String>,
    prompt_tokens: usize,
    generated: usize,
    text_bytes: usize,
    stop: Option<MatchedStop>,
    render: Duration,
    encode: Duration,
    stream: Duration,
}

/// Stops are ignored for the first tokens of each generation.
const MIN_TOKENS: usize = 4;

/// The completion budget each request asks for (OpenAI's `max_tokens`).
const MAX_TOKENS: usize = 256;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), BoxError> {
    let source = common::source_arg("meta-llama/Llama-3.2-1B-Instruct");
    let requests: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(16);

    // The metrics recorder (a real router installs its Prometheus exporter
    // here; any time works, even after the load).
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install()?;

    // Load once at startup, without blocking the runtime's workers. With
    // HF_HOME/HF_HUB_OFFLINE set (the test command sets them) this is exactly
    // `create_tokenizer_async`; otherwise the shared cache is named explicitly.
    let start = Instant::now();
    let tokenizer = if std::env::var_os("HF_HOME").is_some() {
        router_tokenizer::create_tokenizer_async(&source).await?
    } else {
        common::options().load_async(&source).await?
    };
    // Build what the load left building and compile the chat template now,
    // so the first request pays none of it.
    tokenizer.warm_up_async().await;
    println!(
        "{source}: loaded in {:.1?} ({} tokens, eos {:?})",
        start.elapsed(),
        tokenizer.vocab_size(),
        tokenizer.eos_token_ids()
    );

    // Requests arrive concurrently; each is a task on the shared handle (a
    // clone is one Arc increment).
    let corpus = common::corpus_text(64 * 1024);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..requests {
        let tokenizer = tokenizer.clone();
        let reply = passage(&corpus, i);
        tasks.spawn(async move { serve(&tokenizer, i, &reply).await });
    }
    let mut served = Vec::with_capacity(requests);
    while let Some(done) = tasks.join_next().await {
        served.push(done??);
    }

    served.sort_by_key(|s| s.index);
    if let Some(first) = served.first() {
        let shown: Vec<&String> = first.chunks.iter().take(12).collect();
        println!(
            "request 0 streamed {} chunks, the first ones: {shown:?}",
            first.chunks.len()
        );
    }
    let sum = |f: fn(&Served) -> Duration| served.iter().map(f).sum::<Duration>();
    let generated: usize = served.iter().map(|s| s.generated).sum();
    let prompt_tokens: usize = served.iter().map(|s| s.prompt_tokens).sum();
    let text_bytes: usize = served.iter().map(|s| s.text_bytes).sum();
    println!(
        "{requests} requests, {prompt_tokens} prompt tokens, {generated} generated tokens, {text_bytes} bytes streamed"
    );
    println!(
        "per request: render {:.1?}, encode {:.1?}; stream {:.0} ns/token",
        sum(|s| s.render) / requests.max(1) as u32,
        sum(|s| s.encode) / requests.max(1) as u32,
        sum(|s| s.stream).as_nanos() as f64 / generated.max(1) as f64,
    );
    let mut reasons = std::collections::BTreeMap::new();
    for s in &served {
        let reason = match &s.stop {
            Some(MatchedStop::Eos { .. }) => "eos",
            Some(MatchedStop::String { .. }) => "stop string",
            Some(MatchedStop::Token { .. }) => "stop token",
            Some(_) => "other stop",
            None => "length",
        };
        *reasons.entry(reason).or_insert(0) += 1;
    }
    println!("stop reasons: {reasons:?}");

    serve_tokenize(&tokenizer)?;
    answer_errors(&tokenizer)?;
    let stopped = served.iter().filter(|s| s.stop.is_some()).count();
    report_metrics(&snapshotter, stopped)?;
    Ok(())
}

/// vLLM's `/tokenize` and `/detokenize`, body in, body out.
fn serve_tokenize(tokenizer: &Tokenizer) -> Result<(), BoxError> {
    let body = serde_json::json!({
        "model": "router-model",
        "messages": [{"role": "user", "content": "Hello!"}],
    });
    let request: TokenizeRequest = serde_json::from_value(body)?;
    let tokenized = tokenizer.tokenize(&request)?;
    let body = serde_json::json!({ "tokens": tokenized.tokens });
    let request: DetokenizeRequest = serde_json::from_value(body)?;
    let detokenized = tokenizer.detokenize(&request)?;
    assert!(detokenized.prompt.contains("Hello!"), "/detokenize");
    println!(
        "/tokenize: {} tokens, max_model_len {:?}; /detokenize: {} bytes",
        tokenized.count,
        tokenized.max_model_len,
        detokenized.prompt.len()
    );
    Ok(())
}

/// What a router answers when a request fails: every error says its HTTP
/// status, so there is no table to keep.
fn answer_errors(tokenizer: &Tokenizer) -> Result<(), BoxError> {
    let offline = common::options().with_offline(true);
    let unknown_model = offline.load("no-such-org/no-such-model").err();
    let unknown_id = tokenizer
        .detokenize(&serde_json::from_value(
            serde_json::json!({ "tokens": [u32::MAX] }),
        )?)
        .err();
    let over_budget = tokenizer.check_budget(usize::MAX / 2, MAX_TOKENS).err();
    let request_template: TokenizeRequest = serde_json::from_value(serde_json::json!({
        "messages": [{"role": "user", "content": "Hi"}],
        "chat_template": "{{ messages }}",
    }))?;
    let own_template = tokenizer.tokenize(&request_template).err();
    // A budget that cannot be checked is the server's fault, not reported as fitting.
    let budget_status = if tokenizer.context_length().is_some() {
        400
    } else {
        500
    };
    let mut answers = Vec::new();
    for (what, error, status) in [
        ("unknown model", unknown_model, 404),
        ("unknown token id", unknown_id, 400),
        ("prompt over the context", over_budget, budget_status),
        ("request's own chat template", own_template, 400),
    ] {
        let error: Error = error.ok_or_else(|| format!("{what}: no error"))?;
        if error.http_status() != status {
            return Err(format!("{what}: {} for {error}", error.http_status()).into());
        }
        answers.push(format!("{what} → {status}"));
    }
    println!("errors: {}", answers.join(", "));
    Ok(())
}

/// Reads back what the loop reported: chat requests, stream steps, stops.
fn report_metrics(snapshotter: &Snapshotter, stopped: usize) -> Result<(), BoxError> {
    let mut totals = std::collections::BTreeMap::<String, u64>::new();
    for (key, _unit, _help, value) in snapshotter.snapshot().into_vec() {
        let DebugValue::Counter(n) = value else {
            continue;
        };
        let key = key.key();
        let name = match key.labels().find(|l| l.key() == "reason") {
            Some(reason) => format!("{}{{reason={}}}", key.name(), reason.value()),
            None => key.name().to_owned(),
        };
        *totals.entry(name).or_default() += n;
    }
    let stops: u64 = totals
        .iter()
        .filter(|(name, _)| name.starts_with("rtok_stops_total"))
        .map(|(_, n)| n)
        .sum();
    // Every generation a stop ended is counted once, by what ended it.
    if stops != stopped as u64 {
        return Err(format!("rtok_stops_total: {stops}, generations stopped: {stopped}").into());
    }
    let shown = [
        "rtok_render_requests_total",
        "rtok_encode_requests_total",
        "rtok_stream_steps_total",
        "rtok_stops_total{reason=eos}",
        "rtok_stops_total{reason=string}",
        "rtok_load_errors_total",
    ];
    let line: Vec<String> = shown
        .iter()
        .map(|name| format!("{name} {}", totals.get(*name).copied().unwrap_or(0)))
        .collect();
    println!("metrics: {}", line.join(", "));
    Ok(())
}

/// The `i`-th simulated reply: a few hundred bytes of the corpus.
fn passage(corpus: &str, i: usize) -> String {
    let lines: Vec<&str> = corpus.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = (i * 7) % lines.len().max(1);
    lines
        .iter()
        .cycle()
        .skip(start)
        .take(4)
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

/// One request: render, encode, then stream the replayed generation.
async fn serve(tokenizer: &Tokenizer, i: usize, reply: &str) -> Result<Served, BoxError> {
    let start = Instant::now();
    // An OpenAI chat-completions body, as a client sends it (the generation
    // prompt is on by OpenAI's default).
    let body = serde_json::json!({
        "model": "router-model",
        "messages": [
            {"role": "system", "content": "You are a concise assistant."},
            {"role": "user", "content": format!("Request {i}: continue the passage.")},
        ],
    });
    let request = ChatRequest::from_openai(&body)?;
    let prompt = tokenizer.apply_chat_template(&request)?;
    let render = start.elapsed();

    let start = Instant::now();
    // Render and encode in one call, off the executor when the request is
    // large (`OFFLOAD_MIN_BYTES`); a marker a user typed stays text.
    let encoded = tokenizer
        .encode_chat_async(&request, &EncodeChatOptions::default())
        .await?;
    let prompt_ids = tokenizer.encode(&prompt, false)?;
    assert_eq!(encoded.ids, prompt_ids.ids(), "request {i}: encode_chat");
    // `usage.prompt_tokens`, known before the model runs, and the budget a
    // router refuses with a 400 (`ContextLengthExceeded`) when the prompt
    // and `max_tokens` overflow the context.
    let counted = tokenizer.count_chat(&request)?;
    assert_eq!(counted, encoded.prompt_tokens, "request {i}: count_chat");
    if tokenizer.context_length().is_some() {
        tokenizer.check_budget(counted, MAX_TOKENS)?;
    }
    let encode = start.elapsed();

    // The model's output: the reply's ids, then EOS.
    let mut generated = tokenizer.encode(reply, false)?.ids().to_vec();
    generated.extend(tokenizer.eos_token_ids().first());
    // Every third request stops on a string taken from the middle of its
    // reply; the others run to EOS.
    let stop = i
        .is_multiple_of(3)
        .then(|| {
            let mid = reply
                .char_indices()
                .map(|(at, _)| at)
                .find(|&at| at >= reply.len() / 2)?;
            Some(reply[mid..].chars().take(8).collect::<String>())
        })
        .flatten()
        .filter(|s| !s.is_empty());
    let config = StopConfig {
        stop_strings: stop.iter().cloned().collect(),
        min_tokens: MIN_TOKENS,
        skip_special_tokens: true,
        ..StopConfig::default()
    };

    let start = Instant::now();
    let mut decoder = StopSequenceDecoder::new(tokenizer, prompt_ids.ids(), config)?;
    let mut chunks = Vec::new();
    let mut fed = 0;
    for &id in &generated {
        fed += 1;
        let out = decoder.process_token(id)?;
        if let Some(t) = out.text() {
            chunks.push(t.to_owned()); // a router sends this chunk to the client here
        }
        if out.is_stopped() {
            break;
        }
    }
    if decoder.matched_stop().is_none()
        && let Some(t) = decoder.flush()?.text()
    {
        chunks.push(t.to_owned());
    }
    let stream = start.elapsed();
    let text = chunks.concat();

    // What was streamed is what one decode gives, cut before the stop string.
    let full = tokenizer.decode(&generated, true)?;
    // A stop string counts only where it ends after the `min_tokens` window.
    let window = tokenizer.decode(&generated[..MIN_TOKENS.min(generated.len())], true)?;
    let expected = match &stop {
        Some(s) => full
            .match_indices(s.as_str())
            .find(|(at, _)| at + s.len() > window.len())
            .map_or(&full[..], |(at, _)| &full[..at]),
        None => &full[..],
    };
    assert_eq!(text, expected, "request {i}: streamed text");

    Ok(Served {
        index: i,
        chunks,
        prompt_tokens: prompt_ids.len(),
        generated: fed,
        text_bytes: text.len(),
        stop: decoder.matched_stop().cloned(),
        render,
        encode,
        stream,
    })
}
