//! Two-level collective I/O (two-phase, as ROMIO does it, with subranks in mind).
//!
//! The file range that a collective access touches is cut into one contiguous *file domain*
//! per aggregator, and each domain into rounds of at most `cb_buffer_size` bytes. The
//! aggregators are one rank per process (the lowest rank of the file's group on it; at most
//! `cb_nodes` of them), so the V subranks of a process hand their pieces to their aggregator
//! through memory (our intra-process all-to-all is a copy), and pieces for another process's
//! domain travel once, between processes. Each aggregator then reads or writes its domain in
//! large contiguous runs on the I/O thread. Domains are aligned to `striping_unit` when given.
//! Holes inside a domain are left alone (no read-modify-write, so no data sieving).

use super::access::{scatter, Dir, Plan};
use super::{allgather, allreduce, alltoallv, bcast, FileObj};
use crate::abi::consts as c;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::io::{ioq, posix};
use std::sync::Arc;

/// Where an ordered access of `p` starts (collective): the shared pointer claimed for the
/// whole group at rank 0, plus the data of the ranks before this one.
pub(super) fn ordered_start(p: &Plan, _ok: bool) -> MpiResult<u64> {
    let es = p.view.esize;
    Ok(claim(&p.f, p.len / es)? * es)
}

/// `ordered_start` for a rank taking part without data.
pub(super) fn ordered_start_none(f: &FileObj) -> MpiResult<()> {
    claim(f, 0).map(|_| ())
}

fn claim(f: &FileObj, mine: u64) -> MpiResult<u64> {
    let all = allgather(f.comm, f.size as usize, &[mine])?;
    let before: u64 = all[..f.rank as usize].iter().sum();
    let total: u64 = all.iter().sum();
    let mut msg = [0u8; 12];
    if f.rank == 0 {
        match f.shared.fetch_add(total) {
            Ok(b) => msg[..8].copy_from_slice(&b.to_le_bytes()),
            Err(e) => msg[8..].copy_from_slice(&e.class.to_le_bytes()),
        }
    }
    bcast(f.comm, &mut msg, 0)?;
    let class = i32::from_le_bytes(msg[8..].try_into().expect("4 bytes"));
    if class != 0 {
        return err(class, "the shared file pointer could not be claimed at rank 0 of the file's group");
    }
    Ok(u64::from_le_bytes(msg[..8].try_into().expect("8 bytes")) + before)
}

