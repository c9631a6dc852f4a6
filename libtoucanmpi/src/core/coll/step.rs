//! Request-free point-to-point steps of the blocking collectives at one member per process
//! (issue 16, session 19: docs/collectives.md "Session 19 (coll11)").
//!
//! At V = 1 with one worker, a small collective below the real MPI's thresholds runs our
//! point-to-point algorithms (`core::coll`), and each of their messages used to cost a request
//! entry on both sides (`isend`, `irecv`, then `wait_all`: the entry made, matched, completed,
//! settled and freed). The blocking point-to-point fast paths need none: an eager send is
//! one real send (`State::try_send_now`), and a blocking receive takes a queued copy, or
//! registers the subrank's one direct receive, which an arrival is copied into, or polls the
//! ring in place and copies its own message straight from the slot (`State::try_recv_now`,
//! `State::progress_recv`: MPI_Recv's request-free path in `abi::p2p`). The steps here use the
//! same machinery for a collective's messages:
//!
//! - their envelopes are the request path's (the communicator's collective context, the
//!   call's tag), so a step and a request may serve the two ends of one message, and the
//!   application's point-to-point (other contexts) never matches them, wildcards or not;
//! - a receive posted earlier that could match still matches first (arrivals are matched
//!   against the posted queue before a direct receive), and a message queued before is taken
//!   first (MPI's order between a pair);
//! - what these steps cannot do falls back to the request path, before anything was done: a
//!   message that needs a rendezvous (larger than the eager limit, either side), a
//!   non-contiguous type, a buffer among the program's swapped thread-locals;
//! - a subrank waiting in a step is parked with its pattern in `Local::waiting`, as in
//!   MPI_Recv, so the deadlock detector sees and names it.
//!
//! Only the subrank's own task takes them (`allowed`): the direct receive slot is one per
//! subrank, and helper tasks (nonblocking collectives over point-to-point) and the program's
//! own threads use requests.

use crate::consts as c;
use crate::core::coll::{Buf, Coll};
use crate::core::error::{err, MpiResult};
use crate::core::p2p::blocking::block_on_after;
use crate::core::p2p::matching::{Direct, Pattern};
use crate::core::request::{ReqId, Status};
use crate::core::state::{self, State};
use std::cell::Cell;
use std::sync::OnceLock;

/// Whether a blocking collective call of subrank `sub` may take request-free steps: one
/// member per process (V = 1, one worker) and the caller is the subrank's own task.
///
/// Session 21 (pt14): also with point-to-point passed through to the real MPI
/// (`p2p::direct`). The steps' messages are in the collective context, which is never a
/// direct context: they go over the transport's ring as before, never on the real twin, so
/// the program's messages (on the twin) cannot match them nor they the program's. A step
/// that waits polls the ring in place only while the transport has no real request pending
/// (`State::progress_recv`), else the whole engine, which tests the direct operations too;
/// `direct_probe_waiters` ignores its pattern (no direct communicator for that context), and
/// the deadlock detector's drain moves only the direct contexts' messages.
#[inline]
pub fn allowed(sub: usize) -> bool {
    super::one_per_process() && crate::sched::current() == sub
}

/// The launch's eager limit between processes (`Config::eager_max`): larger messages need a
/// request (rendezvous).
#[inline]
pub fn eager_max() -> usize {
    static MAX: OnceLock<usize> = OnceLock::new();
    *MAX.get_or_init(|| crate::core::runtime::config().eager_max)
}

/// The bytes of `b` when a step may move them as they are: a contiguous type, outside the
/// program's swapped thread-locals (which hold the running subrank's values only while it
/// runs). A zero-length buffer gets a dangling address, never read or written.
#[inline]
fn plain(b: &Buf) -> Option<(*mut u8, usize)> {
    if !b.dt.is_contiguous() {
        return None;
    }
    let len = b.count * b.dt.size;
    if len == 0 {
        return Some((std::ptr::NonNull::dangling().as_ptr(), 0));
    }
    if crate::core::p2p::tlsbuf::in_swapped(b.ptr, b.count, &b.dt).is_some() {
        return None;
    }
    Some((b.ptr, len))
}

