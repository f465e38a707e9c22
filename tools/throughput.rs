//! Single-thread encode throughput of one tokenizer on one file, for
//! `scripts/bench_peers.py`, which runs the Python peers on the same slices.
//!
//! ```sh
//! RAYON_NUM_THREADS=1 cargo run --release --features tools --bin throughput -- SRC FILE [ROUNDS] [SHIFT_CHARS]
//! ```
//!
//! Slice `r` is the characters `[r*SHIFT, r*SHIFT + M)` of the file (`M` =
//! all characters but `(ROUNDS+1)*SHIFT`). The first encode (timed apart, and
//! the warm-up) takes slice 0 and timed round `r` slice `r`, `1..=ROUNDS`,
//! sequentially, so no whole-input memo can answer a timed round (where
//! `warm_up` had to wait, slice 0 is encoded once more first, so the engine
//! the rounds use is as warm as after the peers' warm-up). It
//! prints one JSON object: load and first-encode times, the wait for what
//! the backend builds in the background (`warm_up`), each round's time,
//! and the sha256 of slice 0's ids (little-endian u32), which the script
//! compares with every peer's. `*_cpu_ms` are the same steps in this
//! thread's CPU time (Linux; `null` elsewhere): on a shared machine they
//! leave out the time other work took the core (`docs/perf/design_log/sentencepiece.md`
//! (entry 335)).
//! glibc's allocator thresholds are fixed at start, so the timed rounds
//! see the allocator of a process that has run a while (`docs/perf/design_log/byte_level.md`
//! (entry 354)).
//!
//! **Pieces mode** (the default protocol of `scripts/bench_peers.py`: text
//! seen once):
//!
//! ```sh
//! RAYON_NUM_THREADS=1 throughput --pieces SRC PIECES.json   # then commands on stdin
//! ```
//!
//! `PIECES.json` is `{"warm": [text, …], "rounds": [[text, …], …]}`: distinct
//! pieces of real text. The process loads `SRC` (timed), encodes the first
//! warm-up piece (timed: the first encode), waits for `warm_up`, encodes
//! every warm-up piece once (untimed: word caches warm on other text of the
//! same kinds), prints one JSON line and then answers one command a line:
//! `once R` encodes each piece of round `R` once, `again R` encodes them
//! again (text seen again: the backend's per-thread word caches hold its
//! words), `l0 R` encodes them with `Tokenizer::encode` twice
//! untimed and then a third time timed (the handle's L0 prompt cache stores a
//! text on its second miss, so the timed call is an L0 hit), `quit` ends.
//! `once` and `again` encode under `Parallelism::Sequential`, which never
//! consults the L0 or L1 prompt caches (`src/tokenizer.rs`), so the only
//! caches that could answer a piece seen once are the word caches inside the
//! backend, and those hold only the warm-up's text. Each command prints
//! `{"ms", "cpu_ms", "bytes", "tokens", "sha256": [one per piece]}`: the
//! summed wall time of the round's encodes, this thread's CPU time for them,
//! and each piece's ids hashed as above.
//! `warm_batch` and `batch R` (for `scripts/bench_batch.py`) do the same
//! through one `encode_batch` call over the rayon pool: see
//! [`batch_command`].

// Finding the shared data and loading from it offline, as the examples do.
#[path = "../examples/common/mod.rs"]
mod common;

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--pieces") {
        if args.len() != 4 {
            eprintln!("usage: throughput --pieces SRC PIECES.json");
            std::process::exit(2);
        }
        pieces_mode(&args[2], &args[3]);
        return;
    }
    if args.len() < 3 {
        eprintln!("usage: throughput SRC FILE [ROUNDS] [SHIFT_CHARS]");
        std::process::exit(2);
    }
    let rounds: usize = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(5);
    let shift: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(7);
    let text = std::fs::read_to_string(&args[2]).unwrap_or_else(|e| {
        eprintln!("{}: {e}", args[2]);
        std::process::exit(1);
    });
    let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let chars = starts.len();
    let keep = chars.saturating_sub((rounds + 1) * shift);
    let slice = |r: usize| {
        let at = |c: usize| starts.get(c).copied().unwrap_or(text.len());
        &text[at(r * shift)..at(r * shift + keep)]
    };

    steady_allocator();
    let cpu0 = thread_cpu_ms();
    let start = Instant::now();
    let tok = common::load(&args[1]);
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let cpu1 = thread_cpu_ms();
    let start = Instant::now();
    let first = tok
        .encode_with(slice(0), &common::sequential())
        .unwrap_or_else(|e| fail(&e));
    let first_ms = start.elapsed().as_secs_f64() * 1e3;
    let cpu2 = thread_cpu_ms();
    // What the backend still builds in the background (tiktoken's byte-level
    // engine): waited for here, so the timed rounds see the warm tokenizer.
    let start = Instant::now();
    tok.warm_up();
    let warm_up_ms = start.elapsed().as_secs_f64() * 1e3;
    // Where the first encode ran on a stand-in (tiktoken's regex path while
    // the engine was built), the engine's word cache is still cold: one
    // more untimed encode of slice 0 warms it, as the peers' warm-up warms
    // theirs. Elsewhere it repeats the warm-up and changes nothing.
    if warm_up_ms >= 1.0 {
        std::hint::black_box(
            tok.encode_with(slice(0), &common::sequential())
                .unwrap_or_else(|e| fail(&e)),
        );
    }

    let mut times = Vec::with_capacity(rounds);
    let mut cpu_times = Vec::with_capacity(rounds);
    for r in 1..=rounds {
        let s = slice(r);
        let cpu = thread_cpu_ms();
        let start = Instant::now();
        let enc = timed_encode(&tok, s);
        times.push(start.elapsed().as_secs_f64() * 1e3);
        cpu_times.push(cpu_between(cpu, thread_cpu_ms()));
        std::hint::black_box(enc);
    }
    let mut hash = Sha256::new();
    for id in first.ids() {
        hash.update(&id.to_le_bytes());
    }
    println!(
        "{{\"load_ms\":{load_ms:.3},\"first_encode_ms\":{first_ms:.3},\"warm_up_ms\":{warm_up_ms:.3},\"times_ms\":[{}],\"load_cpu_ms\":{},\"first_encode_cpu_ms\":{},\"times_cpu_ms\":[{}],\"bytes\":{},\"tokens\":{},\"ids_sha256\":\"{}\"}}",
        times
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect::<Vec<_>>()
            .join(","),
        cpu_between(cpu0, cpu1),
        cpu_between(cpu1, cpu2),
        cpu_times.join(","),
        slice(0).len(),
        first.len(),
        hash.hex()
    );
}

