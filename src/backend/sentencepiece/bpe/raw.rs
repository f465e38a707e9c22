//! [`Bpe::encode_raw`]: the identity normalizer's path, which cuts the raw
//! text before safe spaces and looks each chunk up by its raw bytes,
//! normalizing only the chunks it has not seen.

use super::super::cache::{INLINE_KEY, MAX_CHUNK_KEY, Probe, WordCache, key128};
use super::super::model::{NO_ID, PieceSink, Vocab};
use super::super::normalizer::PrefixMatcher;
use super::super::utf8::{SPACE_MARK, pack_char};
use super::{Bpe, BpeScratch, Recorder, SPACE_CODE, Work};

impl Bpe {
    /// Encodes `text` as the identity normalizer would present it
    /// (`[U+2581 if dummy] + text` with every `' '` as U+2581) without
    /// building the normalized string, except for chunks not yet memoized.
    /// Requires [`raw_path_ok`](Self::raw_path_ok).
    pub(crate) fn encode_raw<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        text: &[u8],
        dummy: bool,
        scratch: &mut BpeScratch,
        sink: &mut S,
    ) {
        let n = text.len();
        if n == 0 && !dummy {
            return;
        }
        let BpeScratch {
            seg,
            cand,
            cand_merged,
            prev,
            next,
            heap,
            out,
            chunk,
            chunk_out,
            ends,
            caches,
            ..
        } = scratch;
        let cache = caches.for_model(self.uid);
        let mut work = Work {
            seg,
            cand,
            cand_merged,
            prev,
            next,
            heap,
            out,
            whole_memoized: false,
        };
        // Pass 1: the chunk ends (cuts before spaces that are safe
        // boundaries). Pass 2: look the chunks up, prefetching the memo sets
        // of the chunk a few places ahead so memory latency overlaps; the
        // sets are computed once, for the prefetch, and kept for the lookup.
        ends.clear();
        let mut cs = 0usize;
        for_each_space(text, |q| {
            if q > cs && !self.adjacent(prev_code(text, q), SPACE_CODE) {
                ends.push(q);
                cs = q;
            }
        });
        ends.push(n);
        const AHEAD: usize = 8;
        let mut ring = [Probe::default(); AHEAD];
        for (i, slot) in ring.iter_mut().enumerate().take(ends.len()) {
            *slot = probe_chunk(cache, text, ends, i);
        }
        let mut norm_pos = 0usize;
        let mut cs = 0usize;
        for i in 0..ends.len() {
            let p = ring[i % AHEAD];
            if i + AHEAD < ends.len() {
                ring[i % AHEAD] = probe_chunk(cache, text, ends, i + AHEAD);
            }
            let ce = ends[i];
            self.raw_chunk(
                vocab,
                matcher,
                text,
                (cs, ce),
                &p,
                dummy,
                cache,
                &mut work,
                chunk,
                chunk_out,
                &mut norm_pos,
                sink,
            );
            cs = ce;
        }
    }

    /// One chunk `text[cs..ce]` of [`encode_raw`](Self::encode_raw). The
    /// memo key is the raw chunk, or for the first chunk (which carries the
    /// dummy prefix) its normalized form.
    #[allow(clippy::too_many_arguments)]
    fn raw_chunk<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        text: &[u8],
        (cs, ce): (usize, usize),
        probe: &Probe,
        dummy: bool,
        cache: &mut WordCache,
        work: &mut Work<'_>,
        chunk: &mut Vec<u8>,
        chunk_out: &mut Vec<(u32, u32)>,
        norm_pos: &mut usize,
        sink: &mut S,
    ) {
        let raw = text.get(cs..ce).unwrap_or_default();
        let with_dummy = cs == 0 && dummy;
        let mut built = false;
        if with_dummy {
            build_chunk(chunk, raw, with_dummy);
            built = true;
        }
        let key: &[u8] = if with_dummy { chunk } else { raw };
        let memo = !key.is_empty() && key.len() <= MAX_CHUNK_KEY;
        if memo
            && Self::replay_chunk(
                vocab, raw, with_dummy, built, probe, cache, chunk, norm_pos, sink,
            )
        {
            return;
        }
        if !built {
            build_chunk(chunk, raw, with_dummy);
        }
        if chunk.is_empty() {
            return;
        }
        chunk_out.clear();
        let mut rec = Recorder {
            inner: sink,
            out: chunk_out,
            unk: vocab.unk_id_raw(),
            fallback: self.fallback.as_deref(),
            plain: true,
        };
        // Every chunk's segments are memoized as well as the chunk (invariant
        // `cache-transparent`): a chunk seen for the first time (` Elizabeth,`) mostly
        // consists of segments seen before (`▁Elizabeth`, `,`).
        work.whole_memoized = memo;
        self.scan_segments(
            vocab,
            matcher,
            chunk,
            *norm_pos,
            Some(&mut *cache),
            work,
            &mut rec,
        );
        work.whole_memoized = false;
        let plain = rec.plain;
        *norm_pos += chunk.len();
        if memo {
            let key: &[u8] = if with_dummy { chunk } else { raw };
            cache.insert(key, chunk_out, plain);
        }
    }

    /// [`raw_chunk`](Self::raw_chunk)'s memo lookup: replays a memoized
    /// chunk into `sink` and returns true, or returns false on a miss.
    /// `chunk` holds the normalized chunk when `built`; it is built here
    /// when a memoized entry holds unknown pieces, which need their bytes.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn replay_chunk<S: PieceSink>(
        vocab: &Vocab,
        raw: &[u8],
        with_dummy: bool,
        built: bool,
        probe: &Probe,
        cache: &mut WordCache,
        chunk: &mut Vec<u8>,
        norm_pos: &mut usize,
        sink: &mut S,
    ) -> bool {
        let key: &[u8] = if with_dummy { chunk } else { raw };
        let hit = if with_dummy {
            cache.get_inline(key128(key, 0, key.len()), key.len())
        } else {
            cache.get_probed(probe)
        };
        if let Some(hit) = hit {
            sink.plain(*norm_pos, hit.ids(), hit.lens());
            *norm_pos += hit.lens().iter().map(|&l| usize::from(l)).sum::<usize>();
            return true;
        }
        let Some(vals) = cache.get_arena(key) else {
            return false;
        };
        let unk = vocab.unk_id_raw();
        // One pass with no early exit (it vectorizes): are all
        // pieces ordinary, and how many bytes do they cover.
        let (odd, len) = vals.iter().fold((false, 0usize), |(odd, len), &(id, l)| {
            (odd | (id == unk) | (id == NO_ID), len + l as usize)
        });
        if !odd {
            sink.plain_pairs(*norm_pos, vals);
            *norm_pos += len;
            return true;
        }
        // Unknown pieces need their normalized bytes.
        let vals = vals.to_vec();
        if !built {
            build_chunk(chunk, raw, with_dummy);
        }
        let mut local = 0usize;
        for (id, len) in vals {
            let len = len as usize;
            sink.piece(
                *norm_pos,
                chunk.get(local..local + len).unwrap_or_default(),
                id,
            );
            local += len;
            *norm_pos += len;
        }
        true
    }
}