/// Whether every block of `bs` may go in steps, each as one eager message.
pub(super) fn all_small(bs: &[Buf]) -> bool {
    let max = eager_max();
    bs.iter().all(|b| plain(b).is_some_and(|(_, n)| n <= max))
}

/// The error of a receive that got its message but failed (truncation).
fn checked(st: Status) -> MpiResult<()> {
    if st.error != c::MPI_SUCCESS {
        return err(st.error, "collective message did not fit the receive buffer (mismatched counts?)");
    }
    Ok(())
}

/// Receives the message matching `pat` into `buf` (`cap` bytes) for subrank `sub`, the running
/// task, without a request: a queued copy, or the direct receive registered there and waited
/// for (polling the ring in place, the subrank's own eager message copied from its slot).
/// None, having received nothing: the request path must (the subrank's direct receive is
/// taken, or the matching message is a rendezvous from another process).
///
/// # Safety
/// `buf..buf+cap` is writable until this returns.
unsafe fn recv_bytes(sub: usize, pat: Pattern, buf: *mut u8, cap: usize) -> MpiResult<Option<Status>> {
    let mine = Cell::new(false);
    let done = |s: &mut State, r: Option<Option<Status>>| {
        if r.is_some() && mine.get() {
            let l = &mut s.locals[sub];
            l.waiting = None;
            l.direct = None;
        }
        r
    };
    block_on_after(
        |s| {
            let l = &s.locals[sub];
            if !mine.get() && l.direct.is_some() {
                return Some(None);
            }
            // A message copied in while this rank was parked.
            if let Some(st) = l.direct.filter(|d| !d.copying).and_then(|d| d.done) {
                return done(s, Some(Some(st)));
            }
            if !l.unexpected.is_empty() {
                // SAFETY: the caller's buffer.
                if let Some(st) = unsafe { s.try_recv_now(sub, &pat, buf, cap) } {
                    return done(s, Some(Some(st)));
                }
                // A rendezvous message from another process needs a posted request.
                if s.probe(sub, &pat).is_some() {
                    return done(s, Some(None));
                }
            }
            let l = &mut s.locals[sub];
            l.waiting = Some(pat);
            l.direct = Some(Direct {
                pat,
                buf,
                cap,
                done: None,
                copying: false,
            });
            mine.set(true);
            None
        },
        // Polling in place (this rank runs): its own eager message goes straight from the
        // transport into `buf`.
        |s| {
            // SAFETY: the caller's buffer, and this rank runs.
            let (moved, st) = unsafe { s.progress_recv(sub, &pat, buf, cap) };
            match st {
                Some(st) => (true, done(s, Some(Some(st)))),
                None => (moved, None),
            }
        },
        false,
    )
}

/// Session 23: receives the message matching `pat` into `buf` (`cap` bytes) for subrank
/// `sub`, the running task: in a step (`recv_bytes`), else through a request for `cap` bytes
/// on communicator `handle` (the step could not: its direct receive taken, or a rendezvous
/// message); a message too large for `buf` is the standard's truncation error. For
/// `abi::collpair`, which has no `Coll`.
///
/// # Safety
/// `buf..buf+cap` is writable until this returns.
pub(crate) unsafe fn recv_plain(sub: usize, handle: usize, pat: Pattern, buf: *mut u8, cap: usize) -> MpiResult<()> {
    // SAFETY: the caller's buffer.
    if let Some(st) = unsafe { recv_bytes(sub, pat, buf, cap) }? {
        return checked(st);
    }
    let byte = crate::core::datatype::byte();
    // SAFETY: as above.
    let id = unsafe { crate::core::p2p::blocking::irecv(sub, handle, pat.ctx, buf, cap, &byte, pat.src, pat.tag) }?;
    checked(crate::core::p2p::blocking::wait(id)?)
}