/// glibc's allocator as in a process that has run a while. By default
/// glibc serves a large block with `mmap` until the first such block is
/// freed, then raises the threshold and serves the next ones from the heap,
/// which grows into fresh pages: in this fresh process that put about 1,100
/// page faults (4.5 MB, o200k on 256 KiB of Chinese; 529 on Qwen3) into
/// the second timed round, every run, whatever the encoder. A router, like
/// the Python process that times the peers, has long passed that point;
/// fixed thresholds (the largest glibc allows, and no trimming) let the
/// untimed first encodes fault the heap in instead.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn steady_allocator() {
    unsafe extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_MMAP_THRESHOLD: i32 = -3;
    // SAFETY: `mallopt` only sets allocator parameters; called before any
    // other thread of this process exists.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn steady_allocator() {}

/// This thread's CPU time in ms (`CLOCK_THREAD_CPUTIME_ID`), where known.
#[cfg(target_os = "linux")]
fn thread_cpu_ms() -> Option<f64> {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec (two 64-bit fields on the
    // 64-bit Linux targets this crate builds for) and the clock id exists.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    (rc == 0).then(|| t.sec as f64 * 1e3 + t.nsec as f64 / 1e6)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_ms() -> Option<f64> {
    None
}

/// The CPU ms between two readings as JSON (`null` when unknown).
fn cpu_between(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.3}", b - a),
        _ => "null".to_string(),
    }
}

fn fail(e: &router_tokenizer::Error) -> ! {
    eprintln!("encode failed: {e}");
    std::process::exit(1);
}

/// sha2 is a dev-dependency; a tiny wrapper keeps the call sites short.
struct Sha256(sha2::Sha256);