/// Writes the normalized form of the raw chunk `raw` into `chunk`: every
/// `' '` as U+2581, after a U+2581 dummy prefix when `with_dummy`.
#[inline]
fn build_chunk(chunk: &mut Vec<u8>, raw: &[u8], with_dummy: bool) {
    chunk.clear();
    if with_dummy {
        chunk.extend_from_slice(SPACE_MARK);
    }
    let mut rest = raw;
    while let Some(q) = memchr::memchr(b' ', rest) {
        chunk.extend_from_slice(&rest[..q]);
        chunk.extend_from_slice(SPACE_MARK);
        rest = &rest[q + 1..];
    }
    chunk.extend_from_slice(rest);
}

/// The memo probe of chunk `i` of `text` (chunk ends `ends`), its inline
/// sets prefetched.
#[inline(always)]
fn probe_chunk(cache: &WordCache, text: &[u8], ends: &[usize], i: usize) -> Probe {
    let s = i
        .checked_sub(1)
        .and_then(|p| ends.get(p))
        .copied()
        .unwrap_or(0);
    let e = ends.get(i).copied().unwrap_or(s);
    let p = cache.probe(key128(text, s, e - s), e - s);
    if e - s <= INLINE_KEY {
        cache.prefetch(&p);
    }
    p
}

/// Calls `f` with the position of every `' '` in `text` after byte 0, in
/// order. Eight bytes at a time: English has a space every few bytes, where
/// a `memchr` call per space cost more than the scan.
#[inline]
fn for_each_space(text: &[u8], mut f: impl FnMut(usize)) {
    const SPACES: u64 = 0x2020_2020_2020_2020;
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    let mut words = text.chunks_exact(8);
    let mut base = 0usize;
    for w in words.by_ref() {
        let x = u64::from_le_bytes(<[u8; 8]>::try_from(w).unwrap_or([0; 8])) ^ SPACES;
        // The high bit of each byte of `x` that is zero (exact: no carries
        // cross bytes).
        let mut m = !(((x & LOW7) + LOW7) | x | LOW7);
        while m != 0 {
            let q = base + (m.trailing_zeros() / 8) as usize;
            m &= m - 1;
            if q > 0 {
                f(q);
            }
        }
        base += 8;
    }
    for (k, &b) in words.remainder().iter().enumerate() {
        if b == b' ' && base + k > 0 {
            f(base + k);
        }
    }
}

/// The packed code of the character that ends just before `text[q]`
/// (`q > 0`); `' '` counts as U+2581.
#[inline]
fn prev_code(text: &[u8], q: usize) -> u32 {
    let Some(&b) = q.checked_sub(1).and_then(|i| text.get(i)) else {
        return u32::MAX;
    };
    if b == b' ' {
        return SPACE_CODE;
    }
    if b < 0x80 {
        return u32::from(b);
    }
    let mut s = q - 1;
    while s > 0 && q - s < 4 && (text[s] & 0xC0) == 0x80 {
        s -= 1;
    }
    pack_char(&text[s..q])
}

#[cfg(test)]
mod tests {
    use super::for_each_space;
    use proptest::prelude::*;

    proptest! {
        /// The word-at-a-time space scan finds exactly the spaces after
        /// byte 0, in order, at every alignment and next to any byte.
        #[test]
        fn space_scan_finds_every_space(
            text in prop::collection::vec(prop::sample::select(&[b' ', b'a', 0xE2, 0x96, 0x81, 0x00, 0x7F, 0xFF, 0xA0, 0x20 ^ 0x80][..]), 0..70),
        ) {
            let mut got = Vec::new();
            for_each_space(&text, |q| got.push(q));
            let want: Vec<usize> = (1..text.len()).filter(|&i| text[i] == b' ').collect();
            prop_assert_eq!(got, want);
        }
    }
}