impl Coll {
    /// Sends `b` to view rank `dest` in a step when this call takes them and the message is
    /// eager (complete at once, no request); otherwise starts it as a request, pushed onto
    /// `pend` for the caller to wait for.
    ///
    /// # Safety
    /// `b` is valid for its count until the send completes (the caller waits for `pend`).
    pub(super) unsafe fn post(&self, b: &Buf, dest: i32, tag: i32, pend: &mut Vec<ReqId>) -> MpiResult<()> {
        if self.quick {
            if let Some((p, len)) = plain(b) {
                let (sub, ctx, me, to, tag) = (
                    self.sub,
                    self.ctx(),
                    self.comm.rank,
                    self.comm.world_of(self.peer(dest)),
                    self.tag_base | tag,
                );
                // SAFETY: `p` holds `len` bytes (the caller's buffer); an eager send copies them.
                if state::with_hot(|s| unsafe { s.try_send_now(sub, ctx, me, to, tag, p, len) })? {
                    return Ok(());
                }
            }
        }
        pend.push(self.isend(b, dest, tag)?);
        Ok(())
    }

    /// Receives into `b` from view rank `src`: in a step when this call takes them, else (or
    /// when the step cannot) through a request.
    ///
    /// # Safety
    /// `b` is writable for its count until this returns.
    pub(super) unsafe fn take(&self, b: &Buf, src: i32, tag: i32) -> MpiResult<()> {
        if self.quick {
            if let Some((p, cap)) = plain(b) {
                let pat = Pattern {
                    ctx: self.ctx(),
                    src: self.peer(src),
                    tag: self.tag_base | tag,
                };
                // SAFETY: the caller's buffer, `cap` bytes.
                if let Some(st) = unsafe { recv_bytes(self.sub, pat, p, cap) }? {
                    return checked(st);
                }
            }
        }
        let st = crate::core::p2p::blocking::wait(self.irecv(b, src, tag)?)?;
        checked(st)
    }

    /// One exchange round: `out` to view rank `to`, `inb` from view rank `from` (the send
    /// first: an eager one completes at once, a rendezvous one is waited for after the
    /// receive).
    ///
    /// # Safety
    /// As `post` and `take`.
    pub(super) unsafe fn trade(&self, out: &Buf, to: i32, inb: &Buf, from: i32, tag: i32) -> MpiResult<()> {
        let mut pend = Vec::new();
        // SAFETY (both): the caller's buffers.
        unsafe {
            self.post(out, to, tag, &mut pend)?;
            self.take(inb, from, tag)?;
        }
        finish(&pend)
    }
}

/// Waits for the sends that went as requests.
pub(super) fn finish(pend: &[ReqId]) -> MpiResult<()> {
    if pend.is_empty() {
        return Ok(());
    }
    crate::core::p2p::blocking::wait_all(pend).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::{all_small, eager_max, plain};
    use crate::core::coll::Buf;
    use crate::core::datatype::byte;
    use rstest::rstest;

    /// Byte blocks of these lengths (`E`: the eager limit) go in steps exactly when each fits
    /// one eager message.
    const E: isize = -1;
    #[rstest]
    #[case(&[0], true)]
    #[case(&[8, 1024], true)]
    #[case(&[8, E], true)]
    #[case(&[8, E - 1], false)]
    #[case(&[], true)]
    fn small_blocks_go_in_steps(#[case] lens: &[isize], #[case] small: bool) {
        // E - 1 stands for one byte above the limit.
        let len = |n: isize| {
            if n < 0 {
                (eager_max() as isize - 1 - n) as usize
            } else {
                n as usize
            }
        };
        let mut mem = vec![0u8; eager_max() + 1];
        let bs: Vec<Buf> = lens.iter().map(|&n| Buf::new(mem.as_mut_ptr(), len(n), byte())).collect();
        assert_eq!(all_small(&bs), small);
    }

    /// A zero-length block gets an address that is not null (never used); others their own.
    #[rstest]
    #[case(0)]
    #[case(1)]
    #[case(64)]
    fn plain_bytes_of_a_byte_block(#[case] n: usize) {
        let mut mem = vec![0u8; 64];
        let (p, len) = plain(&Buf::new(if n == 0 { std::ptr::null_mut() } else { mem.as_mut_ptr() }, n, byte())).expect("contiguous");
        assert_eq!(len, n);
        assert!(!p.is_null());
        if n > 0 {
            assert_eq!(p, mem.as_mut_ptr());
        }
    }
}
