//! Segment merging: cutting normalized text at safe boundaries and frozen
//! symbols, the per-segment memo, and the two merge loops (direct scanning
//! for short segments, sentencepiece's heap for long ones and for the whole
//! text), with `rev_merge` resegmentation.

use std::collections::BinaryHeap;

use super::super::PieceType;
use super::super::cache::{MAX_KEY, WordCache, key128};
use super::super::model::{NO_ID, PieceSink, Vocab};
use super::super::normalizer::PrefixMatcher;
use super::super::utf8::{SPACE_MARK, char_len_at, one_char_len, pack_char};
use super::{
    Bpe, Entry, MAX_RESEGMENT_DEPTH, RevMerge, SMALL_SEGMENT, SmallWork, Sym, Work, bmp_cp, record,
};

impl Bpe {
    /// Cuts `buf` (normalized text starting at normalized offset `base`) at
    /// safe boundaries and frozen symbols, and merges each segment.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn scan_segments<S: PieceSink>(
        &self,
        vocab: &Vocab,
        matcher: &PrefixMatcher,
        buf: &[u8],
        base: usize,
        mut cache: Option<&mut WordCache>,
        work: &mut Work<'_>,
        sink: &mut S,
    ) {
        let use_matcher = !matcher.is_empty();
        let n = buf.len();
        let mut seg_start = 0usize;
        let mut pos = 0usize;
        let mut prev_code = u32::MAX;
        let mut prev_cp = usize::MAX;
        // Byte length of the previous character; 0 right after a frozen
        // symbol (then `pos == seg_start`) or at the start.
        let mut prev_len = 0usize;
        while pos < n {
            let b = buf[pos];
            if use_matcher
                && self.ud_lead[usize::from(b)]
                && let Some((len, id)) = matcher.find(&buf[pos..])
            {
                self.flush(
                    vocab,
                    buf,
                    base,
                    seg_start,
                    pos,
                    cache.as_deref_mut(),
                    work,
                    sink,
                );
                let frozen = Sym {
                    start: pos,
                    len: len as u32,
                    id,
                    frozen: true,
                };
                self.emit(vocab, buf, base, &frozen, sink);
                pos += len;
                seg_start = pos;
                prev_len = 0;
                continue;
            }
            let (l, code, cp) = if b < 0x80 {
                (1, u32::from(b), usize::from(b))
            } else {
                let l = one_char_len(b).min(n - pos);
                let c = &buf[pos..pos + l];
                (l, pack_char(c), bmp_cp(c).unwrap_or(usize::MAX))
            };
            if pos != seg_start && !self.adjacent_cp(prev_code, prev_cp, code, cp) {
                let last = (prev_len, prev_cp);
                let seg = (seg_start, pos);
                self.close(
                    vocab,
                    buf,
                    base,
                    seg,
                    last,
                    cache.as_deref_mut(),
                    work,
                    sink,
                );
                seg_start = pos;
            }
            prev_code = code;
            prev_cp = cp;
            prev_len = l;
            pos += l;
        }
        let last = (prev_len, prev_cp);
        self.close(vocab, buf, base, (seg_start, n), last, cache, work, sink);
    }

    /// Ends the segment `buf[start..end]` whose last character has byte
    /// length and BMP code point `last` (length 0: unknown): a segment of
    /// that one character goes out directly, any other through
    /// [`flush`](Self::flush).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn close<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        (start, end): (usize, usize),
        (last_len, last_cp): (usize, usize),
        cache: Option<&mut WordCache>,
        work: &mut Work<'_>,
        sink: &mut S,
    ) {
        if last_len != 0 && end.saturating_sub(start) == last_len {
            self.emit_char(vocab, buf, base, start, last_len, last_cp, sink);
        } else {
            self.flush(vocab, buf, base, start, end, cache, work, sink);
        }
    }

    /// Emits the one-character segment `buf[start..start + len]` (BMP code
    /// point `cp`, or `usize::MAX`): nothing merges, so its symbol is final.
    /// An ordinary piece goes out as `plain_one`, as a memo hit would.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn emit_char<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        start: usize,
        len: usize,
        cp: usize,
        sink: &mut S,
    ) {
        let c = buf.get(start..start + len).unwrap_or_default();
        let id = match self.bmp_id.get(cp) {
            Some(&id) => id,
            None => self.char_id(c),
        };
        let sym = Sym {
            start,
            len: len as u32,
            id,
            frozen: false,
        };
        let f = self.final_id(vocab, &sym);
        if f != vocab.unk_id_raw() && f != NO_ID {
            sink.plain_one(base + start, len, f);
        } else {
            sink.piece(base + start, c, f);
        }
    }

    /// Merges and emits the segment `buf[start..end]` (no frozen symbols
    /// inside), through the memo when it is short.
    #[allow(clippy::too_many_arguments)]
    fn flush<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        start: usize,
        end: usize,
        cache: Option<&mut WordCache>,
        w: &mut Work<'_>,
        sink: &mut S,
    ) {
        if start >= end {
            return;
        }
        let key = &buf[start..end];
        if char_len_at(key) == key.len() {
            // One character: nothing to merge.
            let sym = Sym {
                start,
                len: key.len() as u32,
                id: self.char_id(key),
                frozen: false,
            };
            self.emit(vocab, buf, base, &sym, sink);
            return;
        }
        let cacheable = key.len() <= MAX_KEY
            && cache.is_some()
            && !(w.whole_memoized && start == 0 && end == buf.len());
        // A segment that starts with U+2581 is keyed with `' '` in its place:
        // the raw key of a chunk that is that one word, so ` word` and
        // ` word,` share an entry (invariant `cache-transparent`). Exact: every key stands for
        // the pieces of its bytes with `' '` read as U+2581.
        let mut raw = [0u8; MAX_KEY];
        let (kbuf, kstart, klen): (&[u8], usize, usize) = match key.strip_prefix(SPACE_MARK) {
            Some(rest) if cacheable => {
                raw[0] = b' ';
                raw[1..=rest.len()].copy_from_slice(rest);
                (&raw, 0, rest.len() + 1)
            }
            _ => (buf, start, key.len()),
        };
        let mkey = kbuf.get(kstart..kstart + klen).unwrap_or_default();
        if let (true, Some(cache)) = (cacheable, cache.as_deref())
            && Self::replay_segment(vocab, buf, base, start, cache, (kbuf, kstart, klen), sink)
        {
            return;
        }
        self.seed_symbols(buf, start, end, w.seg);
        if w.seg.len() > SMALL_SEGMENT {
            self.merge_heap(vocab, buf, base, w.seg, w.prev, w.next, w.heap, None, sink);
            return;
        }
        if w.seg.len() > 1 {
            self.merge_small(
                w.seg,
                &mut SmallWork {
                    cand: w.cand,
                    merged: w.cand_merged,
                    prev: w.prev,
                    next: w.next,
                },
            );
        }
        let plain = self.emit_recorded(vocab, buf, base, w.seg, w.out, sink);
        if let (true, Some(cache)) = (cacheable, cache) {
            cache.insert(mkey, w.out, plain);
        }
    }

    /// [`flush`](Self::flush)'s memo lookup under the key
    /// `kbuf[kstart..kstart + klen]`: replays a memoized segment starting at
    /// `buf[start]` into `sink` and returns true, or returns false on a miss.
    #[inline]
    fn replay_segment<S: PieceSink>(
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        start: usize,
        cache: &WordCache,
        (kbuf, kstart, klen): (&[u8], usize, usize),
        sink: &mut S,
    ) -> bool {
        if let Some(hit) = cache.get_inline(key128(kbuf, kstart, klen), klen) {
            sink.plain(base + start, hit.ids(), hit.lens());
            return true;
        }
        let mkey = kbuf.get(kstart..kstart + klen).unwrap_or_default();
        let Some(vals) = cache.get_arena(mkey) else {
            return false;
        };
        let unk = vocab.unk_id_raw();
        let mut s = start;
        for &(id, len) in vals {
            let e = s + len as usize;
            if id != unk && id != NO_ID {
                sink.plain_one(base + s, len as usize, id);
            } else {
                sink.piece(base + s, buf.get(s..e).unwrap_or_default(), id);
            }
            s = e;
        }
        true
    }

    /// The initial symbols of the segment `buf[start..end]`: one per
    /// character, none frozen.
    #[inline]
    fn seed_symbols(&self, buf: &[u8], start: usize, end: usize, seg: &mut Vec<Sym>) {
        seg.clear();
        let mut pos = start;
        while pos < end {
            let l = char_len_at(&buf[pos..end]);
            seg.push(Sym {
                start: pos,
                len: l as u32,
                id: self.char_id(&buf[pos..pos + l]),
                frozen: false,
            });
            pos += l;
        }
    }

    /// Emits a merged segment's final symbols, recording them in `out` for
    /// the memo; returns whether every recorded piece is plain (see
    /// [`record`]).
    #[inline]
    fn emit_recorded<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        seg: &[Sym],
        out: &mut Vec<(u32, u32)>,
        sink: &mut S,
    ) -> bool {
        out.clear();
        let unk = vocab.unk_id_raw();
        let fallback = self.fallback.as_deref();
        let mut plain = true;
        for s in seg.iter() {
            let id = self.final_id(vocab, s);
            let bytes = &buf[s.start..s.start + s.len as usize];
            plain &= record(out, id, bytes, unk, fallback);
            sink.piece(base + s.start, bytes, id);
        }
        plain
    }

    /// O(k^2) merging for short segments: repeatedly merge the best pair
    /// (highest key, leftmost on ties), which is the pair the heap would pop.
    /// Symbols stay in place (a merged-away one gets length 0, linked out
    /// through `next`/`prev`), so a merge costs one branch-free max scan over
    /// packed candidates ([`pack_cand`]) and two pair lookups, never a shift
    /// of the symbol array.
    fn merge_small(&self, seg: &mut Vec<Sym>, w: &mut SmallWork<'_>) {
        let k = seg.len();
        let SmallWork {
            cand,
            merged,
            prev,
            next,
        } = w;
        cand.clear();
        merged.clear();
        for (i, p) in seg.windows(2).enumerate() {
            let (c, m) = self.cand_of(&p[0], &p[1], i);
            cand.push(c);
            merged.push(m);
        }
        // The last symbol has no right neighbour.
        cand.push(0);
        merged.push(NO_ID);
        prev.clear();
        next.clear();
        prev.extend((0..k as u32).map(|i| i.wrapping_sub(1)));
        next.extend(1..=k as u32);
        loop {
            let best = cand.iter().copied().max().unwrap_or(0);
            if best == 0 {
                break;
            }
            let i = unpack_cand(best);
            let j = next[i] as usize;
            let (Some(&right), Some(&m)) = (seg.get(j), merged.get(i)) else {
                break;
            };
            seg[i].len += right.len;
            seg[i].id = m;
            seg[j].len = 0;
            cand[j] = 0;
            let nj = next[j];
            next[i] = nj;
            match seg.get(nj as usize) {
                Some(r) => {
                    prev[nj as usize] = i as u32;
                    (cand[i], merged[i]) = self.cand_of(&seg[i], r, i);
                }
                None => cand[i] = 0,
            }
            let p = prev[i] as usize;
            if let Some(l) = seg.get(p) {
                (cand[p], merged[p]) = self.cand_of(l, &seg[i], p);
            }
        }
        seg.retain(|s| s.len != 0);
    }

    /// [`pair`](Self::pair) packed for [`merge_small`](Self::merge_small):
    /// (candidate, merged id); candidate 0 when the pair does not merge.
    #[inline]
    fn cand_of(&self, a: &Sym, b: &Sym, i: usize) -> (u64, u32) {
        match self.pair(a, b) {
            Some((key, m)) => (pack_cand(key, i), m),
            None => (0, NO_ID),
        }
    }

    /// A heap entry for symbols `l`, `r`, recording `rev_merge` for UNUSED
    /// results when `rev` is given (`MaybeAddNewSymbolPair`).
    #[inline]
    fn entry(
        &self,
        vocab: &Vocab,
        syms: &[Sym],
        l: u32,
        r: u32,
        rev: &mut Option<&mut RevMerge>,
    ) -> Option<Entry> {
        let a = syms.get(l as usize)?;
        let b = syms.get(r as usize)?;
        let (key, merged) = self.pair(a, b)?;
        if let Some(rm) = rev.as_deref_mut()
            && vocab.kind(merged) == PieceType::Unused
        {
            rm.insert(merged, ((a.start, a.len), (b.start, b.len)));
        }
        Some(Entry {
            key,
            left: l,
            right: r,
            size: a.len + b.len,
            merged,
        })
    }

    /// sentencepiece's heap algorithm over `syms` (all of the text, or one
    /// long segment), then emission (with `rev_merge` resegmentation when
    /// `rev` is given).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn merge_heap<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        syms: &mut [Sym],
        prev: &mut Vec<u32>,
        next: &mut Vec<u32>,
        heap_buf: &mut Vec<Entry>,
        mut rev: Option<&mut RevMerge>,
        sink: &mut S,
    ) {
        let n = syms.len();
        if n == 0 {
            return;
        }
        prev.clear();
        next.clear();
        prev.extend((0..n as u32).map(|i| i.wrapping_sub(1)));
        next.extend((1..=n as u32).map(|i| if i as usize == n { u32::MAX } else { i }));
        heap_buf.clear();
        for i in 1..n as u32 {
            if let Some(e) = self.entry(vocab, syms, i - 1, i, &mut rev) {
                heap_buf.push(e);
            }
        }
        let mut heap = BinaryHeap::from(std::mem::take(heap_buf));
        while let Some(top) = heap.pop() {
            let (l, r) = (top.left as usize, top.right as usize);
            let (Some(a), Some(b)) = (syms.get(l), syms.get(r)) else {
                continue;
            };
            if a.len == 0 || b.len == 0 || a.len + b.len != top.size {
                continue;
            }
            let right_len = b.len;
            syms[l].len += right_len;
            syms[l].id = top.merged;
            let rn = next[r];
            next[l] = rn;
            if let Some(p) = prev.get_mut(rn as usize) {
                *p = top.left;
            }
            syms[r].len = 0;
            if let Some(e) = self.entry(vocab, syms, prev[l], top.left, &mut rev) {
                heap.push(e);
            }
            if let Some(e) = self.entry(vocab, syms, top.left, next[l], &mut rev) {
                heap.push(e);
            }
        }
        *heap_buf = heap.into_vec();
        let mut i = 0u32;
        while let Some(s) = syms.get(i as usize) {
            match rev.as_deref() {
                Some(rm) => self.resegment(vocab, buf, base, (s.start, s.len), rm, 0, sink),
                None => self.emit(vocab, buf, base, s, sink),
            }
            i = next[i as usize];
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn resegment<S: PieceSink>(
        &self,
        vocab: &Vocab,
        buf: &[u8],
        base: usize,
        (start, len): (usize, u32),
        rev: &RevMerge,
        depth: u32,
        sink: &mut S,
    ) {
        let w = buf.get(start..start + len as usize).unwrap_or_default();
        let found = vocab.lookup_no_reserved(w);
        let unk = vocab.unk_id_raw();
        if depth > MAX_RESEGMENT_DEPTH {
            sink.piece(base + start, w, found.unwrap_or(unk));
            return;
        }
        let Some(id) = found.filter(|&id| vocab.kind(id).is_normal_like()) else {
            sink.piece(base + start, w, unk);
            return;
        };
        if vocab.kind(id) != PieceType::Unused {
            sink.piece(base + start, w, id);
            return;
        }
        match rev.get(&id) {
            Some(&(l, r)) => {
                self.resegment(vocab, buf, base, l, rev, depth + 1, sink);
                self.resegment(vocab, buf, base, r, rev, depth + 1, sink);
            }
            None => sink.piece(base + start, w, unk),
        }
    }
}

/// A merge candidate of [`Bpe::merge_small`] as one integer whose order is
/// the heap's: a set validity bit, the order key, then `255 - i` so that of
/// two equal keys the leftmost pair (smaller left index `i`) is larger.
/// `i < 256` (segments there have at most [`SMALL_SEGMENT`] symbols).
#[inline]
fn pack_cand(key: u32, i: usize) -> u64 {
    (1 << 40) | (u64::from(key) << 8) | (255 - (i as u64 & 0xFF))
}

/// The left index of a [`pack_cand`] value.
#[inline]
fn unpack_cand(c: u64) -> usize {
    255 - (c & 0xFF) as usize
}
