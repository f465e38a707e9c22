//! Fuzzes the SentencePiece `.model` reader: any byte string must give a
//! typed error or a working model (encode, offsets, decode and the streaming
//! table are exercised on it), never a panic or a huge allocation.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    router_tokenizer::__fuzz::sentencepiece_model(data);
});
