//! Fuzzes the GGUF reader and backend: any byte string must give a typed
//! error or a tokenizer that encodes and decodes, never a panic or an
//! allocation sized from an unchecked count.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    router_tokenizer::__fuzz::gguf(data);
});
