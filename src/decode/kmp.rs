//! Streaming prefix matching for stop strings and stop id sequences.
//!
//! The stop decoder needs, after every byte, the length of the longest suffix
//! of the text that is a prefix of each stop (its jail) and whether a stop just
//! completed. A Knuth–Morris–Pratt automaton per stop gives both in O(1)
//! amortized per symbol, from tables built in O(stop length): no proper prefix
//! is ever materialised. `aho-corasick` finds matches but exposes no prefix
//! length for a state, which the jail needs, so this is written here.

/// One pattern and its failure function.
#[derive(Debug, Clone)]
pub(crate) struct Kmp<T> {
    pattern: Box<[T]>,
    /// `fail[i]`: length of the longest proper border of `pattern[..=i]`.
    fail: Box<[u32]>,
}

impl<T: Copy + Eq> Kmp<T> {
    /// Builds the tables in O(`pattern.len()`). `pattern` must not be empty.
    pub(crate) fn new(pattern: &[T]) -> Self {
        let mut fail = vec![0u32; pattern.len()];
        let mut k = 0usize;
        for i in 1..pattern.len() {
            while k > 0 && pattern[i] != pattern[k] {
                k = fail[k - 1] as usize;
            }
            if pattern[i] == pattern[k] {
                k += 1;
            }
            fail[i] = k as u32;
        }
        Self {
            pattern: pattern.into(),
            fail: fail.into(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.pattern.len()
    }

    /// Advances `state` (symbols matched so far, always `< len`) by `x`.
    /// Returns true when the whole pattern just matched; the state then falls
    /// back to the longest proper border, so overlapping matches are found.
    #[inline]
    pub(crate) fn advance(&self, state: &mut u32, x: T) -> bool {
        let mut s = *state as usize;
        loop {
            if self.pattern[s] == x {
                s += 1;
                break;
            }
            if s == 0 {
                break;
            }
            s = self.fail[s - 1] as usize;
        }
        if s == self.pattern.len() {
            *state = self.fail[s - 1];
            true
        } else {
            *state = s as u32;
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every (end, matched) against a naive scan, and the state against the
    /// longest suffix that is a proper prefix.
    #[test]
    fn matches_naive_scan() {
        let texts: [&[u8]; 4] = [b"abababcabab", b"aaaaaa", b"xyz", b"abcabcabd"];
        let pats: [&[u8]; 5] = [b"abab", b"a", b"aa", b"abcabd", b"xyzw"];
        for p in pats {
            let kmp = Kmp::new(p);
            for t in texts {
                let mut state = 0;
                for i in 0..t.len() {
                    let hit = kmp.advance(&mut state, t[i]);
                    let seen = &t[..=i];
                    assert_eq!(hit, seen.ends_with(p), "{p:?} in {t:?} at {i}");
                    let want = (0..p.len())
                        .rev()
                        .find(|&k| seen.ends_with(&p[..k]))
                        .unwrap_or(0);
                    assert_eq!(state as usize, want, "{p:?} in {t:?} at {i}");
                }
            }
        }
    }
}
