//! One subrank = one stackful coroutine (corosensei) on its own mmap'ed stack with a guard page.

use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::Cell;

pub type Body = Box<dyn FnOnce() -> i32>;

pub struct Subrank {
    co: Coroutine<(), (), i32, DefaultStack>,
    /// Lowest usable stack address (the guard page lies just below).
    pub limit: usize,
    pub base: usize,
    /// The subrank whose contents of the swapped memory (`swap`) it runs with: its own
    /// index for a subrank, its parent's for a helper task.
    pub tls: usize,
}

/// Stacks of finished helper tasks, for the next ones.
static SPARE: super::lock::Lock<Vec<DefaultStack>> = super::lock::Lock::new(Vec::new());
/// Spare stacks kept at most (each keeps the pages its helper touched).
const SPARE_MAX: usize = 64;

thread_local! {
    /// The yielder of the coroutine running on this thread, if any.
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(std::ptr::null()) };
}

pub enum Resumed {
    Suspended,
    Finished(i32),
}

impl Subrank {
    pub fn new(stack_bytes: usize, body: Body) -> std::io::Result<Subrank> {
        Ok(Subrank::on(DefaultStack::new(stack_bytes)?, body))
    }

    /// A helper task's coroutine (`worker::spawn`), on the stack of a finished one when one
    /// is spare (see `recycle`): an mmap, an mprotect and a munmap less per nonblocking
    /// collective. Every helper stack has `stack_bytes`.
    pub fn new_reusing(stack_bytes: usize, body: Body) -> std::io::Result<Subrank> {
        let spare = SPARE.lock().pop();
        let stack = match spare {
            Some(s) => s,
            None => DefaultStack::new(stack_bytes)?,
        };
        Ok(Subrank::on(stack, body))
    }

    /// Keeps the stack of a finished helper task for the next one (up to `SPARE_MAX`).
    pub fn recycle(self) {
        if !self.co.done() {
            return;
        }
        let stack = self.co.into_stack();
        let mut spare = SPARE.lock();
        if spare.len() < SPARE_MAX {
            spare.push(stack);
            return;
        }
        drop(spare);
        drop(stack);
    }

    fn on(stack: DefaultStack, body: Body) -> Subrank {
        // corosensei's limit() is the start of its mapping, guard page included: the lowest
        // usable address is one page above.
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let (base, limit) = (stack.base().get(), stack.limit().get() + page);
        let co = Coroutine::with_stack(stack, move |y: &Yielder<(), ()>, ()| {
            YIELDER.with(|c| c.set(y as *const _));
            body()
        });
        Subrank { co, limit, base, tls: 0 }
    }

    /// Whether its body has returned.
    pub fn finished(&self) -> bool {
        self.co.done()
    }

    /// Runs the subrank until it suspends or returns.
    pub fn resume(&mut self) -> Resumed {
        let saved = YIELDER.with(|c| c.get());
        let r = self.co.resume(());
        YIELDER.with(|c| c.set(saved));
        match r {
            CoroutineResult::Yield(()) => Resumed::Suspended,
            CoroutineResult::Return(code) => Resumed::Finished(code),
        }
    }
}

/// Whether the caller runs inside a subrank. Out of line, as every access to YIELDER: a
/// coroutine may resume on another thread (SMP mode), and a thread-local's address computed
/// before a suspension must never be reused after it (inlined into a caller's loop, the
/// compiler would hoist the lookup out of it).
#[inline(never)]
pub fn in_subrank() -> bool {
    YIELDER.with(|c| !c.get().is_null())
}

/// Suspends the running subrank back to its worker. Returns false (and does nothing) when
/// called outside a subrank. Out of line (see `in_subrank`).
#[inline(never)]
pub fn suspend() -> bool {
    let y = YIELDER.with(|c| c.get());
    if y.is_null() {
        return false;
    }
    // SAFETY: YIELDER is set by the running coroutine's body to its own yielder and restored by
    // `resume` when it returns, so a non-null value always belongs to the coroutine executing
    // on this thread right now, which stays alive while it runs.
    unsafe { (*y).suspend(()) };
    // After resumption the worker (maybe another thread: SMP mode) may have run other
    // subranks which set YIELDER to theirs and restored it; ours is the one current again.
    set_yielder(y);
    true
}

/// Out of line: the thread-local's address must be looked up again after a suspension, which
/// may have moved the coroutine to another thread (the compiler would reuse the address it
/// computed before the suspension within one function).
#[inline(never)]
fn set_yielder(y: *const Yielder<(), ()>) {
    YIELDER.with(|c| c.set(y));
}
