//! A GGUF container reader: header and metadata key/values, nothing else.
//!
//! GGUF (llama.cpp's `ggml/src/gguf.cpp`, spec in ggml's `docs/gguf.md`) is a
//! little-endian header, `kv_count` typed key/values, then tensor infos and
//! tensor data. A tokenizer needs only the key/values, so the reader stops at
//! the tensor infos: a multi-gigabyte model file is memory-mapped and only its
//! first megabytes are ever touched.
//!
//! Why a small reader and not a crate: the crates that read GGUF (`gguf-rs`,
//! `gguf`, `candle-core`'s `quantized::gguf_file`) parse tensor infos as well
//! and allocate vectors sized from the file's claimed counts before checking
//! them (`Vec::with_capacity(n)` on an untrusted `u64`), or pull in a tensor
//! library. This reader borrows everything from the mapped bytes, checks every
//! count and length against the bytes that remain before using it, and
//! reports the offset of the first bad byte.

use std::fmt;

/// `GGUF` read as a little-endian `u32`.
const MAGIC: &[u8; 4] = b"GGUF";

/// The smallest possible key/value: an empty key (8-byte length), a type tag
/// (4) and a one-byte value.
const MIN_KV_BYTES: u64 = 8 + 4 + 1;

/// The smallest possible tensor info: empty name (8), `n_dims` (4), no
/// dimensions, type (4), offset (8).
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 4 + 8;

/// Why a GGUF file could not be read, with the byte offset where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("GGUF offset {offset}: {what}")]
pub struct GgufError {
    /// Byte offset into the file.
    pub offset: u64,
    /// What was expected there.
    pub what: String,
}

impl GgufError {
    fn new(offset: usize, what: impl Into<String>) -> Self {
        Self {
            offset: offset as u64,
            what: what.into(),
        }
    }
}

/// The value types of GGUF metadata (`enum gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `u8`
    U8,
    /// `i8`
    I8,
    /// `u16`
    U16,
    /// `i16`
    I16,
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// `f32`
    F32,
    /// one byte, 0 or 1
    Bool,
    /// `u64` length + UTF-8 bytes
    String,
    /// element type + `u64` count + elements
    Array,
    /// `u64`
    U64,
    /// `i64`
    I64,
    /// `f64`
    F64,
}

impl ValueType {
    fn from_tag(tag: u32) -> Option<Self> {
        Some(match tag {
            0 => Self::U8,
            1 => Self::I8,
            2 => Self::U16,
            3 => Self::I16,
            4 => Self::U32,
            5 => Self::I32,
            6 => Self::F32,
            7 => Self::Bool,
            8 => Self::String,
            9 => Self::Array,
            10 => Self::U64,
            11 => Self::I64,
            12 => Self::F64,
            _ => return None,
        })
    }

    /// The fixed size of a scalar, `None` for strings and arrays.
    fn fixed_size(self) -> Option<usize> {
        Some(match self {
            Self::U8 | Self::I8 | Self::Bool => 1,
            Self::U16 | Self::I16 => 2,
            Self::U32 | Self::I32 | Self::F32 => 4,
            Self::U64 | Self::I64 | Self::F64 => 8,
            Self::String | Self::Array => return None,
        })
    }

    /// The fewest bytes one element of this type can take.
    fn min_size(self) -> usize {
        self.fixed_size().unwrap_or(8)
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Self::U8 => "u8",
            Self::I8 => "i8",
            Self::U16 => "u16",
            Self::I16 => "i16",
            Self::U32 => "u32",
            Self::I32 => "i32",
            Self::F32 => "f32",
            Self::Bool => "bool",
            Self::String => "string",
            Self::Array => "array",
            Self::U64 => "u64",
            Self::I64 => "i64",
            Self::F64 => "f64",
        };
        f.write_str(s)
    }
}

