//! Fuzzes `tokenizer_config.json` (roles, `added_tokens_decoder`) beside a
//! small rank file: typed errors only, no panic, no table sized by a huge id.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    router_tokenizer::__fuzz::tokenizer_config(data);
});
