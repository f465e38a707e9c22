//! The software prefetch the engines' tables use to fetch a line before
//! they read it.

/// Asks the core to bring the line holding `at` near: into L1 when `near`,
/// else into L2. A hint, with no effect on what the program computes.
#[inline(always)]
pub(crate) fn prefetch<T>(at: *const T, near: bool) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _MM_HINT_T1, _mm_prefetch};
        // SAFETY: a prefetch reads nothing and writes nothing; any address
        // is allowed, and the SSE it needs is in the x86-64 baseline.
        unsafe {
            if near {
                _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>());
            } else {
                _mm_prefetch::<_MM_HINT_T1>(at.cast::<i8>());
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, near);
}