/// One metadata value, borrowing strings and arrays from the file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    /// `u8`
    U8(u8),
    /// `i8`
    I8(i8),
    /// `u16`
    U16(u16),
    /// `i16`
    I16(i16),
    /// `u32`
    U32(u32),
    /// `i32`
    I32(i32),
    /// `f32`
    F32(f32),
    /// `bool`
    Bool(bool),
    /// A string's bytes (GGUF promises UTF-8; callers check where it matters).
    String(&'a [u8]),
    /// An array of scalars or strings.
    Array(Array<'a>),
    /// `u64`
    U64(u64),
    /// `i64`
    I64(i64),
    /// `f64`
    F64(f64),
}

impl Value<'_> {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Self::U8(_) => ValueType::U8,
            Self::I8(_) => ValueType::I8,
            Self::U16(_) => ValueType::U16,
            Self::I16(_) => ValueType::I16,
            Self::U32(_) => ValueType::U32,
            Self::I32(_) => ValueType::I32,
            Self::F32(_) => ValueType::F32,
            Self::Bool(_) => ValueType::Bool,
            Self::String(_) => ValueType::String,
            Self::Array(_) => ValueType::Array,
            Self::U64(_) => ValueType::U64,
            Self::I64(_) => ValueType::I64,
            Self::F64(_) => ValueType::F64,
        }
    }
}

/// An array value: `len` elements of one type, already bounds-checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Array<'a> {
    elem: ValueType,
    len: usize,
    /// The elements' bytes, exactly.
    data: &'a [u8],
    /// File offset of `data`.
    offset: usize,
}

impl<'a> Array<'a> {
    /// The element type.
    pub fn elem_type(&self) -> ValueType {
        self.elem
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// File offset of the first element.
    pub fn offset(&self) -> u64 {
        self.offset as u64
    }

    /// The raw element bytes of a scalar array (`None` for string arrays).
    pub fn raw(&self) -> Option<&'a [u8]> {
        self.elem.fixed_size().map(|_| self.data)
    }

    /// The strings of a string array, in order (`None` for other types).
    /// Lengths were checked when the file was read, so this cannot fail.
    pub fn strings(&self) -> Option<impl Iterator<Item = &'a [u8]> + 'a> {
        if self.elem != ValueType::String {
            return None;
        }
        let mut rest = self.data;
        Some(std::iter::from_fn(move || {
            let (len, tail) = rest.split_first_chunk::<8>()?;
            let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
            let (s, tail) = tail.split_at_checked(len)?;
            rest = tail;
            Some(s)
        }))
    }

    /// The elements of an `f32` array.
    pub fn f32s(&self) -> Option<impl Iterator<Item = f32> + 'a> {
        (self.elem == ValueType::F32).then(|| {
            self.data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        })
    }

    /// The elements of an `i32` array.
    pub fn i32s(&self) -> Option<impl Iterator<Item = i32> + 'a> {
        (self.elem == ValueType::I32).then(|| {
            self.data
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        })
    }
}

/// A parsed GGUF header and its metadata, borrowing from the file's bytes.
#[derive(Debug, Clone)]
pub struct Gguf<'a> {
    /// Format version (2 or 3).
    pub version: u32,
    /// Number of tensors the file declares (their infos are not read).
    pub tensor_count: u64,
    kvs: Vec<(&'a str, Value<'a>)>,
    /// Where the tensor infos start.
    pub metadata_end: u64,
}

