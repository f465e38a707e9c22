//! Per-character rewrites of a text that llama.cpp applies before matching
//! (its WPM "NFD", its regex splitter's whitespace stand-in), with the map
//! that takes byte offsets in the rewrite back to the original text.

/// `text` with every character replaced by `f(c)`, and for each byte of the
/// result (and one past the end) the byte offset in `text` of the character
/// it came from.
pub(crate) fn map_chars(text: &str, f: impl Fn(char) -> char) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len() + 1);
    for (i, c) in text.char_indices() {
        let m = f(c);
        out.push(m);
        map.extend(std::iter::repeat_n(i, m.len_utf8()));
    }
    map.push(text.len());
    (out, map)
}
