//! Fuzzes tiktoken rank files through the loader's checks and a backend
//! built on them: typed errors only, no panic, no table sized by a huge rank.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    router_tokenizer::__fuzz::rank_file(data);
});
