//! Tables of megabytes that an encode reads at random, on 2 MiB pages
//! where the system allows them.
//!
//! Performance notes: a word seen for the first time reads a line from each
//! of a few multi-megabyte tables (the byte-level engine's word table and
//! pair table). On 4 KiB pages a table of 8 MiB is 2,048 pages, as many as
//! the core's second-level TLB holds for everything, so such a read also
//! waits for a page walk. Linux backs memory with 2 MiB pages in its default
//! `madvise` mode only where asked: a table here is its own anonymous
//! mapping, aligned to 2 MiB and advised `MADV_HUGEPAGE`. Under `never` the
//! advice is ignored and under `always` it is what happens anyway; a table
//! under [`MAPPED_MIN`] stays on the heap (`docs/perf/byte_engine_2026-12-03.md`).

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use memmap2::MmapMut;

/// A huge page's size (x86-64 and aarch64 with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Tables from this size get huge pages of their own, rounded up to whole
/// pages: the byte-level engine's 4 MiB grid of pairs and its 512 KiB pair
/// filter are read at random on every merge step (1,024 and 128 small
/// pages), and share the TLB with the word and pair tables.
const MAPPED_MIN: usize = 256 << 10;

/// A fixed-length slice of `T` on its own huge-page mapping, or on the
/// heap when it is small or the mapping cannot be made.
pub(crate) struct HugeBox<T: Copy> {
    /// The first element, in `owner`'s memory, aligned for `T`.
    ptr: NonNull<T>,
    len: usize,
    /// Owns the memory `ptr` points into; moving it does not move that
    /// memory.
    _owner: Owner<T>,
}

enum Owner<T> {
    Mapped(#[allow(dead_code)] MmapMut),
    Heap(#[allow(dead_code)] Vec<T>),
}

// SAFETY: a `HugeBox` owns its elements alone, as a `Box<[T]>` does (no
// other handle to its memory exists), so it moves and shares between
// threads exactly when `T` does.
unsafe impl<T: Copy + Send> Send for HugeBox<T> {}
// SAFETY: as above; `&HugeBox` gives only `&[T]`.
unsafe impl<T: Copy + Sync> Sync for HugeBox<T> {}

impl<T: Copy> HugeBox<T> {
    /// `len` copies of `value`.
    pub(crate) fn filled(len: usize, value: T) -> Self {
        let Some(mut mapped) = Self::mapped(len) else {
            return Self::heap(vec![value; len]);
        };
        for i in 0..len {
            // SAFETY: `mapped.ptr` points at room for `len` elements of
            // `T`, aligned (see `mapped`), and `i < len`; `write` does not
            // read the bytes it replaces.
            unsafe { mapped.ptr.as_ptr().add(i).write(value) };
        }
        mapped.len = len;
        mapped
    }

    /// A copy of `items`.
    pub(crate) fn from_slice(items: &[T]) -> Self {
        let Some(mut mapped) = Self::mapped(items.len()) else {
            return Self::heap(items.to_vec());
        };
        // SAFETY: the mapping has room for `items.len()` aligned elements
        // (see `mapped`) and is not `items`' memory; `T: Copy`, so copying
        // its bytes makes valid values.
        unsafe {
            std::ptr::copy_nonoverlapping(items.as_ptr(), mapped.ptr.as_ptr(), items.len());
        }
        mapped.len = items.len();
        mapped
    }

    fn heap(mut items: Vec<T>) -> Self {
        let ptr = NonNull::new(items.as_mut_ptr()).unwrap_or(NonNull::dangling());
        Self {
            ptr,
            len: items.len(),
            _owner: Owner::Heap(items),
        }
    }

    /// An aligned mapping with room for `len` elements, none of them
    /// written yet (`len` is 0 until the caller has written them all);
    /// `None` for a small table or where no mapping can be made.
    fn mapped(len: usize) -> Option<Self> {
        let bytes = len.checked_mul(size_of::<T>())?;
        if bytes < MAPPED_MIN || align_of::<T>() > HUGE_PAGE {
            return None;
        }
        // Whole huge pages: a table under one still takes a page of its own.
        let pages = bytes.div_ceil(HUGE_PAGE).checked_mul(HUGE_PAGE)?;
        let mut map = MmapMut::map_anon(pages.checked_add(HUGE_PAGE)?).ok()?;
        let offset = map.as_ptr().align_offset(HUGE_PAGE);
        if offset.checked_add(pages)? > map.len() {
            return None;
        }
        #[cfg(target_os = "linux")]
        {
            // A hint: where it is refused the table is on small pages.
            let _ = map.advise_range(memmap2::Advice::HugePage, offset, pages);
        }
        let ptr = NonNull::new(map.as_mut_ptr().wrapping_add(offset).cast::<T>())?;
        Some(Self {
            ptr,
            len: 0,
            _owner: Owner::Mapped(map),
        })
    }
}

impl<T: Copy> Deref for HugeBox<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is aligned and points at `len` initialized elements
        // in memory `_owner` keeps alive and only this box reaches.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for HugeBox<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference to them.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Clone for HugeBox<T> {
    fn clone(&self) -> Self {
        Self::from_slice(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_tables_hold_what_was_put() {
        for len in [0, 1, 1000, MAPPED_MIN / 8 + 1, HUGE_PAGE / 8 + 3] {
            let mut table = HugeBox::filled(len, 7u64);
            assert_eq!(table.len(), len);
            assert!(table.iter().all(|&v| v == 7));
            if let Some(last) = table.last_mut() {
                *last = 9;
            }
            let copy = table.clone();
            assert_eq!(&copy[..], &table[..]);
            assert_eq!(table.as_ptr().align_offset(align_of::<u64>()), 0);
            std::thread::spawn(move || assert_eq!(copy.len(), len))
                .join()
                .unwrap();
        }
    }
}
