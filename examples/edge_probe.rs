fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tok = router_tokenizer::LoadOptions::default()
        .load(&args[1])
        .unwrap();
    let unit = &args[2];
    let text: String = (0..400).map(|i| format!("word{i} {unit}")).collect();
    let seq = tok.encode_sequential(&text, false).unwrap().ids().to_vec();
    for cb in [64usize, 97, 128, 256, 1024] {
        let par = tok.with_parallel(router_tokenizer::ParallelOptions::always_with_chunk_bytes(
            cb,
        ));
        let got = par.encode(&text, false).unwrap().ids().to_vec();
        println!("chunk {cb}: same={}", got == seq);
    }
}
