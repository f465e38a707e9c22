//! Text no encode has seen: consecutive slices of the whole shared corpus
//! (every file once, about 19 MB), for the timings that compare sequential
//! and parallel encoding. A slice one char further into the same text, as
//! these timings took before, is text seen again. Past the corpus's end the
//! slices start again from its start with every line behind a marker of the
//! pass (`2\t`, `3\t`, …), so every line is new (two more tokens a line),
//! while word caches stay warm, as in a server.

use std::path::Path;

/// Consecutive slices of the shared corpus.
pub struct FreshSlices {
    corpus: String,
    text: String,
    at: usize,
    pass: usize,
}

impl FreshSlices {
    /// Every `corpus/<category>/<file>` under `shared`, in name order, one
    /// after the other (a repeated sentence when the folder is missing).
    pub fn new(shared: &Path) -> Self {
        let mut files: Vec<_> = std::fs::read_dir(shared.join("corpus"))
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.path().is_dir())
            .flat_map(|dir| {
                std::fs::read_dir(dir.path())
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .map(|e| e.path())
            .collect();
        files.sort();
        let mut text: String = files
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .collect();
        if text.is_empty() {
            text = "The quick brown fox jumps over the lazy dog.\n".repeat(1 << 16);
        }
        Self {
            corpus: text.clone(),
            text,
            at: 0,
            pass: 1,
        }
    }

    /// The next `len` bytes or so (to a char boundary), never seen by the
    /// slices before it in this pass over the corpus.
    pub fn next(&mut self, len: usize) -> &str {
        let len = len.min(self.text.len());
        if self.at + len > self.text.len() {
            self.at = 0;
            self.pass += 1;
            let marker = format!("{}\t", self.pass);
            self.text = self
                .corpus
                .split_inclusive('\n')
                .flat_map(|line| [marker.as_str(), line])
                .collect();
        }
        let start = self.at;
        let mut end = start + len;
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        self.at = end;
        &self.text[start..end]
    }
}
