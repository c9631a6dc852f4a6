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
//!
//! A read whose pieces are large (`Hints::read_direct`) skips the exchange: each process reads
//! its own ranks' pieces (`read_local`), so no byte crosses between processes.

use super::access::{scatter, Dir, Plan};
use super::{allgather, allreduce, alltoallv, bcast, datarep, FileObj};
use crate::abi::consts as c;
use crate::core::error::{err, MpiError, MpiResult};
use crate::core::io::view::Rep;
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
    let all = allgather(f.comm, size, &[lo, hi, dir, segs.len() as u64, t])?;
    const K: usize = 5;
    let write = (0..size).any(|r| all[K * r + 2] == 2);
    let glo = (0..size).map(|r| all[K * r]).min().unwrap_or(u64::MAX);
    let ghi = (0..size).map(|r| all[K * r + 1]).max().unwrap_or(0);
    if glo >= ghi {
        return Ok(0);
    }
    let (hints, atomic) = {
        let s = f.st.lock();
        (s.hints.clone(), s.atomic)
    };
    // The smallest average piece of a rank with data (the same at every rank).
    let piece = (0..size)
        .filter(|&r| all[K * r + 3] > 0)
        .map(|r| all[K * r + 4] / all[K * r + 3])
        .min()
        .unwrap_or(0);

    // This rank's stream: the program's buffer itself when contiguous, else packed.
    let mut packed: Option<Vec<u8>> = None;
    let mut stream: *mut u8 = std::ptr::null_mut();
    if let Some(p) = p {
        // SAFETY: `p` was checked by `plan`: its buffer holds `count` elements of its type.
        packed = match unsafe { p.gather() } {
            Ok(v) => v,
            Err(e) => {
                // A write conversion failed here: take part without data, so nobody hangs.
                run(f, None, 0)?;
                return Err(e);
            }
        };
        if packed.is_none() && p.dir == Dir::Read && !p.direct() {
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
            let sieve = hints.ds_read_window();
            let wsieve = hints.ds_write_window_for(f.amode);
            n = ioq::run(move || -> MpiResult<u64> {
                // SAFETY: the calling rank waits for this job; `addr` holds `len` stream bytes.
                let buf = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, len) };
                // Atomic mode: the access's whole span under one lock.
                let _l = match (segs.first(), segs.last()) {
                    (Some(a), Some(b)) if atomic => {
                        Some(posix::lock(&fd, write, a.0, b.0 + b.1 - a.0).map_err(|e| posix::error("fcntl lock", &e))?)
                    }
                    _ => None,
                };
                if write {
                    if wsieve > 0 {
                        posix::write_segments_sieved(&fd, &segs, buf, wsieve, !atomic)
                    } else {
                        posix::write_segments(&fd, &segs, buf)
                    }
                    .map_err(|e| posix::error("write", &e))?;
                    Ok(len as u64)
                } else {
                    let r = if sieve > 0 {
                        posix::read_segments_sieved(&fd, &segs, buf, sieve)
                    } else {
                        posix::read_segments(&fd, &segs, buf)
                    };
                    Ok(r.map_err(|e| posix::error("read", &e))? as u64)
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
    let every = hints.cb_nodes() == 0 || hints.cb_nodes() >= aggs.len() as u64;
    if !write && !atomic && every && hints.read_direct(piece) {
        // Large pieces: each process reads its own ranks' pieces, no exchange (`read_local`).
        let leader = aggs[seen.iter().position(|&q| q == f.procs[f.rank as usize]).expect("own process")];
        let n = read_local(f, leader, &segs, &spos, stream)?;
        let n = match p {
            Some(p) => n.min(p.len),
            None => 0,
        };
        return finish(p, packed, n);
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
    // Ranks in the aggregator's address space (its siblings, and cousins in SMP mode) do not
    // copy their pieces into messages: they send only where the pieces are (offset, length,
    // stream position, and their stream's address once), and the aggregator writes the file
    // straight from their buffers (or reads it straight into them). They are parked in this
    // collective until its final allreduce, which the aggregator joins only after its last
    // round, so their streams stay put meanwhile.
    let myproc = f.procs[f.rank as usize];
    let near = |r: usize| f.procs[r] == myproc;
    // The aggregator's window of the current round (at most cb_buffer_size bytes): only used
    // when pieces overlap (a write's later rank wins, as before) or a read asks for the same
    // bytes twice.
    let mut win: Vec<u8> = Vec::new();
    // Writes are pipelined: the file write of round t runs on the I/O thread while round
    // t + 1's pieces are exchanged. Its messages and window are the other set of two, kept
    // untouched until it is waited for (before round t + 1's write starts, and at the end; a
    // `Started` dropped on an error path still waits, so no buffer goes away under it).
    let mut win2: Vec<u8> = Vec::new();
    let mut recv2: Vec<Vec<u8>> = Vec::new();
    // The messages of each round, their buffers reused (see `alltoallv`).
    let (mut send, mut replies): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (vec![Vec::new(); size], vec![Vec::new(); size]);
    let (mut recv, mut back): (Vec<Vec<u8>>, Vec<Vec<u8>>) = (Vec::new(), Vec::new());
    // Declared after every buffer a write job may use, so an early return drops (and so
    // waits for) it before them.
    let mut inflight: Option<ioq::Started<MpiResult<()>>> = None;
    for t in 0..rounds {
        // Phase 1: pieces (with data, for a write to another process) or requests to each
        // aggregator: [count, stream address, (offset, bytes, stream position) * count, data].
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
            put(m, stream as u64);
            for &(o, l, s) in &ps {
                put(m, o);
                put(m, l);
                put(m, s);
            }
            if write && !near(r) {
                for &(_, l, s) in &ps {
                    // SAFETY: stream holds the rank's whole stream; (s, l) lies inside it.
                    m.extend_from_slice(unsafe { std::slice::from_raw_parts(stream.add(s as usize), l as usize) });
                }
            }
            mine[j] = ps;
        }
        if write {
            // This round's messages go to the set the write before last used (done).
            std::mem::swap(&mut recv, &mut recv2);
            std::mem::swap(&mut win, &mut win2);
        }
        alltoallv(f.comm, &send, &mut recv)?;

        // Phase 2: the aggregator's file access.
        if let Some(j) = me_agg {
            let (a, b) = window(j, t);
            // (offset, bytes, source rank, address of the piece's bytes: in the source's
            // message, or in its stream when it shares this address space)
            let mut got: Vec<(u64, u64, usize, usize)> = Vec::new();
            for (src, m) in recv.iter().enumerate() {
                if m.len() < 16 {
                    continue;
                }
                let n = get(m, 0) as usize;
                let addr = get(m, 1) as usize;
                let mut d = 8 * (2 + 3 * n);
                if m.len() < d {
                    fail.get_or_insert(MpiError::new(c::MPI_ERR_INTERN, "a short request at the aggregator"));
                    continue;
                }
                for k in 0..n {
                    let (o, l, s) = (get(m, 2 + 3 * k), get(m, 3 + 3 * k), get(m, 4 + 3 * k));
                    // Every rank cuts its pieces at the same windows; one outside this window
                    // (or data past its message) means the ranks disagree on the access.
                    let remote_data = write && !near(src);
                    if o < a || o + l > b || (remote_data && d + l as usize > m.len()) {
                        fail.get_or_insert(MpiError::new(c::MPI_ERR_INTERN, "a piece outside the aggregator's window"));
                        continue;
                    }
                    if near(src) {
                        got.push((o, l, src, addr + s as usize));
                    } else {
                        got.push((o, l, src, m.as_ptr() as usize + d));
                        if write {
                            d += l as usize;
                        }
                    }
                }
            }
            if write {
                let fd = f.fd.clone();
                if let Some(job) = inflight.take() {
                    if let Err(e) = job.wait()? {
                        fail.get_or_insert(e);
                    }
                }
                // Locked also when sieving writers may rewrite the holes of this window.
                let sieving = hints.ds_write_window_for(f.amode) > 0;
                let job = write_window(&fd, &mut got, &mut win, a, b, atomic, sieving);
                if hints.cb_pipeline() {
                    inflight = Some(job);
                } else if let Err(e) = job.wait()? {
                    fail.get_or_insert(e);
                }
            } else {
                // Replies: [bytes the file had for each request, then (to another process)
                // the bytes, each piece at its full length].
                for (src, reply) in replies.iter_mut().enumerate() {
                    let m = &recv[src];
                    let n = if m.len() < 16 { 0 } else { get(m, 0) as usize };
                    let data: u64 = if n == 0 || near(src) {
                        0
                    } else {
                        (0..n).map(|k| get(m, 3 + 3 * k)).sum()
                    };
                    let need = if n == 0 { 0 } else { 8 * n + data as usize };
                    // Shrinking first keeps the old bytes: only growth is cleared.
                    reply.truncate(need);
                    reply.resize(need, 0);
                }
                // Remote pieces are read straight into their reply, at their place.
                let mut at = vec![0usize; size];
                for g in got.iter_mut() {
                    if !near(g.2) {
                        let n = get(&recv[g.2], 0) as usize;
                        let d = 8 * n + at[g.2];
                        g.3 = replies[g.2].as_mut_ptr() as usize + d;
                        at[g.2] += g.1 as usize;
                    }
                }
                let fd = f.fd.clone();
                let have = match read_window(&fd, &got, &mut win, a, b, atomic)? {
                    Ok(h) => h,
                    Err(e) => {
                        fail.get_or_insert(e);
                        Vec::new()
                    }
                };
                for (src, m) in recv.iter().enumerate() {
                    if m.len() < 16 {
                        continue;
                    }
                    let n = get(m, 0) as usize;
                    for k in 0..n {
                        let (o, l) = (get(m, 2 + 3 * k), get(m, 3 + 3 * k));
                        let i = have.partition_point(|r| r.0 <= o);
                        let avail = if i == 0 { 0 } else { have[i - 1].1.saturating_sub(o).min(l) };
                        replies[src][8 * k..8 * k + 8].copy_from_slice(&avail.to_le_bytes());
                    }
                }
            }
        }
        if write {
            continue;
        }
        // Phase 3 (reads): the data come back to their ranks (from an aggregator in this
        // address space only the counts: it wrote the bytes in place).
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
                if !near(r) {
                    if d + avail as usize > m.len() {
                        fail.get_or_insert(MpiError::new(c::MPI_ERR_INTERN, "a short answer from an aggregator"));
                        break;
                    }
                    // SAFETY: (s, avail) lies inside this rank's stream; the reply holds it.
                    unsafe { std::ptr::copy_nonoverlapping(m[d..].as_ptr(), stream.add(s as usize), avail as usize) };
                    d += l as usize;
                }
                if avail < l {
                    short = short.min(s + avail);
                }
            }
        }
    }
    if let Some(job) = inflight.take() {
        if let Err(e) = job.wait()? {
            fail.get_or_insert(e);
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

/// A collective read whose pieces are large (`Hints::read_direct`): every rank tells its
/// process's leader (`leader`, the lowest rank of the file's group in this address space)
/// where its pieces are (offset, length, stream position, and its stream's address), and the
/// leader reads them all, sorted by offset, adjacent ones (of any sibling) with one `preadv`,
/// straight into the ranks' streams. Nothing crosses between processes but the counts of the
/// steps: each byte is copied once, by the kernel, against three times for a piece that two-
/// phase reads at another process's aggregator (into a reply, across, out of the reply).
/// Returns the stream bytes this rank got before the end of file (`u64::MAX`: all).
fn read_local(f: &FileObj, leader: usize, segs: &[(u64, u64)], spos: &[u64], stream: *mut u8) -> MpiResult<u64> {
    let size = f.size as usize;
    let mut send: Vec<Vec<u8>> = vec![Vec::new(); size];
    if !segs.is_empty() {
        let m = &mut send[leader];
        put(m, segs.len() as u64);
        put(m, stream as u64);
        for (&(o, l), &s) in segs.iter().zip(spos) {
            put(m, o);
            put(m, l);
            put(m, s);
        }
    }
    let mut recv: Vec<Vec<u8>> = Vec::new();
    alltoallv(f.comm, &send, &mut recv)?;
    let mut fail: Option<MpiError> = None;
    let mut replies: Vec<Vec<u8>> = vec![Vec::new(); size];
    if leader == f.rank as usize {
        // (offset, bytes, source rank, address in the source's stream)
        let mut got: Vec<(u64, u64, usize, usize)> = Vec::new();
        for (src, m) in recv.iter().enumerate() {
            if m.len() < 16 {
                continue;
            }
            let (n, addr) = (get(m, 0) as usize, get(m, 1) as usize);
            if m.len() < 8 * (2 + 3 * n) || f.procs[src] != f.procs[leader] {
                fail.get_or_insert(MpiError::new(c::MPI_ERR_INTERN, "a bad request at the process's reader"));
                continue;
            }
            got.extend((0..n).map(|k| (get(m, 2 + 3 * k), get(m, 3 + 3 * k), src, addr + get(m, 4 + 3 * k) as usize)));
        }
        got.sort_by_key(|g| g.0);
        // Pieces that overlap (two ranks reading the same bytes) start runs of their own.
        let runs = runs_of(&got);
        let fd = f.fd.clone();
        let eof = ioq::run(move || -> MpiResult<u64> {
            let mut eof = u64::MAX;
            for (o, spans) in &runs {
                let want: usize = spans.iter().map(|s| s.1).sum();
                // SAFETY: the spans lie in the streams of ranks of this address space that are
                // parked in this collective until its end; overlapping pieces are in separate
                // runs, read one after the other.
                let n = unsafe { posix::preadv_upto(&fd, spans, *o) }.map_err(|e| posix::error("read", &e))?;
                if n < want {
                    eof = eof.min(*o + n as u64);
                }
            }
            Ok(eof)
        })?;
        let eof = match eof {
            Ok(e) => e,
            Err(e) => {
                fail.get_or_insert(e);
                0
            }
        };
        // Each rank is told how many bytes of each of its pieces the file had.
        for (src, m) in recv.iter().enumerate() {
            if m.len() < 16 {
                continue;
            }
            let n = get(m, 0) as usize;
            for k in 0..n {
                let (o, l) = (get(m, 2 + 3 * k), get(m, 3 + 3 * k));
                put(&mut replies[src], eof.saturating_sub(o).min(l));
            }
        }
    }
    let mut back: Vec<Vec<u8>> = Vec::new();
    alltoallv(f.comm, &replies, &mut back)?;
    let mut short = u64::MAX;
    if !segs.is_empty() {
        let m = &back[leader];
        if m.len() < 8 * segs.len() {
            fail.get_or_insert(MpiError::new(c::MPI_ERR_IO, "the process's reader sent no answer"));
        } else {
            for (k, (&(_, l), &s)) in segs.iter().zip(spos).enumerate() {
                let avail = get(m, k);
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
        return err(class[0] as i32, "the collective read failed at a process's reader");
    }
    Ok(short)
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

/// Whether the extents of `got` (sorted by offset) overlap.
fn overlapping(got: &[(u64, u64, usize, usize)]) -> bool {
    got.windows(2).any(|w| w[1].0 < w[0].0 + w[0].1)
}

/// The pieces of `got` (sorted by offset, not overlapping) grouped into file runs: (file
/// offset, the pieces' memory spans in file order).
fn runs_of(got: &[(u64, u64, usize, usize)]) -> Vec<(u64, Vec<posix::Span>)> {
    let mut runs: Vec<(u64, u64, Vec<posix::Span>)> = Vec::new();
    for &(o, l, _, addr) in got {
        match runs.last_mut() {
            Some(r) if r.1 == o => {
                r.1 += l;
                r.2.push((addr, l as usize));
            }
            _ => runs.push((o, o + l, vec![(addr, l as usize)])),
        }
    }
    runs.into_iter().map(|(o, _, v)| (o, v)).collect()
}

/// The aggregator's write of one round's window `[a, b)`: each run of adjacent pieces with one
/// `pwritev` straight from where the pieces are (messages, or the buffers of the ranks in
/// this address space), started on the I/O thread (the caller keeps the pieces' memory and
/// `win` untouched until it has waited for it). Overlapping pieces are first copied into
/// `win` in rank order (the later rank's bytes win) and written from there. The window is
/// written under a write lock of `[a, b)` in atomic mode, and while sieving writers may be
/// about (`sieving`; there only where the file system has locks, as they do).
fn write_window(
    fd: &Arc<posix::Fd>,
    got: &mut [(u64, u64, usize, usize)],
    win: &mut Vec<u8>,
    a: u64,
    b: u64,
    atomic: bool,
    sieving: bool,
) -> ioq::Started<MpiResult<()>> {
    got.sort_by_key(|g| g.0);
    let runs = if overlapping(got) {
        // Rank order (stable: offsets within a rank), so the later rank's bytes win.
        got.sort_by_key(|g| g.2);
        win.resize((b - a) as usize, 0);
        for &(o, l, _, addr) in got.iter() {
            let at = (o - a) as usize;
            // SAFETY: `addr` holds the piece's `l` bytes (a message of this round, or a parked
            // rank's stream); the window has room for [o, o + l) inside [a, b).
            unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, win.as_mut_ptr().add(at), l as usize) };
        }
        let base = win.as_ptr() as usize;
        let mut ext: Vec<(u64, u64)> = got.iter().map(|g| (g.0, g.0 + g.1)).collect();
        ext.sort_unstable();
        merge(ext)
            .into_iter()
            .map(|(o, e)| (o, vec![(base + (o - a) as usize, (e - o) as usize)]))
            .collect()
    } else {
        runs_of(got)
    };
    let fd = fd.clone();
    ioq::start(move || -> MpiResult<()> {
        let _l = if atomic && a < b {
            Some(posix::lock(&fd, true, a, b - a).map_err(|e| posix::error("fcntl lock", &e))?)
        } else if sieving && a < b {
            posix::lock_if_supported(&fd, a, b - a).map_err(|e| posix::error("fcntl lock", &e))?
        } else {
            None
        };
        for (o, spans) in &runs {
            // SAFETY: the spans are in this round's messages, the window, or the streams of
            // ranks parked in this collective; the aggregator waits for this job.
            unsafe { posix::pwritev_all(&fd, spans, *o) }.map_err(|e| posix::error("write", &e))?;
        }
        Ok(())
    })
}

/// The aggregator's read of one round's window `[a, b)` into the pieces' destinations (their
/// reply messages, or the streams of the ranks in this address space): one `preadv` per run
/// of adjacent pieces, or, when requests overlap, the union read into `win` and copied out.
/// Returns the extents `[o, e)` the file had, in order.
fn read_window(
    fd: &Arc<posix::Fd>,
    got: &[(u64, u64, usize, usize)],
    win: &mut Vec<u8>,
    a: u64,
    b: u64,
    atomic: bool,
) -> MpiResult<MpiResult<Vec<(u64, u64)>>> {
    let mut got = got.to_vec();
    got.sort_by_key(|g| g.0);
    let fd = fd.clone();
    if !overlapping(&got) {
        let runs = runs_of(&got);
        return ioq::run(move || -> MpiResult<Vec<(u64, u64)>> {
            let _l = if atomic && a < b {
                Some(posix::lock(&fd, false, a, b - a).map_err(|e| posix::error("fcntl lock", &e))?)
            } else {
                None
            };
            let mut have = Vec::with_capacity(runs.len());
            for (o, spans) in &runs {
                // SAFETY: the spans are this round's reply buffers or the streams of ranks
                // parked in this collective, disjoint; the aggregator waits for this job.
                let n = unsafe { posix::preadv_upto(&fd, spans, *o) }.map_err(|e| posix::error("read", &e))?;
                have.push((*o, *o + n as u64));
            }
            Ok(have)
        });
    }
    let runs = merge(got.iter().map(|g| (g.0, g.0 + g.1)).collect());
    win.resize((b - a) as usize, 0);
    let buf = std::mem::take(win);
    let (r, buf) = ioq::run(move || {
        let mut buf = buf;
        let r = (|| -> MpiResult<Vec<(u64, u64)>> {
            let _l = if atomic && a < b {
                Some(posix::lock(&fd, false, a, b - a).map_err(|e| posix::error("fcntl lock", &e))?)
            } else {
                None
            };
            let mut have = Vec::with_capacity(runs.len());
            for (o, e) in runs {
                let n = posix::pread_upto(&fd, &mut buf[(o - a) as usize..(e - a) as usize], o).map_err(|e| posix::error("read", &e))?;
                have.push((o, o + n as u64));
            }
            Ok(have)
        })();
        (r, buf)
    })?;
    *win = buf;
    if let Ok(have) = &r {
        for &(o, l, _, addr) in &got {
            let i = have.partition_point(|h| h.0 <= o);
            let n = if i == 0 { 0 } else { have[i - 1].1.saturating_sub(o).min(l) };
            // SAFETY: `addr` has room for the piece's `l` bytes (n <= l), and nobody else
            // touches them during the collective; the window holds [o, o + n).
            unsafe { std::ptr::copy_nonoverlapping(win.as_ptr().add((o - a) as usize), addr as *mut u8, n as usize) };
        }
    }
    Ok(r)
}

/// Unpacks what a read brought into a packed stream (converting it, in a user
/// representation, here in the calling rank); gives the bytes moved.
fn finish(p: Option<&Plan>, packed: Option<Vec<u8>>, n: u64) -> MpiResult<u64> {
    if let (Some(p), Some(mut v)) = (p, packed) {
        if let (Dir::Read, Rep::User(id)) = (p.dir, p.view.rep) {
            // SAFETY: the program's buffer holds `count` elements of its type.
            unsafe { datarep::from_file(id, &mut v[..n as usize], p.buf, p.dth, &p.dt, p.count)? };
        } else if p.dir == Dir::Read {
            // SAFETY: the program's buffer holds `count` elements of its type.
            unsafe { scatter(&p.dt, p.view.rep, &v[..n as usize], p.buf, p.count) };
        }
    }
    Ok(n)
}

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
