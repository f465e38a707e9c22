//! Fuzzes `tokenizer.json` through the loader's HF path (validation, then
//! `tokenizers`): any byte string must give a typed error or a tokenizer that
//! encodes and decodes, never a panic, an abort or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    router_tokenizer::__fuzz::tokenizer_json(data);
});