impl<'a> Gguf<'a> {
    /// Reads the header and every metadata key/value of `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, GgufError> {
        let mut r = Cursor { bytes, pos: 0 };
        let magic = r.take(4, "the magic \"GGUF\"")?;
        if magic != MAGIC {
            return Err(GgufError::new(0, "not a GGUF file (magic is not \"GGUF\")"));
        }
        let version = r.u32("the version")?;
        match version {
            2 | 3 => {}
            1 => {
                return Err(GgufError::new(
                    4,
                    "GGUF version 1 is not supported (only 2 and 3)",
                ));
            }
            v if v.swap_bytes() == 2 || v.swap_bytes() == 3 => {
                return Err(GgufError::new(
                    4,
                    "big-endian GGUF is not supported (only little-endian)",
                ));
            }
            v => {
                return Err(GgufError::new(
                    4,
                    format!("unknown GGUF version {v} (only 2 and 3)"),
                ));
            }
        }
        let tensor_count = r.u64("the tensor count")?;
        let kv_at = r.pos;
        let kv_count = r.u64("the metadata key/value count")?;
        let max_kvs = r.remaining() as u64 / MIN_KV_BYTES;
        if kv_count > max_kvs {
            return Err(GgufError::new(
                kv_at,
                format!(
                    "{kv_count} metadata key/values claimed, but the {} bytes left hold at most {max_kvs}",
                    r.remaining()
                ),
            ));
        }
        let mut kvs: Vec<(&'a str, Value<'a>)> = Vec::with_capacity(kv_count as usize);
        for _ in 0..kv_count {
            let key_at = r.pos;
            let key = r.string("a metadata key")?;
            let key = std::str::from_utf8(key)
                .map_err(|_| GgufError::new(key_at, "metadata key is not UTF-8"))?;
            if kvs.iter().any(|(k, _)| *k == key) {
                return Err(GgufError::new(
                    key_at,
                    format!("duplicate metadata key {key:?}"),
                ));
            }
            let tag_at = r.pos;
            let tag = r.u32("a value type")?;
            let ty = ValueType::from_tag(tag).ok_or_else(|| {
                GgufError::new(tag_at, format!("unknown value type {tag} for key {key:?}"))
            })?;
            let value = r.value(ty, key)?;
            kvs.push((key, value));
        }
        let metadata_end = r.pos;
        let max_tensors = r.remaining() as u64 / MIN_TENSOR_INFO_BYTES;
        if tensor_count > max_tensors {
            return Err(GgufError::new(
                metadata_end,
                format!(
                    "{tensor_count} tensors claimed, but the {} bytes left hold at most {max_tensors} tensor infos",
                    r.remaining()
                ),
            ));
        }
        Ok(Self {
            version,
            tensor_count,
            kvs,
            metadata_end: metadata_end as u64,
        })
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.kvs.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Every key/value, in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &Value<'a>)> {
        self.kvs.iter().map(|(k, v)| (*k, v))
    }
}

struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], GgufError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(GgufError::new(
                self.pos,
                format!(
                    "truncated: {what} needs {n} bytes, {} left",
                    self.remaining()
                ),
            ));
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        let s = self.take(N, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A length-prefixed string, its length checked against the bytes left.
    fn string(&mut self, what: &str) -> Result<&'a [u8], GgufError> {
        let at = self.pos;
        let len = self.u64(what)?;
        if len > self.remaining() as u64 {
            return Err(GgufError::new(
                at,
                format!(
                    "{what}: string of {len} bytes claimed, {} left",
                    self.remaining()
                ),
            ));
        }
        self.take(len as usize, what)
    }

    fn value(&mut self, ty: ValueType, key: &str) -> Result<Value<'a>, GgufError> {
        Ok(match ty {
            ValueType::U8 => Value::U8(self.array::<1>(key)?[0]),
            ValueType::I8 => Value::I8(i8::from_le_bytes(self.array(key)?)),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array(key)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array(key)?)),
            ValueType::U32 => Value::U32(u32::from_le_bytes(self.array(key)?)),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array(key)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(key)?)),
            ValueType::Bool => {
                let at = self.pos;
                match self.array::<1>(key)?[0] {
                    0 => Value::Bool(false),
                    1 => Value::Bool(true),
                    b => {
                        return Err(GgufError::new(
                            at,
                            format!("bool value {b} for key {key:?} (expected 0 or 1)"),
                        ));
                    }
                }
            }
            ValueType::String => Value::String(self.string(key)?),
            ValueType::U64 => Value::U64(u64::from_le_bytes(self.array(key)?)),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array(key)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(key)?)),
            ValueType::Array => Value::Array(self.array_value(key)?),
        })
    }

    fn array_value(&mut self, key: &str) -> Result<Array<'a>, GgufError> {
        let tag_at = self.pos;
        let tag = self.u32(key)?;
        let elem = ValueType::from_tag(tag).ok_or_else(|| {
            GgufError::new(
                tag_at,
                format!("unknown array element type {tag} for key {key:?}"),
            )
        })?;
        if elem == ValueType::Array {
            return Err(GgufError::new(
                tag_at,
                format!("nested arrays are not supported (key {key:?})"),
            ));
        }
        let count_at = self.pos;
        let count = self.u64(key)?;
        let max = (self.remaining() / elem.min_size()) as u64;
        if count > max {
            return Err(GgufError::new(
                count_at,
                format!(
                    "array {key:?} claims {count} {elem} elements, but the {} bytes left hold at most {max}",
                    self.remaining()
                ),
            ));
        }
        let len = count as usize;
        let start = self.pos;
        if let Some(size) = elem.fixed_size() {
            // `len * size <= remaining` by the check above.
            self.take(len * size, key)?;
        } else {
            for _ in 0..len {
                self.string(key)?;
            }
        }
        Ok(Array {
            elem,
            len,
            data: &self.bytes[start..self.pos],
            offset: start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a GGUF v3 header with the given key/values (already encoded).
    fn file(kvs: &[Vec<u8>], tensors: u64) -> Vec<u8> {
        let mut b = b"GGUF".to_vec();
        b.extend(3u32.to_le_bytes());
        b.extend(tensors.to_le_bytes());
        b.extend((kvs.len() as u64).to_le_bytes());
        for kv in kvs {
            b.extend(kv);
        }
        b
    }

    fn s(text: &str) -> Vec<u8> {
        let mut b = (text.len() as u64).to_le_bytes().to_vec();
        b.extend(text.as_bytes());
        b
    }

    fn kv(key: &str, tag: u32, value: &[u8]) -> Vec<u8> {
        let mut b = s(key);
        b.extend(tag.to_le_bytes());
        b.extend(value);
        b
    }

    #[test]
    fn reads_every_scalar_type_and_arrays() {
        let mut arr = 8u32.to_le_bytes().to_vec();
        arr.extend(2u64.to_le_bytes());
        arr.extend(s("a"));
        arr.extend(s("bc"));
        let mut farr = 6u32.to_le_bytes().to_vec();
        farr.extend(2u64.to_le_bytes());
        farr.extend(1.5f32.to_le_bytes());
        farr.extend((-2.0f32).to_le_bytes());
        let f = file(
            &[
                kv("u8", 0, &[7]),
                kv("i8", 1, &[0xff]),
                kv("u16", 2, &300u16.to_le_bytes()),
                kv("i16", 3, &(-3i16).to_le_bytes()),
                kv("u32", 4, &70000u32.to_le_bytes()),
                kv("i32", 5, &(-5i32).to_le_bytes()),
                kv("f32", 6, &0.25f32.to_le_bytes()),
                kv("bool", 7, &[1]),
                kv("str", 8, &s("héllo")),
                kv("arr", 9, &arr),
                kv("u64", 10, &(1u64 << 40).to_le_bytes()),
                kv("i64", 11, &(-1i64).to_le_bytes()),
                kv("f64", 12, &0.5f64.to_le_bytes()),
                kv("farr", 9, &farr),
            ],
            0,
        );
        let g = Gguf::parse(&f).unwrap();
        assert_eq!(g.version, 3);
        assert_eq!(g.get("u8"), Some(&Value::U8(7)));
        assert_eq!(g.get("i8"), Some(&Value::I8(-1)));
        assert_eq!(g.get("u16"), Some(&Value::U16(300)));
        assert_eq!(g.get("i16"), Some(&Value::I16(-3)));
        assert_eq!(g.get("u32"), Some(&Value::U32(70000)));
        assert_eq!(g.get("i32"), Some(&Value::I32(-5)));
        assert_eq!(g.get("f32"), Some(&Value::F32(0.25)));
        assert_eq!(g.get("bool"), Some(&Value::Bool(true)));
        assert_eq!(g.get("str"), Some(&Value::String("héllo".as_bytes())));
        assert_eq!(g.get("u64"), Some(&Value::U64(1 << 40)));
        assert_eq!(g.get("i64"), Some(&Value::I64(-1)));
        assert_eq!(g.get("f64"), Some(&Value::F64(0.5)));
        let Some(Value::Array(a)) = g.get("arr") else {
            panic!("array")
        };
        let v: Vec<&[u8]> = a.strings().unwrap().collect();
        assert_eq!(v, vec![b"a".as_slice(), b"bc".as_slice()]);
        let Some(Value::Array(a)) = g.get("farr") else {
            panic!("array")
        };
        assert_eq!(a.f32s().unwrap().collect::<Vec<_>>(), vec![1.5, -2.0]);
        assert!(a.strings().is_none());
        assert_eq!(g.metadata_end as usize, f.len());
    }

    #[test]
    fn hostile_headers_are_typed_errors_with_offsets() {
        // Truncated everywhere: every prefix of a valid file fails cleanly.
        let f = file(&[kv("k", 8, &s("value"))], 0);
        for n in 0..f.len() {
            assert!(Gguf::parse(&f[..n]).is_err(), "prefix {n}");
        }
        // 2^60 array elements.
        let mut arr = 8u32.to_le_bytes().to_vec();
        arr.extend((1u64 << 60).to_le_bytes());
        let e = Gguf::parse(&file(&[kv("tokenizer.ggml.tokens", 9, &arr)], 0)).unwrap_err();
        assert!(e.what.contains("claims 1152921504606846976"), "{e}");
        assert_eq!(e.offset, 24 + 8 + 21 + 4 + 4);
        // A string longer than the file.
        let mut long = (u64::MAX).to_le_bytes().to_vec();
        long.extend(b"x");
        let e = Gguf::parse(&file(&[kv("k", 8, &long)], 0)).unwrap_err();
        assert!(e.what.contains("string of"), "{e}");
        // Nested arrays.
        let mut nested = 9u32.to_le_bytes().to_vec();
        nested.extend(0u64.to_le_bytes());
        let e = Gguf::parse(&file(&[kv("k", 9, &nested)], 0)).unwrap_err();
        assert!(e.what.contains("nested"), "{e}");
        // Unknown type, unknown version, big-endian, v1, huge kv count, huge tensor count.
        assert!(Gguf::parse(&file(&[kv("k", 13, &[0])], 0)).is_err());
        let mut v = file(&[], 0);
        v[4..8].copy_from_slice(&9u32.to_le_bytes());
        assert!(Gguf::parse(&v).unwrap_err().what.contains("version 9"));
        v[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert!(Gguf::parse(&v).unwrap_err().what.contains("big-endian"));
        v[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(Gguf::parse(&v).unwrap_err().what.contains("version 1"));
        let mut v = file(&[], 0);
        v[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(
            Gguf::parse(&v)
                .unwrap_err()
                .what
                .contains("key/values claimed")
        );
        assert!(
            Gguf::parse(&file(&[], 1))
                .unwrap_err()
                .what
                .contains("tensors")
        );
        // Duplicate keys and bad bools.
        assert!(
            Gguf::parse(&file(&[kv("a", 0, &[1]), kv("a", 0, &[1])], 0))
                .unwrap_err()
                .what
                .contains("duplicate")
        );
        assert!(Gguf::parse(&file(&[kv("b", 7, &[2])], 0)).is_err());
        assert!(Gguf::parse(b"GGML\x03\0\0\0").is_err());
    }
}