fn put(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn get(v: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(v[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
}

/// A piece of this rank's data in some aggregator's window: (file offset, bytes, stream
/// position).
type Piece = (u64, u64, u64);

/// The parts of `segs` (file extents in order, `spos` their stream positions) inside `[a, b)`.
fn pieces_in(segs: &[(u64, u64)], spos: &[u64], a: u64, b: u64) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut i = segs.partition_point(|s| s.0 + s.1 <= a);
    while i < segs.len() && segs[i].0 < b {
        let (o, l) = segs[i];
        let lo = o.max(a);
        let hi = (o + l).min(b);
        if hi > lo {
            out.push((lo, hi - lo, spos[i] + (lo - o)));
        }
        i += 1;
    }
    out
}

/// Runs a collective access of the file's group: `p` is this rank's (None: it takes part
/// without data), starting at stream position `start`. Returns the stream bytes moved.
pub(super) fn run(f: &FileObj, p: Option<&Plan>, start: u64) -> MpiResult<u64> {
    let segs = match p {
        Some(p) => p.view.segments(start, p.len)?,
        None => Vec::new(),
    };
    let mut spos = Vec::with_capacity(segs.len());
    let mut t = 0;
    for s in &segs {
        spos.push(t);
        t += s.1;
    }
    let (lo, hi) = match (segs.first(), segs.last()) {
        (Some(a), Some(b)) => (a.0, b.0 + b.1),
        _ => (u64::MAX, 0),
    };
    let dir = match p.map(|p| p.dir) {
        None => 0,
        Some(Dir::Read) => 1,
        Some(Dir::Write) => 2,
    };
    let size = f.size as usize;
    let all = allgather(f.comm, size, &[lo, hi, dir])?;
    let write = (0..size).any(|r| all[3 * r + 2] == 2);
    let glo = (0..size).map(|r| all[3 * r]).min().unwrap_or(u64::MAX);
    let ghi = (0..size).map(|r| all[3 * r + 1]).max().unwrap_or(0);
    if glo >= ghi {
        return Ok(0);
    }
    let (hints, atomic) = {
        let s = f.st.lock();
        (s.hints.clone(), s.atomic)
    };

    // This rank's stream: the program's buffer itself when contiguous, else packed.
    let mut packed: Option<Vec<u8>> = None;
    let mut stream: *mut u8 = std::ptr::null_mut();
    if let Some(p) = p {
        // SAFETY: `p` was checked by `plan`: its buffer holds `count` elements of its type.
        packed = unsafe { p.gather() };
        if packed.is_none() && p.dir == Dir::Read && !(p.view.rep != crate::core::io::view::Rep::External32 && p.dt.is_contiguous()) {
            packed = Some(vec![0u8; p.len as usize]);
        }
        stream = match packed.as_mut() {
            Some(v) => v.as_mut_ptr(),
            None => p.buf as *mut u8,
        };
    }

    if !hints.cb(write) {
        // Collective buffering disabled by hint: every rank accesses its own pieces.
        let mut n = 0;
        if let Some(p) = p {
            let fd = p.f.fd.clone();
            let len = p.len as usize;
            let (segs, addr) = (segs.clone(), stream as usize);
            n = ioq::run(move || -> MpiResult<u64> {
                // SAFETY: the calling rank waits for this job; `addr` holds `len` stream bytes.
                let buf = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) };
                if write {
                    posix::write_segments(&fd, &segs, buf).map_err(|e| posix::error("write", &e))?;
                    Ok(len as u64)
                } else {
                    Ok(posix::read_segments(&fd, &segs, buf).map_err(|e| posix::error("read", &e))? as u64)
                }
            })??;
        }
        return finish(p, packed, n);
    }

    // Aggregators: the first rank of each process, in rank order.
    let mut aggs: Vec<usize> = Vec::new();
    let mut seen: Vec<u64> = Vec::new();
    for r in 0..size {
        if !seen.contains(&f.procs[r]) {
            seen.push(f.procs[r]);
            aggs.push(r);
        }
    }
    if hints.cb_nodes() > 0 {
        aggs.truncate(hints.cb_nodes() as usize);
    }
    let na = aggs.len() as u64;
    let mut dom = (ghi - glo).div_ceil(na);
    let su = hints.striping_unit();
    if su > 0 {
        dom = dom.div_ceil(su) * su;
    }
    let cb = hints.cb_buffer_size();
    let rounds = dom.div_ceil(cb);
    let me_agg = aggs.iter().position(|&r| r == f.rank as usize);
    let window = |j: usize, t: u64| -> (u64, u64) {
        let d0 = glo + j as u64 * dom;
        let d1 = (d0 + dom).min(ghi);
        let a = (d0 + t * cb).min(d1);
        (a, (a + cb).min(d1))
    };

    let mut fail: Option<MpiError> = None;
    let mut short = u64::MAX;
    // The aggregator's window of the current round (at most cb_buffer_size bytes).
    let mut win: Vec<u8> = Vec::new();
    // The messages of each round, their buffers reused (see `alltoallv`).
    let (mut send, mut replies): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (vec![Vec::new(); size], vec![Vec::new(); size]);
    let (mut recv, mut back): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    for t in 0..rounds {
        // Phase 1: pieces (with data, for a write) or requests to each aggregator.
        for v in send.iter_mut() {
            v.clear();
        }
        let mut mine: Vec<Vec<Piece>> = vec![Vec::new(); aggs.len()];
        for (j, &r) in aggs.iter().enumerate() {
            let (a, b) = window(j, t);
            if a >= b {
                continue;
            }
            let ps = pieces_in(&segs, &spos, a, b);
            if ps.is_empty() {
                continue;
            }
            let m = &mut send[r];
            put(m, ps.len() as u64);
            for &(o, l, _) in &ps {
                put(m, o);
                put(m, l);
            }
            if write {
                for &(_, l, s) in &ps {
                    // SAFETY: stream holds the rank's whole stream; (s, l) lies inside it.
                    m.extend_from_slice(unsafe { std::slice::from_raw_parts(stream.add(s as usize), l as usize) });
                }
            }
            mine[j] = ps;
        }
        alltoallv(f.comm, &send, &mut recv)?;

        // Phase 2: the aggregator's file access.
        for v in replies.iter_mut() {
            v.clear();
        }
        if let Some(j) = me_agg {
            let (a, b) = window(j, t);
            // (offset, bytes, source rank, where its data start in the source's message)
            let mut got: Vec<(u64, u64, usize, usize)> = Vec::new();
            for (src, m) in recv.iter().enumerate() {
                if m.is_empty() {
                    continue;
                }
                let n = get(m, 0) as usize;
                let mut d = 8 * (1 + 2 * n);
                for k in 0..n {
                    let (o, l) = (get(m, 1 + 2 * k), get(m, 2 + 2 * k));
                    // Every rank cuts its pieces at the same windows; one outside this window
                    // (or data past its message) means the ranks disagree on the access.
                    if o < a || o + l > b || (write && d + l as usize > m.len()) {
                        fail.get_or_insert(MpiError::new(c::MPI_ERR_INTERN, "a piece outside the aggregator's window"));
                        continue;
                    }
                    got.push((o, l, src, d));
                    if write {
                        d += l as usize;
                    }
                }
            }
            // The window's bytes live in `win` (kept between rounds: no fresh pages to fault
            // in and clear each round); the runs it covers go to or come from the file in
            // one system call each.
            win.resize((b - a) as usize, 0);
            let mut ext: Vec<(u64, u64)> = got.iter().map(|g| (g.0, g.0 + g.1)).collect();
            ext.sort_unstable();
            let runs = merge(ext);
            if write {
                // One copy: each piece straight from its message to its place in the window.
                for &(o, l, src, d) in &got {
                    let at = (o - a) as usize;
                    win[at..at + l as usize].copy_from_slice(&recv[src][d..d + l as usize]);
                }
                let fd = f.fd.clone();
                let buf = std::mem::take(&mut win);
                let (r, buf) = ioq::run(move || {
                    let r = (|| -> MpiResult<()> {
                        let _l = if atomic && a < b {
                            Some(posix::lock(&fd, true, a, b - a).map_err(|e| posix::error("fcntl lock", &e))?)
                        } else {
                            None
                        };
                        for &(o, e) in &runs {
                            posix::pwrite_all(&fd, &buf[(o - a) as usize..(e - a) as usize], o).map_err(|e| posix::error("write", &e))?;
                        }
                        Ok(())
                    })();
                    (r, buf)
                })?;
                win = buf;
                if let Err(e) = r {
                    fail.get_or_insert(e);
                }
            } else {
                // Read the union of the requested extents into the window, then answer each
                // request from it.
                let fd = f.fd.clone();
                let mut buf = std::mem::take(&mut win);
                let (r, buf) = ioq::run(move || {
                    let r = (|| -> MpiResult<Vec<(u64, u64)>> {
                        let _l = if atomic && a < b {
                            Some(posix::lock(&fd, false, a, b - a).map_err(|e| posix::error("fcntl lock", &e))?)
                        } else {
                            None
                        };
                        let mut have = Vec::with_capacity(runs.len());
                        for (o, e) in runs {
                            let n = posix::pread_upto(&fd, &mut buf[(o - a) as usize..(e - a) as usize], o)
                                .map_err(|e| posix::error("read", &e))?;
                            have.push((o, o + n as u64));
                        }
                        Ok(have)
                    })();
                    (r, buf)
                })?;
                win = buf;
                let have = match r {
                    Ok(d) => d,
                    Err(e) => {
                        fail.get_or_insert(e);
                        Vec::new()
                    }
                };
                for (src, m) in recv.iter().enumerate() {
                    if m.is_empty() {
                        continue;
                    }
                    let n = get(m, 0) as usize;
                    // How much of each request the file had, then the bytes, in one message.
                    let avail: Vec<u64> = (0..n)
                        .map(|k| {
                            let (o, l) = (get(m, 1 + 2 * k), get(m, 2 + 2 * k));
                            let i = have.partition_point(|r| r.0 <= o);
                            if i == 0 {
                                0
                            } else {
                                have[i - 1].1.saturating_sub(o).min(l)
                            }
                        })
                        .collect();
                    let reply = &mut replies[src];
                    reply.reserve(8 * n + avail.iter().sum::<u64>() as usize);
                    for &k in &avail {
                        put(reply, k);
                    }
                    for (k, &v) in avail.iter().enumerate() {
                        let at = (get(m, 1 + 2 * k) - a) as usize;
                        reply.extend_from_slice(&win[at..at + v as usize]);
                    }
                }
            }
        }
        if write {
            continue;
        }
        // Phase 3 (reads): the data come back to their ranks.
        alltoallv(f.comm, &replies, &mut back)?;
        for (j, &r) in aggs.iter().enumerate() {
            let ps = &mine[j];
            if ps.is_empty() {
                continue;
            }
            let m = &back[r];
            if m.len() < 8 * ps.len() {
                fail.get_or_insert(MpiError::new(c::MPI_ERR_IO, "an aggregator sent no answer"));
                continue;
            }
            let mut d = 8 * ps.len();
            for (k, &(_, l, s)) in ps.iter().enumerate() {
                let avail = get(m, k);
                // SAFETY: (s, avail) lies inside this rank's stream.
                unsafe { std::ptr::copy_nonoverlapping(m[d..].as_ptr(), stream.add(s as usize), avail as usize) };
                d += avail as usize;
                if avail < l {
                    short = short.min(s + avail);
                }
            }
        }
    }
    let mut class = [fail.as_ref().map_or(0, |e| e.class as i64)];
    allreduce(f.comm, &mut class, c::MPI_MAX)?;
    if let Some(e) = fail {
        return Err(e);
    }
    if class[0] != 0 {
        return err(class[0] as i32, "the collective access failed at an aggregator");
    }
    let n = match p {
        Some(p) if !write => short.min(p.len),
        Some(p) => p.len,
        None => 0,
    };
    finish(p, packed, n)
}

