//! Blocking sends and receives between subranks of one process on the read side of the
//! state (`state::shared`, SMP mode): each step locks one subrank's `Local` only, so workers
//! exchanging messages among their own subranks never wait for each other. Only what needs
//! no request is done here (a parked direct receive, a small queued copy); anything else
//! answers "general", and the caller takes the general path from the start.

use super::matching::{find_posted, find_unexpected, Body, Direct, Envelope, Pattern, SyncAck, Unexp};
use super::p2p::received;
use super::request::Status;
use super::state::{Local, Shared};
use crate::sched;
use crate::transport::Payload;

/// What a reader's step of a blocking receive found.
pub enum Take {
    /// The message is in the buffer: its status.
    Done(Status),
    /// A direct receive is registered (or still waits): park until woken, then `recv_check`.
    Waiting,
    /// The general path must run.
    General,
}

/// Copies a message into `l`'s parked direct receive when it matches and has not been
/// served. Returns whether it did (the caller wakes the receiver).
pub fn direct_into(l: &mut Local, env: &Envelope, data: &[u8]) -> bool {
    let Some(d) = l.direct.as_mut() else {
        return false;
    };
    if d.done.is_some() || !d.pat.matches(env) {
        return false;
    }
    let n = data.len().min(d.cap);
    if n > 0 {
        // SAFETY: the receiver registered `buf` with room for `cap` bytes and stays parked in
        // its receive until it has taken `done`; `data` holds `n` bytes.
        unsafe { crate::transport::copy::bytes(data.as_ptr(), d.buf, n) };
    }
    d.done = Some(received(env, data.len(), d.cap));
    true
}

/// Queues an unmatched message in `l`. A parked direct receive it matches gives up its
/// registration: a later message must not be copied past this earlier one (the receive then
/// takes this one through its queue). The caller wakes the receiver.
pub fn queue_into(l: &mut Local, u: Unexp) {
    if l.direct.is_some_and(|d| d.done.is_none() && d.pat.matches(&u.env)) {
        l.direct = None;
    }
    l.unexpected.push_back(u);
}

/// A standard-mode send of `data` to subrank `dsub` of this process, needing no request:
/// into its parked direct receive, or queued as a copy when at most `eager_max` bytes. False
/// (nothing done) when a posted receive matches (it has a request) or the message is larger.
pub fn send(sh: &Shared<'_>, dsub: usize, env: Envelope, data: &[u8], eager_max: usize) -> bool {
    let Some(mut l) = sh.local(dsub) else {
        return false;
    };
    if find_posted(l.posted.iter(), &env).is_some() {
        return false;
    }
    if !direct_into(&mut l, &env, data) {
        if data.len() > eager_max {
            return false;
        }
        let u = Unexp {
            env,
            len: data.len(),
            body: Body::Eager(Payload::from_vec(data.to_vec())),
            sync: SyncAck::None,
        };
        queue_into(&mut l, u);
    }
    drop(l);
    if dsub != sched::current() {
        sched::wake(dsub);
    }
    true
}

/// A blocking receive's first look: a queued copy matching `pat` goes into `buf`; with
/// nothing queued that matches, a direct receive into `buf` is registered. General when the
/// rank has receives posted, a direct receive registered, generalized requests to settle, or
/// when the matching message needs more than a copy (a sibling's rendezvous, a synchronous
/// or inter-process message).
///
/// # Safety
/// `buf..buf+cap` must be writable until the receive ends, and `l` is the running subrank's.
pub unsafe fn recv_start(l: &mut Local, pat: &Pattern, buf: *mut u8, cap: usize) -> Take {
    if !l.posted.is_empty() || l.direct.is_some() || !l.greq_ready.is_empty() {
        return Take::General;
    }
    if let Some(i) = find_unexpected(l.unexpected.iter(), pat) {
        let u = &l.unexpected[i];
        if !matches!(u.body, Body::Eager(_)) || !matches!(u.sync, SyncAck::None) {
            return Take::General;
        }
        let u = l.unexpected.remove(i).expect("index from find_unexpected");
        let Body::Eager(p) = &u.body else { unreachable!("checked above") };
        let data = p.as_slice();
        let n = data.len().min(cap);
        if n > 0 {
            // SAFETY: the queued copy holds `len >= n` bytes; `buf` has room for `cap >= n`.
            unsafe { crate::transport::copy::bytes(data.as_ptr(), buf, n) };
        }
        return Take::Done(received(&u.env, u.len, cap));
    }
    l.waiting = Some(*pat);
    l.direct = Some(Direct {
        pat: *pat,
        buf,
        cap,
        done: None,
    });
    Take::Waiting
}

/// After a wake-up: whether the registered direct receive got its message. General when the
/// registration was given up (an earlier matching message was queued instead).
pub fn recv_check(l: &mut Local) -> Take {
    match l.direct {
        Some(Direct { done: Some(st), .. }) => {
            l.direct = None;
            l.waiting = None;
            Take::Done(st)
        }
        Some(_) => Take::Waiting,
        None => Take::General,
    }
}
