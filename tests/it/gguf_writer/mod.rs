//! A small GGUF writer shared by `tests/it/gguf_convert.rs` and
//! `benches/gguf.rs`: vocab-only files made from a `tokenizer.json` the way
//! llama.cpp's `convert_hf_to_gguf.py --vocab-only` writes them, and
//! model-sized files (the same metadata plus tensor infos, the data left as
//! a hole by `set_len`).
#![allow(dead_code)]

use std::path::Path;

use serde_json::Value;

/// Bytes of one GGUF value.
pub enum V {
    Str(String),
    U32(u32),
    Strs(Vec<String>),
    I32s(Vec<i32>),
    F32s(Vec<f32>),
}

/// One tensor info: name, dimensions (innermost first, as GGUF stores
/// them) and ggml type (0 = F32, 1 = F16).
pub struct Tensor {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: u32,
}

impl Tensor {
    fn bytes(&self) -> u64 {
        let per = if self.ggml_type == 0 { 4 } else { 2 };
        self.dims.iter().product::<u64>() * per
    }
}

/// GGUF's default data alignment.
const ALIGN: u64 = 32;

fn gstr(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as u64).to_le_bytes());
    b.extend(s.as_bytes());
}

/// An array of 4-byte numbers of GGUF type `ty`.
fn num_array(b: &mut Vec<u8>, ty: u32, items: impl ExactSizeIterator<Item = [u8; 4]>) {
    b.extend(9u32.to_le_bytes());
    b.extend(ty.to_le_bytes());
    b.extend((items.len() as u64).to_le_bytes());
    for x in items {
        b.extend(x);
    }
}

/// Writes a GGUF v3 file with `kvs` and `tensors`; the tensor data is not
/// written but the file is extended (sparsely) to its full length, which
/// this returns.
pub fn write_gguf(path: &Path, kvs: &[(&str, V)], tensors: &[Tensor]) -> u64 {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend((tensors.len() as u64).to_le_bytes());
    b.extend((kvs.len() as u64).to_le_bytes());
    for (k, v) in kvs {
        gstr(&mut b, k);
        match v {
            V::Str(s) => {
                b.extend(8u32.to_le_bytes());
                gstr(&mut b, s);
            }
            V::U32(x) => {
                b.extend(4u32.to_le_bytes());
                b.extend(x.to_le_bytes());
            }
            V::Strs(items) => {
                b.extend(9u32.to_le_bytes());
                b.extend(8u32.to_le_bytes());
                b.extend((items.len() as u64).to_le_bytes());
                for s in items {
                    gstr(&mut b, s);
                }
            }
            V::I32s(items) => num_array(&mut b, 5, items.iter().map(|x| x.to_le_bytes())),
            V::F32s(items) => num_array(&mut b, 6, items.iter().map(|x| x.to_le_bytes())),
        }
    }
    let mut offset = 0u64;
    for t in tensors {
        gstr(&mut b, &t.name);
        b.extend((t.dims.len() as u32).to_le_bytes());
        for d in &t.dims {
            b.extend(d.to_le_bytes());
        }
        b.extend(t.ggml_type.to_le_bytes());
        b.extend(offset.to_le_bytes());
        offset = (offset + t.bytes()).div_ceil(ALIGN) * ALIGN;
    }
    std::fs::write(path, &b).unwrap();
    if tensors.is_empty() {
        return b.len() as u64;
    }
    let len = (b.len() as u64).div_ceil(ALIGN) * ALIGN + offset;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(len).unwrap();
    len
}

