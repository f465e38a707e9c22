//! Dropped handles leave no work running (issue 39, item 4): loads that
//! bypass the registry, each handle dropped at once, give their memory
//! back. Before the fix the background engine build each load started ran
//! to its end: 100 loads of `cl100k_base` took RSS from 62 MiB to a peak of
//! 1,777 MiB and kept 1,006 MiB once every build had finished (glibc keeps
//! what a hundred builds touched); now 76 MiB.
//!
//! Each source is measured in a child process of this test binary, so no
//! other test's memory or threads count, and the loads run alone.
#![cfg(target_os = "linux")]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use router_tokenizer::{LoadOptions, PromptCacheOptions};

/// The child's environment variable: the source to load, then `;` and the
/// number of loads.
const CHILD: &str = "RTOK_DROP_RSS_CHILD";

/// What RSS may grow by over the loads, in KiB: the allocator's retention
/// of freed memory aside, nothing stays. Before the fix cl100k kept
/// +944 MiB, gpt-3.5-turbo's `tokenizer.json` +184 MiB; now +14 MiB and
/// +70 MiB.
const SLACK_KIB: u64 = 150 << 10;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4)
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Runs in the child: the loads, the wait for background threads, the
/// figures.
#[test]
fn drop_rss_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let (source, loads) = spec.split_once(';').expect("source;loads");
    let loads: usize = loads.parse().expect("a load count");
    let options = LoadOptions::default()
        .with_bypass_registry(true)
        .with_prompt_cache(PromptCacheOptions::off());
    // One handle kept (and warmed): code, statics and the rayon pool are
    // in the baseline, and it must still encode the same after.
    let keep = options.load(source).unwrap();
    keep.warm_up();
    let text = "Dropped handles leave no work running: 12345, ünïcödé, 中文.";
    let ids = keep.encode(text, false).unwrap().ids().to_vec();
    let idle_threads = threads();
    let base = rss_kib();
    let mut peak = base;
    for _ in 0..loads {
        drop(options.load(source).unwrap());
        peak = peak.max(rss_kib());
    }
    // Whatever the loads started ends (a build left running would be seen
    // here, and its memory with it).
    let settle = Instant::now();
    while threads() > idle_threads && settle.elapsed() < Duration::from_secs(60) {
        peak = peak.max(rss_kib());
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let last = rss_kib();
    println!(
        "drop_rss {source} x{loads}: baseline {} MiB, peak {} MiB, final {} MiB, \
         settled in {:.1} s",
        base >> 10,
        peak >> 10,
        last >> 10,
        settle.elapsed().as_secs_f64()
    );
    assert!(
        threads() <= idle_threads,
        "background threads still running {:.0} s after the loads",
        settle.elapsed().as_secs_f64()
    );
    assert!(
        last <= base + SLACK_KIB,
        "RSS {} MiB after {loads} dropped loads of {source}, baseline {} MiB",
        last >> 10,
        base >> 10
    );
    // The live handle is untouched, and a fresh one warms to the same ids.
    assert_eq!(keep.encode(text, false).unwrap().ids(), &ids[..]);
    let fresh = options.load(source).unwrap();
    fresh.warm_up();
    assert_eq!(fresh.encode(text, false).unwrap().ids(), &ids[..]);
}

/// Runs `loads` dropped loads of `source` in a child process and checks it
/// passed.
fn measure(source: &str, loads: usize) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "drop_rss::drop_rss_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, format!("{source};{loads}"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The harness may print the test's name on the same line.
    if let Some(line) = stdout
        .lines()
        .find_map(|l| l.find("drop_rss ").map(|at| &l[at..]))
    {
        println!("{line}");
    }
    assert!(
        out.status.success() && stdout.contains("drop_rss "),
        "child failed for {source}:\n{stdout}\n{stderr}"
    );
}

#[test]
fn dropped_loads_return_memory() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    // The tiktoken backend's byte-level engine, built on a thread of its own.
    measure("cl100k_base", 100);
    // A `tokenizer.json` whose BPE model is built on a thread while an
    // interim engine encodes (invariant `interim-equals-built`): fewer loads, each is bigger.
    let json = common::snapshot_file("Xenova/gpt-3.5-turbo", "tokenizer.json");
    measure(json.to_str().unwrap(), 20);
}
