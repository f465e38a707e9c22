//! Maps byte positions in normalized text back to the original text.
//!
//! `tokenizers` 1.0 normalizes without alignments, so when a normalizer
//! changed a segment (NFC on decomposed input, `Prepend("▁")`, lowercase, …)
//! we align the two strings ourselves: equal characters map one to one, and a
//! run that differs maps as a block (its inside positions go to the block
//! start, its end to the block end). The result is monotone and covers the
//! input, which is what offsets need; inside a changed block it is coarse.

/// `map[i]` is the original byte position of normalized byte position `i`
/// (`map.len() == normalized.len() + 1`).
pub(crate) fn align(original: &str, normalized: &str) -> Vec<u32> {
    let o: Vec<(usize, char)> = original.char_indices().collect();
    let n: Vec<(usize, char)> = normalized.char_indices().collect();
    let o_pos = |i: usize| o.get(i).map_or(original.len(), |&(p, _)| p);
    let n_pos = |j: usize| n.get(j).map_or(normalized.len(), |&(p, _)| p);
    let mut map = vec![0u32; normalized.len() + 1];
    let to_u32 = |p: usize| u32::try_from(p).unwrap_or(u32::MAX);
    let block = |map: &mut Vec<u32>, (i0, i1): (usize, usize), (j0, j1): (usize, usize)| {
        let (os, oe, ns, ne) = (o_pos(i0), o_pos(i1), n_pos(j0), n_pos(j1));
        for slot in &mut map[ns..ne] {
            *slot = to_u32(os);
        }
        if ne == ns || oe != os {
            map[ne] = to_u32(oe);
        }
    };
    let (mut i, mut j) = (0usize, 0usize);
    while i < o.len() && j < n.len() {
        if o[i].1 == n[j].1 {
            let (os, oe) = (o_pos(i), o_pos(i + 1));
            let (ns, ne) = (n_pos(j), n_pos(j + 1));
            if oe - os == ne - ns {
                for k in 0..(ne - ns) {
                    map[ns + k] = to_u32(os + k);
                }
                map[ne] = to_u32(oe);
            } else {
                block(&mut map, (i, i + 1), (j, j + 1));
            }
            i += 1;
            j += 1;
            continue;
        }
        match resync(&o, &n, i, j) {
            Some((di, dj)) => {
                block(&mut map, (i, i + di), (j, j + dj));
                i += di;
                j += dj;
            }
            None => break,
        }
    }
    block(&mut map, (i, o.len()), (j, n.len()));
    map[normalized.len()] = to_u32(original.len());
    map
}

/// The smallest skip `(di, dj)` after which both strings agree again on the
/// next two characters (or to the end). Balanced skips win ties.
fn resync(o: &[(usize, char)], n: &[(usize, char)], i: usize, j: usize) -> Option<(usize, usize)> {
    const WINDOW: usize = 8;
    let agrees = |a: usize, b: usize| {
        let k = 2.min(o.len() - a).min(n.len() - b);
        if k == 0 {
            return a == o.len() && b == n.len();
        }
        (0..k).all(|t| o[a + t].1 == n[b + t].1)
    };
    for total in 1..=2 * WINDOW {
        let mut candidates: Vec<(usize, usize)> = (0..=total)
            .map(|di| (di, total - di))
            .filter(|&(di, dj)| {
                di <= WINDOW && dj <= WINDOW && i + di <= o.len() && j + dj <= n.len()
            })
            .collect();
        candidates.sort_by_key(|&(di, dj)| di.abs_diff(dj));
        if let Some(hit) = candidates
            .into_iter()
            .find(|&(di, dj)| agrees(i + di, j + dj))
        {
            return Some(hit);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(original: &str, normalized: &str) -> Vec<u32> {
        let map = align(original, normalized);
        assert_eq!(map.len(), normalized.len() + 1);
        assert!(map.windows(2).all(|w| w[0] <= w[1]), "monotone: {map:?}");
        assert_eq!(*map.last().unwrap() as usize, original.len());
        map
    }

    #[test]
    fn identity_and_local_changes() {
        assert_eq!(check("abc", "abc"), vec![0, 1, 2, 3]);
        // Prepend + Replace: "▁a▁b" from "a b".
        let m = check("a b", "▁a▁b");
        assert_eq!(m[3], 0); // 'a' after the prepended ▁
        assert_eq!(m[7], 2); // 'b'
        // NFC: e + combining acute → é.
        let m = check("xe\u{301}y", "x\u{e9}y");
        assert_eq!(m[1], 1);
        assert_eq!(m[3], 4);
        // Lowercase.
        check("HeLLo", "hello");
        check("", "▁");
        check("abc", "");
    }
}
