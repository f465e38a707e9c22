//! A backend's working memory, one per thread, lent in place.

use std::cell::RefCell;

use thread_local::ThreadLocal;

/// One warm scratch per thread for one backend, without a lock: a thread
/// that encodes with two models keeps both warm (a BPE word cache is
/// megabytes to make, DESIGN.md invariant `caches-bounded`). The scratch is borrowed where
/// it lies (moving it out and back cost a short encode 5–10 %, invariant
/// `pipeline-walk-equals-pipeline`);
/// an encode nested on the same thread (none is today) gets a fresh one.
pub(crate) struct ThreadScratch<S: Send>(ThreadLocal<RefCell<Option<S>>>);

impl<S: Send> Default for ThreadScratch<S> {
    fn default() -> Self {
        Self(ThreadLocal::new())
    }
}

impl<S: Send> ThreadScratch<S> {
    /// Runs `f` with this thread's scratch, made by `fresh` on first use.
    #[inline]
    pub(crate) fn with<T>(&self, fresh: impl FnOnce() -> S, f: impl FnOnce(&mut S) -> T) -> T {
        match self.0.get_or_default().try_borrow_mut() {
            Ok(mut slot) => f(slot.get_or_insert_with(fresh)),
            Err(_) => f(&mut fresh()),
        }
    }
}
