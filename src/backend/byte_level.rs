//! GPT-2's byte ↔ printable-char alphabet (`Ġ` for space), used to spell
//! byte-level and tiktoken tokens as strings.

/// The char that spells each byte.
pub(crate) fn byte_to_char_table() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[usize::from(b)] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(256 + n).unwrap_or('\0');
            n += 1;
            c
        };
    }
    table
}

/// Spells `bytes` in the byte-level alphabet.
pub(crate) fn spell(bytes: &[u8], table: &[char; 256]) -> String {
    bytes.iter().map(|&b| table[usize::from(b)]).collect()
}

/// Reads a byte-level spelling back into bytes; `None` if a char is outside the alphabet.
pub(crate) fn unspell(token: &str) -> Option<Vec<u8>> {
    token.chars().map(char_to_byte).collect()
}

pub(crate) fn char_to_byte(c: char) -> Option<u8> {
    let u = u32::from(c);
    match u {
        0x21..=0x7E | 0xA1..=0xAC | 0xAE..=0xFF => u8::try_from(u).ok(),
        256..=323 => {
            // The n-th non-printable byte, in increasing byte order.
            let n = u - 256;
            let mut seen = 0u32;
            for b in 0..=255u8 {
                if !matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF) {
                    if seen == n {
                        return Some(b);
                    }
                    seen += 1;
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet_round_trips_every_byte() {
        let table = byte_to_char_table();
        assert_eq!(table[usize::from(b' ')], 'Ġ');
        assert_eq!(table[usize::from(b'\n')], 'Ċ');
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(unspell(&spell(&all, &table)).as_deref(), Some(&all[..]));
        assert_eq!(unspell("a€"), None);
    }
}
