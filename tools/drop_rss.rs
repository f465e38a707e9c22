//! RSS over repeated registry-bypassing loads whose handles are dropped at
//! once (issue 39 item 4).
//!
//! ```sh
//! cargo run --features tools --bin drop_rss -- SOURCE [LOADS]
//! ```

use std::time::{Duration, Instant};

use router_tokenizer::LoadOptions;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

fn main() -> Result<(), router_tokenizer::Error> {
    let mut args = std::env::args().skip(1);
    let source = args.next().unwrap_or_else(|| "cl100k_base".into());
    let loads: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(100);
    let options = LoadOptions::default().with_bypass_registry(true);
    // One load kept alive first (and warmed): code, statics, the rayon pool.
    let keep = options.load(&source)?;
    keep.warm_up();
    let ids = keep
        .encode("hello world, dropped handles", false)?
        .ids()
        .to_vec();
    let base = rss_kib();
    let start = Instant::now();
    let mut peak = base;
    for _ in 0..loads {
        drop(options.load(&source)?);
        peak = peak.max(rss_kib());
    }
    let loaded = start.elapsed();
    // Settle: the background threads end.
    let settle = Instant::now();
    while threads() > 2 + rayon::current_num_threads()
        && settle.elapsed() < Duration::from_secs(120)
    {
        peak = peak.max(rss_kib());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let fin = rss_kib();
    // Diagnostic only: what glibc keeps of freed memory (not part of the crate).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    let trimmed = {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim takes a pad and touches only the heap.
        unsafe { malloc_trim(0) };
        rss_kib()
    };
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let trimmed = fin;
    let again = keep
        .encode("hello world, dropped handles", false)?
        .ids()
        .to_vec();
    assert_eq!(ids, again);
    println!(
        "{source} x{loads}: baseline {} MiB, peak {} MiB, final {} MiB (after malloc_trim {} MiB); loads {:.1} s, settle {:.1} s, threads {}",
        base / 1024,
        peak / 1024,
        fin / 1024,
        trimmed / 1024,
        loaded.as_secs_f64(),
        settle.elapsed().as_secs_f64(),
        threads()
    );
    Ok(())
}