/// The tensor infos of a Llama-3-8B-shaped F16 model (32 layers, hidden
/// 4096, 8 KV heads of 128, FFN 14336) over `n_vocab` tokens: about 16 GB.
pub fn llama3_8b_tensors(n_vocab: u64) -> Vec<Tensor> {
    let t = |name: String, dims: &[u64], ggml_type: u32| Tensor {
        name,
        dims: dims.to_vec(),
        ggml_type,
    };
    let (h, kv, ffn) = (4096, 1024, 14336);
    let mut out = vec![t("token_embd.weight".into(), &[h, n_vocab], 1)];
    for l in 0..32 {
        out.push(t(format!("blk.{l}.attn_norm.weight"), &[h], 0));
        out.push(t(format!("blk.{l}.attn_q.weight"), &[h, h], 1));
        out.push(t(format!("blk.{l}.attn_k.weight"), &[h, kv], 1));
        out.push(t(format!("blk.{l}.attn_v.weight"), &[h, kv], 1));
        out.push(t(format!("blk.{l}.attn_output.weight"), &[h, h], 1));
        out.push(t(format!("blk.{l}.ffn_norm.weight"), &[h], 0));
        out.push(t(format!("blk.{l}.ffn_gate.weight"), &[h, ffn], 1));
        out.push(t(format!("blk.{l}.ffn_up.weight"), &[h, ffn], 1));
        out.push(t(format!("blk.{l}.ffn_down.weight"), &[ffn, h], 1));
    }
    out.push(t("output_norm.weight".into(), &[h], 0));
    out.push(t("output.weight".into(), &[h, n_vocab], 1));
    out
}

/// The metadata of a vocab-only GGUF from a `tokenizer.json`, as
/// convert_hf_to_gguf.py writes it (`get_vocab_base` for BPE,
/// `BertModel.set_vocab` for WordPiece), and its token count.
pub fn convert_kvs(tokenizer_json: &Path, pre: &str) -> (Vec<(&'static str, V)>, usize) {
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(tokenizer_json).unwrap()).unwrap();
    let m = &json["model"];
    let mut by_id: Vec<Option<(String, i32)>> = Vec::new();
    let mut put = |id: usize, t: String, ty: i32| {
        if by_id.len() <= id {
            by_id.resize(id + 1, None);
        }
        by_id[id] = Some((t, ty));
    };
    let wordpiece = m["type"] == "WordPiece";
    for (t, id) in m["vocab"].as_object().unwrap() {
        let t = if wordpiece {
            // BERT: word-initial pieces get the phantom space, `##` goes.
            match t.strip_prefix("##") {
                Some(rest) => rest.to_owned(),
                None => format!("\u{2581}{t}"),
            }
        } else {
            t.clone()
        };
        put(id.as_u64().unwrap() as usize, t, 1);
    }
    for a in json["added_tokens"].as_array().unwrap() {
        let special = a["special"].as_bool().unwrap_or(false);
        put(
            a["id"].as_u64().unwrap() as usize,
            a["content"].as_str().unwrap().to_owned(),
            if special { 3 } else { 4 },
        );
    }
    let (tokens, types): (Vec<String>, Vec<i32>) = by_id
        .into_iter()
        .enumerate()
        .map(|(i, t)| t.unwrap_or((format!("[PAD{i}]"), 5)))
        .unzip();
    let n = tokens.len();
    let mut kvs = vec![
        (
            "tokenizer.ggml.model",
            V::Str(if wordpiece { "bert" } else { "gpt2" }.into()),
        ),
        ("tokenizer.ggml.pre", V::Str(pre.into())),
        ("tokenizer.ggml.tokens", V::Strs(tokens)),
        ("tokenizer.ggml.token_type", V::I32s(types)),
    ];
    if wordpiece {
        kvs.push(("tokenizer.ggml.scores", V::F32s(vec![0.0; n])));
        for (key, text) in [
            ("tokenizer.ggml.unknown_token_id", "[UNK]"),
            ("tokenizer.ggml.seperator_token_id", "[SEP]"),
            ("tokenizer.ggml.bos_token_id", "[CLS]"),
            ("tokenizer.ggml.padding_token_id", "[PAD]"),
        ] {
            kvs.push((key, V::U32(m["vocab"][text].as_u64().unwrap() as u32)));
        }
    } else {
        let merges = m["merges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                Value::Array(p) => format!("{} {}", p[0].as_str().unwrap(), p[1].as_str().unwrap()),
                _ => panic!("merge"),
            })
            .collect();
        kvs.push(("tokenizer.ggml.merges", V::Strs(merges)));
    }
    (kvs, n)
}

/// A vocab-only GGUF from a `tokenizer.json` (see [`convert_kvs`]).
pub fn convert(tokenizer_json: &Path, pre: &str, out: &Path) {
    write_gguf(out, &convert_kvs(tokenizer_json, pre).0, &[]);
}