/// Sorted extents `[o, e)` merged where they touch or overlap.
fn merge(ext: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for (o, e) in ext {
        match runs.last_mut() {
            Some(r) if o <= r.1 => r.1 = r.1.max(e),
            _ => runs.push((o, e)),
        }
    }
    runs
}

/// Unpacks what a read brought into a packed stream; gives the bytes moved.
fn finish(p: Option<&Plan>, packed: Option<Vec<u8>>, n: u64) -> MpiResult<u64> {
    if let (Some(p), Some(v)) = (p, packed) {
        if p.dir == Dir::Read {
            // SAFETY: the program's buffer holds `count` elements of its type.
            unsafe { scatter(&p.dt, p.view.rep, &v[..n as usize], p.buf, p.count) };
        }
    }
    Ok(n)
}

#[allow(dead_code)]
fn _arc(_: Arc<()>) {}

#[cfg(test)]
mod tests {
    use super::pieces_in;

    #[test]
    fn pieces_cut_at_windows() {
        let segs = [(0, 10), (20, 10), (40, 5)];
        let spos = [0, 10, 20];
        assert_eq!(pieces_in(&segs, &spos, 5, 25), vec![(5, 5, 5), (20, 5, 10)]);
        assert_eq!(pieces_in(&segs, &spos, 30, 40), vec![]);
        assert_eq!(pieces_in(&segs, &spos, 0, 100), vec![(0, 10, 0), (20, 10, 10), (40, 5, 20)]);
    }
}