impl Sha256 {
    fn new() -> Self {
        use sha2::Digest;
        Self(sha2::Sha256::new())
    }
    fn update(&mut self, bytes: &[u8]) {
        use sha2::Digest;
        self.0.update(bytes);
    }
    fn hex(self) -> String {
        use sha2::Digest;
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// One timed round's encode, kept out of line so a profile can select the
/// timed rounds' samples by this frame (`perf script`, then filter).
#[inline(never)]
fn timed_encode(tok: &router_tokenizer::Tokenizer, text: &str) -> router_tokenizer::Encoding {
    tok.encode_with(text, &common::sequential())
        .unwrap_or_else(|e| fail(&e))
}

/// The pieces of one cell: warm-up pieces and each timed round's.
struct Pieces {
    warm: Vec<String>,
    rounds: Vec<Vec<String>>,
}

fn read_pieces(path: &str) -> Pieces {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    Pieces {
        warm: strings(&value["warm"]),
        rounds: value["rounds"]
            .as_array()
            .map(|a| a.iter().map(strings).collect())
            .unwrap_or_default(),
    }
}

/// The sha256 of `ids` as little-endian u32s, in hex.
fn ids_hex(ids: &[u32]) -> String {
    let mut hash = Sha256::new();
    for id in ids {
        hash.update(&id.to_le_bytes());
    }
    hash.hex()
}

/// `throughput --pieces SRC PIECES.json`: see the module docs.
fn pieces_mode(source: &str, path: &str) {
    use std::io::{BufRead, Write};
    let pieces = read_pieces(path);
    if pieces.warm.is_empty() {
        eprintln!("{path}: no warm-up pieces");
        std::process::exit(1);
    }
    steady_allocator();
    let start = Instant::now();
    let tok = common::load(source);
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    std::hint::black_box(
        tok.encode_with(&pieces.warm[0], &common::sequential())
            .unwrap_or_else(|e| fail(&e)),
    );
    let first_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    tok.warm_up();
    let warm_up_ms = start.elapsed().as_secs_f64() * 1e3;
    // Every warm-up piece once; the first again only where it ran on a
    // stand-in while the engine was built (as in the shifted-slice mode).
    let again_first = usize::from(warm_up_ms < 1.0);
    for piece in &pieces.warm[again_first..] {
        std::hint::black_box(
            tok.encode_with(piece, &common::sequential())
                .unwrap_or_else(|e| fail(&e)),
        );
    }
    let out = std::io::stdout();
    let mut out = out.lock();
    let _ = writeln!(
        out,
        "{{\"load_ms\":{load_ms:.3},\"first_encode_ms\":{first_ms:.3},\"warm_up_ms\":{warm_up_ms:.3},\"warm_pieces\":{},\"warm_bytes\":{}}}",
        pieces.warm.len(),
        pieces.warm.iter().map(String::len).sum::<usize>()
    );
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        let (Some(cmd), round) = (
            words.next(),
            words.next().and_then(|r| r.parse::<usize>().ok()),
        ) else {
            continue;
        };
        if cmd == "quit" {
            break;
        }
        if cmd == "warm_batch" || cmd == "batch" {
            batch_command(&tok, &pieces, cmd, round, &mut out);
            continue;
        }
        let round = round
            .filter(|_| matches!(cmd, "once" | "again" | "l0"))
            .and_then(|r| pieces.rounds.get(r));
        let Some(round) = round else {
            let _ = writeln!(
                out,
                "{{\"error\":\"bad command: {}\"}}",
                line.escape_default()
            );
            let _ = out.flush();
            continue;
        };
        let (mut ms, mut tokens, mut hashes) = (0.0, 0, Vec::with_capacity(round.len()));
        let cpu = thread_cpu_ms();
        let mut cpu_spent = 0.0;
        for piece in round {
            if cmd == "l0" {
                // Two misses: the second stores the text (untimed).
                for _ in 0..2 {
                    std::hint::black_box(tok.encode(piece, false).unwrap_or_else(|e| fail(&e)));
                }
            }
            let c0 = thread_cpu_ms();
            let start = Instant::now();
            let enc = match cmd {
                "l0" => tok.encode(piece, false).unwrap_or_else(|e| fail(&e)),
                _ => timed_encode(&tok, piece),
            };
            ms += start.elapsed().as_secs_f64() * 1e3;
            if let (Some(a), Some(b)) = (c0, thread_cpu_ms()) {
                cpu_spent += b - a;
            }
            tokens += enc.len();
            hashes.push(ids_hex(enc.ids()));
        }
        let cpu_json = if cpu.is_some() {
            format!("{cpu_spent:.3}")
        } else {
            "null".to_string()
        };
        let _ = writeln!(
            out,
            "{{\"ms\":{ms:.4},\"cpu_ms\":{cpu_json},\"bytes\":{},\"tokens\":{tokens},\"sha256\":[{}]}}",
            round.iter().map(String::len).sum::<usize>(),
            hashes
                .iter()
                .map(|h| format!("\"{h}\""))
                .collect::<Vec<_>>()
                .join(",")
        );
        let _ = out.flush();
    }
}

/// `warm_batch` (every warm-up piece in one `encode_batch`, untimed: the
/// pool's threads warm their word caches as the main thread did) and
/// `batch R` (round `R`'s pieces in one timed `encode_batch` over the rayon
/// pool: the wall time; `cpu_ms` is `null`, the work runs on other threads).
fn batch_command(
    tok: &router_tokenizer::Tokenizer,
    pieces: &Pieces,
    cmd: &str,
    round: Option<usize>,
    out: &mut impl std::io::Write,
) {
    let texts: Vec<&str> = match (cmd, round.and_then(|r| pieces.rounds.get(r))) {
        ("warm_batch", _) => pieces.warm.iter().map(String::as_str).collect(),
        ("batch", Some(round)) => round.iter().map(String::as_str).collect(),
        _ => {
            let _ = writeln!(out, "{{\"error\":\"bad command: {cmd}\"}}");
            let _ = out.flush();
            return;
        }
    };
    let start = Instant::now();
    let encs = tok.encode_batch(&texts, false).unwrap_or_else(|e| fail(&e));
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let tokens: usize = encs.iter().map(|e| e.len()).sum();
    let hashes: Vec<String> = encs
        .iter()
        .map(|e| format!("\"{}\"", ids_hex(e.ids())))
        .collect();
    let _ = writeln!(
        out,
        "{{\"ms\":{ms:.4},\"cpu_ms\":null,\"bytes\":{},\"tokens\":{tokens},\"sha256\":[{}]}}",
        texts.iter().map(|t| t.len()).sum::<usize>(),
        hashes.join(",")
    );
    let _ = out.flush();
}
