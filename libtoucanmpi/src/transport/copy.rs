//! Byte copies of the message paths. Most messages of a latency-bound exchange are a few
//! bytes: copying those inline costs a few instructions, where a call to `memcpy` (through
//! the PLT, then its size dispatch) costs about twenty.

/// Copies `n` bytes from `src` to `dst`.
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`: `src..src+n` readable, `dst..dst+n` writable, the
/// two ranges disjoint.
#[inline(always)]
pub unsafe fn bytes(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY (all branches): the reads and writes stay within the first `n` bytes of each
    // range (the two overlapping words of a branch both lie inside it).
    unsafe {
        if (8..=16).contains(&n) {
            let a = std::ptr::read_unaligned(src as *const u64);
            let b = std::ptr::read_unaligned(src.add(n - 8) as *const u64);
            std::ptr::write_unaligned(dst as *mut u64, a);
            std::ptr::write_unaligned(dst.add(n - 8) as *mut u64, b);
        } else if (4..8).contains(&n) {
            let a = std::ptr::read_unaligned(src as *const u32);
            let b = std::ptr::read_unaligned(src.add(n - 4) as *const u32);
            std::ptr::write_unaligned(dst as *mut u32, a);
            std::ptr::write_unaligned(dst.add(n - 4) as *mut u32, b);
        } else if n < 4 {
            for i in 0..n {
                *dst.add(i) = *src.add(i);
            }
        } else {
            std::ptr::copy_nonoverlapping(src, dst, n);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_small_length() {
        for n in 0..40usize {
            let src: Vec<u8> = (0..n as u8).map(|b| b.wrapping_mul(7).wrapping_add(1)).collect();
            let mut dst = vec![0u8; n + 2];
            // SAFETY: src holds n bytes, dst n + 2.
            unsafe { super::bytes(src.as_ptr(), dst.as_mut_ptr().add(1), n) };
            assert_eq!(&dst[1..=n], &src[..]);
            assert_eq!((dst[0], dst[n + 1]), (0, 0));
        }
    }
}
