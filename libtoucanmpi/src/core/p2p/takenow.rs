//! Session 26: a receive that completes at once or is not made (`State::take_now`), for the
//! nonblocking collectives between two processes (`abi::nbcpair`): when the peer's message of
//! a call is already here as the call starts (IMB's loops: the later of the two ranks finds the
//! earlier one's message), it is copied into the program's buffer there and then, and the call
//! returns the built-in complete request: no slab entry, no posted receive, no matching at the
//! wait (callgrind, an 8 B MPI_Iallgather with the message here: start + wait 1922 -> 1380
//! instructions; the blocking MPI_Allgather takes 969).

use super::matching::{find_posted, Body, Envelope, Pattern, SyncAck};
use crate::core::request::Status;
use crate::core::state::State;
use crate::transport::wire;

impl State {
    /// The first message for local subrank `sub` matching `pat`, when it is a plain eager one
    /// (no synchronous send) of exactly `len` bytes, queued already or at the head of the
    /// transport's ring: copied to `buf`, its status returned. None: nothing was taken; a
    /// message taken from the ring that is not it went the general way (`on_arrived`), as a
    /// progress step would have sent it. Taken only when `sub` has no receive posted that the
    /// message could match first (MPI's order among receives).
    ///
    /// # Safety
    /// `buf` is writable for `len` bytes (the running subrank's own, outside the swapped
    /// thread-locals: the caller checks).
    pub unsafe fn take_now(&mut self, sub: usize, pat: &Pattern, buf: *mut u8, len: usize) -> Option<Status> {
        let l = self.locals.get_mut(sub)?;
        if l.direct.is_some() {
            return None;
        }
        if let Some(i) = l.unexpected.find(pat) {
            let u = &l.unexpected[i];
            let (Body::Eager(_), SyncAck::None, true) = (&u.body, &u.sync, u.len == len) else {
                return None;
            };
            let u = l.unexpected.take_at(i)?;
            let Body::Eager(p) = &u.body else { return None };
            // SAFETY: the queued copy holds `len` bytes (checked); the caller's contract.
            unsafe { copy(p.as_slice().as_ptr(), buf, len) };
            return Some(status(&u.env, len));
        }
        // With real requests pending a progress step tests them with the ring (`progress_pending`):
        // that is left to the wait.
        if self.tp.has_pending() {
            return None;
        }
        let a = match self.tp.poll_ring_raw() {
            Ok(Some(a)) => a,
            Ok(None) => return None,
            Err(e) => crate::core::state::progress_failed(e),
        };
        let hdr = self.tp.header(&a);
        let env = Envelope {
            ctx: hdr.ctx,
            src: hdr.src_rank,
            tag: hdr.tag,
        };
        let plain = hdr.kind == wire::KIND_EAGER && hdr.flags & wire::FLAG_SYNC == 0 && hdr.len as usize == len;
        let first = a.dst_sub == sub && pat.matches(&env) && find_posted(self.locals[sub].posted.iter(), &env).is_none();
        let payload = if plain && first { self.tp.eager_payload(&a, &hdr) } else { None };
        let Some(payload) = payload else {
            self.on_arrived(a);
            return None;
        };
        // SAFETY: the ring slot stays untouched until the next poll of the transport; it
        // holds `len` bytes (`eager_payload` checked the slot); the caller's contract.
        unsafe { copy(payload.as_slice().as_ptr(), buf, len) };
        Some(status(&env, len))
    }
}

/// # Safety
/// `len` bytes readable at `from`, writable at `to`.
unsafe fn copy(from: *const u8, to: *mut u8, len: usize) {
    if len > 0 {
        // SAFETY: the caller's contract.
        unsafe { crate::transport::copy::bytes(from, to, len) };
    }
}

fn status(env: &Envelope, len: usize) -> Status {
    Status {
        source: env.src,
        tag: env.tag,
        bytes: len as u64,
        ..Status::default()
    }
}
