//! Communication buffers inside the program's thread-local variables.
//!
//! The program's `__thread`/`thread_local` variables sit at one address for every subrank of
//! a process, and hold the running subrank's values (the scheduler swaps them in at each
//! switch, see `sched::swap`). A sibling or the transport that touched such a buffer while its
//! subrank is switched out would reach another subrank's values. So a send from there is
//! copied at once (as a non-contiguous one is packed), and a receive goes into a bounce buffer
//! of its own, copied into the variable when the owner takes the completed request (`Wait`,
//! `Test`, `Request_get_status`), which runs with its values in place.

use crate::core::datatype::DtRef;
use crate::core::request::RecvTarget;
use crate::sched::swap;

/// Byte range `[lo, hi)` that `count` elements of `dt` at `buf` cover (`None` when empty).
pub fn span(buf: *const u8, count: usize, dt: &DtRef) -> Option<(usize, usize)> {
    if count == 0 || dt.size == 0 {
        return None;
    }
    let first = (buf as isize).wrapping_add(dt.true_lb);
    let last = first.wrapping_add((count as isize - 1).wrapping_mul(dt.extent));
    let lo = first.min(last) as usize;
    let hi = (first.max(last) as usize).wrapping_add(dt.true_extent.max(0) as usize);
    Some((lo, hi))
}

/// The span of a buffer that overlaps a swapped thread-local block (one per worker thread),
/// if it does.
#[inline]
pub fn in_swapped(buf: *const u8, count: usize, dt: &DtRef) -> Option<(usize, usize)> {
    if !swap::active() {
        return None;
    }
    span(buf, count, dt).filter(|&(lo, hi)| swap::in_blocks(lo, hi))
}

/// A receive's stand-in buffer and where its bytes go on completion.
pub struct Bounce {
    data: Vec<u8>,
    to: usize,
}

impl Bounce {
    /// Copies the received bytes into the program's variable.
    ///
    /// # Safety
    /// The receive is complete and the owner's thread-local values are in place (the owner, or
    /// a helper task working for it, is running).
    pub unsafe fn settle(self) {
        // SAFETY: `to` is the span of the receive buffer, which the owner's rules keep valid
        // and its own while the request is active; the bounce holds exactly that many bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.data.as_ptr(), self.to as *mut u8, self.data.len()) };
    }
}

/// The target a receive should use: `t` itself, or a bounce buffer standing in for it when it
/// lies in the program's thread-local block.
///
/// # Safety
/// `t` describes a receive buffer of the running subrank (its values in place).
pub unsafe fn receive_target(t: RecvTarget) -> (RecvTarget, Option<Bounce>) {
    let Some((lo, hi)) = in_swapped(t.buf, t.count, &t.dt) else {
        return (t, None);
    };
    let mut data = vec![0u8; hi - lo];
    // SAFETY: the span is the user's buffer, readable now (MPI's rules, our precondition);
    // bytes the message does not cover are kept as they are.
    unsafe { std::ptr::copy_nonoverlapping(lo as *const u8, data.as_mut_ptr(), data.len()) };
    // The element at `t.buf` lies at the same offset from the bounce's start as in the span.
    let buf = (data.as_mut_ptr() as usize).wrapping_add((t.buf as usize).wrapping_sub(lo)) as *mut u8;
    (RecvTarget { buf, ..t }, Some(Bounce { data, to: lo }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::datatype;
    use rstest::rstest;

    fn int() -> DtRef {
        datatype::lookup(crate::consts::MPI_INT).expect("MPI_INT")
    }

    #[rstest]
    #[case(0x1000, 0, None)]
    #[case(0x1000, 1, Some((0x1000, 0x1004)))]
    #[case(0x1000, 3, Some((0x1000, 0x100c)))]
    fn spans(#[case] buf: usize, #[case] count: usize, #[case] want: Option<(usize, usize)>) {
        assert_eq!(span(buf as *const u8, count, &int()), want);
    }

    #[test]
    fn nothing_swapped_nothing_bounced() {
        let mut x = [0i32; 2];
        let t = RecvTarget {
            buf: x.as_mut_ptr() as *mut u8,
            count: 2,
            dt: int().into(),
        };
        assert!(in_swapped(t.buf, 2, &t.dt).is_none());
        // SAFETY: `x` is ours and readable.
        let (t2, b) = unsafe { receive_target(t) };
        assert!(b.is_none());
        assert_eq!(t2.buf, x.as_mut_ptr() as *mut u8);
    }
}
