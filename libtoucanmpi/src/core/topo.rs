//! Process topologies: which communicator handle of which subrank carries a Cartesian grid, a
//! graph or a distributed graph; the arithmetic on them (balanced factorisation, coordinates,
//! shifts, sub-grids, neighbour lists); and the exchanges behind MPI_Dist_graph_create and the
//! neighbourhood collectives.
//!
//! Topologies are kept per (subrank, communicator handle), like every other handle-bound state,
//! in a table of their own so communicator code needs only two hooks: `copy` on MPI_Comm_dup
//! and `forget` on MPI_Comm_free.

use super::coll::{Buf, Coll};
use super::comm::{derive_ctx, CommRef, CTX_COLL};
use super::datatype;
use super::error::{err, MpiResult};
use super::p2p::blocking::{irecv, isend, wait_all};
use super::p2p::SendMode;
use crate::consts as c;
use crate::sched::lock::Lock;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The topology attached to a communicator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Topo {
    /// Row-major grid: the last dimension varies fastest along the ranks.
    Cart { dims: Vec<i32>, periods: Vec<bool> },
    /// MPI_Graph_create's arrays: node i's neighbours are `edges[index[i-1]..index[i]]`.
    Graph { index: Vec<i32>, edges: Vec<i32> },
    /// This process's side of a distributed graph: its in- and out-edges (in the order
    /// MPI_Dist_graph_neighbors reports them) and their weights (empty when unweighted).
    DistGraph {
        sources: Vec<i32>,
        source_weights: Vec<i32>,
        dests: Vec<i32>,
        dest_weights: Vec<i32>,
        weighted: bool,
    },
}

impl Topo {
    /// MPI_Topo_test's answer.
    pub fn kind(&self) -> i32 {
        match self {
            Topo::Cart { .. } => c::MPI_CART,
            Topo::Graph { .. } => c::MPI_GRAPH,
            Topo::DistGraph { .. } => c::MPI_DIST_GRAPH,
        }
    }
}

struct Entry {
    topo: Arc<Topo>,
    /// Neighbourhood collectives started on this handle (members agree: they call them in
    /// the same order); each call's messages carry its number in their tag.
    calls: u64,
}

static TABLE: Lock<BTreeMap<(usize, usize), Entry>> = Lock::new(BTreeMap::new());

/// Attaches topology `t` to communicator handle `comm` of subrank `sub`.
pub fn attach(sub: usize, comm: usize, t: Topo) {
    TABLE.lock().insert(
        (sub, comm),
        Entry {
            topo: Arc::new(t),
            calls: 0,
        },
    );
}

/// The topology of `comm`, if it has one.
pub fn get(sub: usize, comm: usize) -> Option<Arc<Topo>> {
    TABLE.lock().get(&(sub, comm)).map(|e| e.topo.clone())
}

/// Hook for MPI_Comm_free: `comm` no longer has a topology.
pub fn forget(sub: usize, comm: usize) {
    TABLE.lock().remove(&(sub, comm));
}

/// Hook for MPI_Comm_dup (and MPI_Comm_idup): the new handle `to` gets `from`'s topology.
pub fn copy(sub: usize, from: usize, to: usize) {
    let mut t = TABLE.lock();
    if let Some(topo) = t.get(&(sub, from)).map(|e| e.topo.clone()) {
        t.insert((sub, to), Entry { topo, calls: 0 });
    }
}

/// Takes the number of the next neighbourhood collective on `comm`.
pub fn next_call(sub: usize, comm: usize) -> u64 {
    let mut t = TABLE.lock();
    match t.get_mut(&(sub, comm)) {
        Some(e) => {
            e.calls += 1;
            e.calls
        }
        None => 0,
    }
}

// ---- MPI_Dims_create ----

/// Fills the zero entries of `dims` with a balanced factorisation of `nnodes` divided by the
/// product of the positive entries (see `balanced`).
pub fn dims_create(nnodes: i32, dims: &mut [i32]) -> MpiResult<()> {
    if nnodes < 0 {
        return err(c::MPI_ERR_ARG, format!("negative number of nodes {nnodes}"));
    }
    if let Some(d) = dims.iter().find(|&&d| d < 0) {
        return err(c::MPI_ERR_DIMS, format!("negative dimension {d} in dims"));
    }
    if dims.is_empty() {
        return Ok(());
    }
    if nnodes == 0 {
        return err(c::MPI_ERR_DIMS, "cannot make a grid of 0 nodes");
    }
    let fixed = dims.iter().filter(|&&d| d > 0).fold(1i64, |p, &d| p.saturating_mul(d as i64));
    let free = dims.iter().filter(|&&d| d == 0).count();
    if nnodes as i64 % fixed != 0 || (free == 0 && fixed != nnodes as i64) {
        return err(
            c::MPI_ERR_DIMS,
            format!("{nnodes} nodes do not fit the fixed dimensions (their product is {fixed})"),
        );
    }
    let mut f = balanced((nnodes as i64 / fixed) as u64, free).into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = f.next().expect("one factor per free dimension") as i32;
    }
    Ok(())
}

/// Prime factors of `m` with their multiplicities, smallest first.
fn factorise(mut m: u64) -> Vec<(u64, u32)> {
    let mut v = Vec::new();
    let mut p = 2;
    while p * p <= m {
        let mut k = 0;
        while m.is_multiple_of(p) {
            m /= p;
            k += 1;
        }
        if k > 0 {
            v.push((p, k));
        }
        p += 1;
    }
    if m > 1 {
        v.push((m, 1));
    }
    v
}

/// `m` as a product of `k` factors, as balanced as the standard asks and exactly as MPICH
/// (4.0.2) computes it, so that programs see the grids they see there. MPICH's method, after
/// Träff and Lübbe ("Specification guideline violations by MPI_Dims_create", EuroMPI'15):
/// single primes above the square root of what is left get a dimension each, largest first;
/// then three shortcuts (one prime per dimension; a power of a single prime dealt round robin;
/// equal shares of every prime); otherwise a round-robin first guess improved by a
/// branch-and-bound search over divisors for the smallest difference between the largest and
/// smallest factor, a later candidate replacing an equally good one. The search's pruning
/// bounds are part of what decides between equally balanced candidates, so they are kept as
/// they are, including the bound an ancestor call read before its children improved it.
pub fn balanced(m: u64, k: usize) -> Vec<u64> {
    if k <= 1 {
        return vec![m; k];
    }
    let mut f = factorise(m);
    let mut nprimes: u32 = f.iter().map(|x| x.1).sum();
    let mut n = m;
    let mut chosen: Vec<u64> = Vec::with_capacity(k);
    while f.len() > 1 && chosen.len() < k - 1 {
        let (p, e) = f[f.len() - 1];
        if e != 1 || p * p <= n {
            break;
        }
        chosen.push(p);
        f.pop();
        n /= p;
        nprimes -= 1;
    }
    let left = k - chosen.len();
    if nprimes as usize + chosen.len() <= k {
        for &(p, e) in f.iter().rev() {
            chosen.extend(std::iter::repeat_n(p, e as usize));
        }
        chosen.resize(k, 1);
        return chosen;
    }
    if left == 1 {
        chosen.push(n);
        return chosen;
    }
    if let [(p, e)] = f[..] {
        let mut d = vec![1u64; left];
        for i in 0..e as usize {
            d[i % left] *= p;
        }
        chosen.extend(d);
        return chosen;
    }
    if f.iter().all(|&(_, e)| (e as usize).is_multiple_of(left)) {
        let share: u64 = f.iter().map(|&(p, e)| p.pow(e / left as u32)).product();
        chosen.extend(std::iter::repeat_n(share, left));
        return chosen;
    }
    // Divisors of n other than 1 and n, ascending.
    let mut divs = vec![1u64];
    for &(p, e) in &f {
        let base = divs.clone();
        let mut pk = 1;
        for _ in 0..e {
            pk *= p;
            divs.extend(base.iter().map(|d| d * pk));
        }
    }
    divs.sort_unstable();
    let divs = &divs[1..divs.len() - 1];
    let mut opt = round_robin(&f, left);
    let top = chosen.first().copied().unwrap_or(opt[0]);
    let mut bal = top as i64 - opt[left - 1] as i64;
    let mut trial = vec![0u64; left];
    trial[left - 1] = divs[0];
    search(n, left - 1, divs, &mut trial, &mut bal, &mut opt);
    chosen.extend(opt);
    chosen
}

/// The first guess: primes, largest first, one per dimension while there are free ones; each
/// further prime multiplies the last dimension that stays no larger than the one before it
/// (or the first).
fn round_robin(f: &[(u64, u32)], nd: usize) -> Vec<u64> {
    let mut d = vec![1u64; nd];
    let mut next = 0;
    for &(p, e) in f.iter().rev() {
        for _ in 0..e {
            if next < nd {
                d[next] = p;
                next += 1;
            } else {
                let mut i = nd - 1;
                while i > 0 && d[i] * p > d[i - 1] {
                    i -= 1;
                }
                d[i] *= p;
            }
        }
    }
    d
}

/// Branch and bound: chooses `trial[idx]` (and, recursively, the entries below it) from the
/// divisors `divs` of `n`, keeping in `opt` the best list and in `bal` its balance (largest
/// minus `trial`'s last entry, the smallest factor).
fn search(n: u64, idx: usize, divs: &[u64], trial: &mut [u64], bal: &mut i64, opt: &mut [u64]) {
    let nd = trial.len();
    let min = trial[nd - 1] as i64;
    let entry_bal = *bal;
    match idx {
        0 => {
            if n as i64 - min <= entry_bal {
                opt[1..].copy_from_slice(&trial[1..]);
                opt[0] = n;
                *bal = n as i64 - min;
            }
        }
        1 => {
            // The pair (q, f), q * f = n, with f the largest divisor not above q.
            let mut k = 1;
            let mut qprev = None;
            while k < divs.len() && n / divs[k] >= divs[k] {
                qprev = Some(n / divs[k]);
                k += 1;
            }
            let f = divs[k - 1];
            let q = qprev.unwrap_or(n / f);
            if q < f {
                return;
            }
            let test = if nd == 2 { q as i64 - f as i64 } else { q as i64 - min };
            if test <= entry_bal {
                opt[2..].copy_from_slice(&trial[2..]);
                opt[0] = q;
                opt[1] = f;
                *bal = q as i64 - min;
            }
        }
        _ => {
            let top = idx == nd - 1;
            for (k, &f) in divs.iter().enumerate() {
                if !top && f as i64 - min > entry_bal {
                    break;
                }
                let q = n / f;
                let mut next = Vec::new();
                let sf = if q.is_multiple_of(f) {
                    next.push(f);
                    f
                } else if k + 1 < divs.len() {
                    divs[k + 1]
                } else {
                    break;
                };
                if !top && sf as i64 - min > entry_bal {
                    break;
                }
                // The idx factors still to choose are all at least sf.
                let mut ff = sf * sf;
                let mut more = idx - 1;
                while more > 0 && ff <= q {
                    ff *= sf;
                    more -= 1;
                }
                if more > 0 {
                    break;
                }
                trial[idx] = f;
                next.extend(divs[k + 1..].iter().take_while(|&&g| g * g <= q).filter(|&&g| q.is_multiple_of(g)));
                if !next.is_empty() {
                    search(q, idx - 1, &next, trial, bal, opt);
                }
            }
        }
    }
}

// ---- Cartesian arithmetic ----

/// Number of processes of a grid; dimensions must be positive.
pub fn grid_size(dims: &[i32]) -> MpiResult<i64> {
    let mut n = 1i64;
    for &d in dims {
        if d <= 0 {
            return err(c::MPI_ERR_DIMS, format!("dimension {d} (dimensions must be positive)"));
        }
        n = n.saturating_mul(d as i64);
    }
    Ok(n)
}

/// Coordinates of `rank` in a row-major grid.
pub fn cart_coords(dims: &[i32], rank: i32) -> Vec<i32> {
    let mut out = vec![0; dims.len()];
    let mut r = rank;
    for (o, &d) in out.iter_mut().zip(dims).rev() {
        *o = r % d;
        r /= d;
    }
    out
}

/// The rank at `coords`; periodic dimensions wrap, others must be in range.
pub fn cart_rank(dims: &[i32], periods: &[bool], coords: &[i32]) -> MpiResult<i32> {
    let mut r = 0i64;
    for (i, ((&d, &p), &x)) in dims.iter().zip(periods).zip(coords).enumerate() {
        let x = if p {
            (x as i64).rem_euclid(d as i64)
        } else if (0..d).contains(&x) {
            x as i64
        } else {
            return err(
                c::MPI_ERR_ARG,
                format!("coordinate {x} of dimension {i} is outside 0..{d} (the dimension is not periodic)"),
            );
        };
        r = r * d as i64 + x;
    }
    Ok(r as i32)
}

/// MPI_Cart_shift: (source, destination) of `rank` for a shift by `disp` along `dir`.
pub fn cart_shift(dims: &[i32], periods: &[bool], rank: i32, dir: usize, disp: i32) -> (i32, i32) {
    let coords = cart_coords(dims, rank);
    let (d, p) = (dims[dir] as i64, periods[dir]);
    let at = |delta: i64| {
        let x = coords[dir] as i64 + delta;
        let x = if p {
            x.rem_euclid(d)
        } else if (0..d).contains(&x) {
            x
        } else {
            return c::MPI_PROC_NULL;
        };
        let mut cc = coords.clone();
        cc[dir] = x as i32;
        cart_rank(dims, periods, &cc).expect("coordinates in range")
    };
    (at(-(disp as i64)), at(disp as i64))
}

/// One process's sub-grid of MPI_Cart_sub.
#[derive(Debug, PartialEq, Eq)]
pub struct SubGrid {
    /// Row-major index of the sub-grid among all of them (by the dropped coordinates).
    pub index: i64,
    /// Ranks (in the old grid) of its members, in their new rank order.
    pub members: Vec<i32>,
    /// The caller's rank in it.
    pub rank: i32,
    pub dims: Vec<i32>,
    pub periods: Vec<bool>,
}

/// The sub-grid through `rank` spanned by the dimensions `keep` marks.
pub fn cart_sub(dims: &[i32], periods: &[bool], rank: i32, keep: &[bool]) -> SubGrid {
    let coords = cart_coords(dims, rank);
    let pick = |want: bool| -> Vec<usize> { (0..dims.len()).filter(|&i| keep[i] == want).collect() };
    let (kept, dropped) = (pick(true), pick(false));
    let index = dropped.iter().fold(0i64, |a, &i| a * dims[i] as i64 + coords[i] as i64);
    let sub_dims: Vec<i32> = kept.iter().map(|&i| dims[i]).collect();
    let sub_periods: Vec<bool> = kept.iter().map(|&i| periods[i]).collect();
    let n = sub_dims.iter().product::<i32>();
    let members = (0..n)
        .map(|k| {
            let mut cc = coords.clone();
            for (&i, x) in kept.iter().zip(cart_coords(&sub_dims, k)) {
                cc[i] = x;
            }
            cart_rank(dims, periods, &cc).expect("coordinates in range")
        })
        .collect();
    let my: Vec<i32> = kept.iter().map(|&i| coords[i]).collect();
    let rank = cart_rank(&sub_dims, &sub_periods, &my).expect("coordinates in range");
    SubGrid {
        index,
        members,
        rank,
        dims: sub_dims,
        periods: sub_periods,
    }
}

// ---- neighbours ----

/// The neighbours a neighbourhood collective exchanges with, in buffer order.
#[derive(Debug, PartialEq, Eq)]
pub struct Neighbours {
    /// Block i of the receive buffer comes from `sources[i]`.
    pub sources: Vec<i32>,
    /// Block j of the send buffer goes to `dests[j]`.
    pub dests: Vec<i32>,
    /// Cartesian: block s of a sender lands in block s^1 of the receiver (MPI-4.1 8.6), which
    /// matters when both neighbours along a dimension are one process.
    pub cart: bool,
}

/// Neighbours of `rank` in topology `t`.
pub fn neighbours(t: &Topo, rank: i32) -> Neighbours {
    match t {
        Topo::Cart { dims, periods } => {
            let v: Vec<i32> = (0..dims.len())
                .flat_map(|d| {
                    let (s, t) = cart_shift(dims, periods, rank, d, 1);
                    [s, t]
                })
                .collect();
            Neighbours {
                sources: v.clone(),
                dests: v,
                cart: true,
            }
        }
        Topo::Graph { index, edges } => {
            let v = graph_neighbours(index, edges, rank).to_vec();
            Neighbours {
                sources: v.clone(),
                dests: v,
                cart: false,
            }
        }
        Topo::DistGraph { sources, dests, .. } => Neighbours {
            sources: sources.clone(),
            dests: dests.clone(),
            cart: false,
        },
    }
}

/// Node `rank`'s slice of a graph's edge array.
pub fn graph_neighbours<'a>(index: &[i32], edges: &'a [i32], rank: i32) -> &'a [i32] {
    let r = rank as usize;
    let lo = if r == 0 { 0 } else { index[r - 1] as usize };
    &edges[lo..index[r] as usize]
}

/// Checks MPI_Graph_create's arrays for `nnodes` nodes.
pub fn check_graph(index: &[i32], edges: &[i32]) -> MpiResult<()> {
    let mut prev = 0;
    for (i, &x) in index.iter().enumerate() {
        if x < prev {
            return err(c::MPI_ERR_ARG, format!("index[{i}] = {x} is smaller than the entry before it"));
        }
        prev = x;
    }
    let want = index.last().map_or(0, |&x| x as usize);
    if edges.len() != want {
        return err(c::MPI_ERR_ARG, format!("{} edges given, index says {want}", edges.len()));
    }
    if let Some(e) = edges.iter().find(|&&e| e < 0 || e as usize >= index.len()) {
        return err(c::MPI_ERR_ARG, format!("edge to node {e} (the graph has {} nodes)", index.len()));
    }
    Ok(())
}

/// Context of neighbourhood-collective traffic on a communicator of context `ctx`: derived
/// with creation number 0, which no communicator creation takes, so it is nobody else's.
pub fn neighbour_ctx(ctx: u64) -> u64 {
    derive_ctx(ctx, 0, NEIGHBOUR_COLOR) | CTX_COLL
}
const NEIGHBOUR_COLOR: i64 = -0x4e42;

/// One neighbourhood collective: a receive per in-edge and a send per out-edge, in buffer order.
pub struct Plan {
    pub recvs: Vec<(i32, Buf)>,
    pub sends: Vec<(i32, Buf)>,
    pub cart: bool,
    /// The call's number on its communicator (`next_call`).
    pub call: u64,
}

/// Runs a neighbourhood collective: posts every receive, then every send, then waits.
///
/// Messages between one pair of processes are told apart by their order (the k-th edge from a
/// process matches the k-th edge to it) and, on a Cartesian grid, by direction: the tag's low
/// bit says whether the receiver files the block as coming from its negative (0) or positive
/// (1) neighbour.
///
/// # Safety
/// The buffers must be valid for their counts until this returns.
pub unsafe fn exchange(sub: usize, comm: &CommRef, handle: usize, plan: &Plan) -> MpiResult<()> {
    let ctx = neighbour_ctx(comm.ctx);
    let base = ((plan.call & 0x3fff_ffff) << 1) as i32;
    let class = |i: usize, recv: bool| -> i32 {
        match (plan.cart, recv) {
            (false, _) => 0,
            (true, true) => (i & 1) as i32,
            (true, false) => (i & 1) as i32 ^ 1,
        }
    };
    let mut reqs = Vec::with_capacity(plan.recvs.len() + plan.sends.len());
    for (i, (src, b)) in plan.recvs.iter().enumerate() {
        reqs.push(irecv(sub, handle, ctx, b.ptr, b.count, &b.dt, *src, base | class(i, true))?);
    }
    for (j, (dst, b)) in plan.sends.iter().enumerate() {
        reqs.push(isend(
            sub,
            comm,
            handle,
            ctx,
            b.ptr,
            b.count,
            &b.dt,
            *dst,
            base | class(j, false),
            SendMode::Standard,
        )?);
    }
    for st in wait_all(&reqs)?.iter().take(plan.recvs.len()) {
        if st.error != c::MPI_SUCCESS {
            return err(
                st.error,
                "a neighbour's block is larger than its receive block (mismatched counts?)",
            );
        }
    }
    Ok(())
}

/// One process's edges after MPI_Dist_graph_create: (in-neighbours, out-neighbours), each
/// with its weight.
pub type Adjacency = (Vec<(i32, i32)>, Vec<(i32, i32)>);

/// The exchange of MPI_Dist_graph_create, collective over `comm`: every process contributes
/// edges (source, destination, weight) in its own order and gets back the edges that start
/// and end at it. Both ends list the edges in one global order (by contributing rank, then in
/// contribution order), so repeated edges between two processes pair up in order.
///
/// # Safety
/// None beyond the call being collective; marked unsafe because it drives raw buffers.
pub unsafe fn route_edges(sub: usize, comm: &CommRef, handle: usize, edges: &[(i32, i32, i32)]) -> MpiResult<Adjacency> {
    let n = comm.size() as usize;
    let int = datatype::lookup(c::MPI_INT)?;
    // To each process: triples (1 = out-edge / 0 = in-edge, other end, weight).
    let mut out: Vec<Vec<i32>> = vec![Vec::new(); n];
    for &(s, d, w) in edges {
        out[s as usize].extend([1, d, w]);
        out[d as usize].extend([0, s, w]);
    }
    let mut scounts: Vec<i32> = out.iter().map(|v| v.len() as i32).collect();
    let mut rcounts = vec![0i32; n];
    let one = |v: &mut [i32], i: usize| Buf::new(v.as_mut_ptr().add(i) as *mut u8, 1, int.clone());
    let sb: Vec<Buf> = (0..n).map(|i| one(&mut scounts, i)).collect();
    let rb: Vec<Buf> = (0..n).map(|i| one(&mut rcounts, i)).collect();
    Coll::new(sub, comm, handle)?.alltoallv(&sb, &rb)?;
    let mut inc: Vec<Vec<i32>> = rcounts.iter().map(|&k| vec![0; k.max(0) as usize]).collect();
    let sb: Vec<Buf> = out
        .iter_mut()
        .map(|v| Buf::new(v.as_mut_ptr() as *mut u8, v.len(), int.clone()))
        .collect();
    let rb: Vec<Buf> = inc
        .iter_mut()
        .map(|v| Buf::new(v.as_mut_ptr() as *mut u8, v.len(), int.clone()))
        .collect();
    Coll::new(sub, comm, handle)?.alltoallv(&sb, &rb)?;
    let (mut ins, mut outs) = (Vec::new(), Vec::new());
    for t in inc.iter().flat_map(|v| v.chunks_exact(3)) {
        if t[0] == 1 {
            outs.push((t[1], t[2]));
        } else {
            ins.push((t[1], t[2]));
        }
    }
    Ok((ins, outs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn dims(n: i32, d: &[i32]) -> MpiResult<Vec<i32>> {
        let mut v = d.to_vec();
        dims_create(n, &mut v).map(|_| v)
    }

    // Expected values are MPICH 4.0.2's answers.
    #[rstest]
    #[case(8, &[0, 0, 0], &[2, 2, 2])]
    #[case(12, &[0, 0], &[4, 3])]
    #[case(6, &[0, 2, 0], &[3, 2, 1])]
    #[case(6, &[0, 0], &[3, 2])]
    #[case(7, &[0, 0], &[7, 1])]
    #[case(1, &[0, 0], &[1, 1])]
    #[case(16, &[0, 0, 0], &[4, 2, 2])]
    #[case(24, &[0, 0, 0], &[4, 3, 2])]
    #[case(36, &[0, 0, 0], &[4, 3, 3])]
    #[case(72, &[0, 0, 0], &[6, 4, 3])]
    #[case(100, &[0, 0, 0], &[5, 5, 4])]
    #[case(360, &[0, 0, 0], &[10, 6, 6])]
    #[case(720, &[0, 0, 0], &[10, 9, 8])]
    #[case(1008, &[0, 0, 0], &[12, 12, 7])]
    #[case(20, &[0, 0, 0, 0], &[5, 2, 2, 1])]
    #[case(42, &[0, 0, 0, 0], &[7, 3, 2, 1])]
    #[case(12, &[0, 2, 0], &[3, 2, 2])]
    #[case(36, &[2, 0, 0], &[2, 6, 3])]
    #[case(30, &[0, 0, 5], &[3, 2, 5])]
    #[case(64, &[0, 8, 0], &[4, 8, 2])]
    #[case(16, &[0, 0, 1], &[4, 4, 1])]
    #[case(4, &[2, 2], &[2, 2])]
    #[case(65536, &[0, 0, 0], &[64, 32, 32])]
    // Equally balanced candidates: MPICH's search keeps the later one.
    #[case(98784, &[0, 0, 0, 0, 0], &[14, 14, 9, 8, 7])]
    #[case(119952, &[0, 0, 0, 0, 0], &[17, 14, 9, 8, 7])]
    #[case(720720, &[0, 0, 0, 0], &[33, 30, 28, 26])]
    #[case(1 << 30, &[0; 31], &[2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1])]
    fn dims_create_matches_mpich(#[case] n: i32, #[case] d: &[i32], #[case] want: &[i32]) {
        assert_eq!(dims(n, d).unwrap(), want);
    }

    #[rstest]
    #[case(-1, &[0, 0], c::MPI_ERR_ARG)]
    #[case(4, &[3, 0], c::MPI_ERR_DIMS)]
    #[case(4, &[-1, 0], c::MPI_ERR_DIMS)]
    #[case(6, &[2, 2], c::MPI_ERR_DIMS)]
    #[case(0, &[0], c::MPI_ERR_DIMS)]
    fn dims_create_errors(#[case] n: i32, #[case] d: &[i32], #[case] class: i32) {
        assert_eq!(dims(n, d).unwrap_err().class, class);
    }

    #[test]
    fn dims_create_no_dims_is_a_no_op() {
        assert_eq!(dims(5, &[]).unwrap(), Vec::<i32>::new());
    }

    /// For small grids MPICH's answer is the most balanced one: the smallest difference
    /// between the largest and the smallest factor, then the largest smallest factor, then the
    /// lexicographically smallest list (checked against MPICH for every nnodes up to 1200 in 1
    /// to 5 dimensions).
    #[test]
    fn small_grids_are_the_most_balanced() {
        fn all(m: u64, k: usize, maxf: u64) -> Vec<Vec<u64>> {
            if k == 1 {
                return if m <= maxf { vec![vec![m]] } else { vec![] };
            }
            (1..=m.min(maxf))
                .rev()
                .filter(|f| m.is_multiple_of(*f))
                .flat_map(|f| {
                    all(m / f, k - 1, f).into_iter().map(move |mut r| {
                        r.insert(0, f);
                        r
                    })
                })
                .collect()
        }
        let key = |f: &Vec<u64>| (f[0] - f[f.len() - 1], std::cmp::Reverse(f[f.len() - 1]), f.clone());
        for k in 1..=5 {
            for m in 1..=400u64 {
                let want = all(m, k, m).into_iter().min_by_key(key).unwrap();
                assert_eq!(balanced(m, k), want, "m={m} k={k}");
            }
        }
    }

    #[test]
    fn factors_multiply_back() {
        for k in 1..=8 {
            for m in (1..=5000u64).chain([65536, 720720, 1 << 30, 2147483647, 2147483646]) {
                let f = balanced(m, k);
                assert_eq!((f.len(), f.iter().product::<u64>()), (k, m), "m={m} k={k}");
            }
        }
    }

    #[rstest]
    #[case(&[3, 4], 0, &[0, 0])]
    #[case(&[3, 4], 5, &[1, 1])]
    #[case(&[3, 4], 11, &[2, 3])]
    #[case(&[2, 3, 4], 23, &[1, 2, 3])]
    #[case(&[2, 3, 4], 13, &[1, 0, 1])]
    #[case(&[], 0, &[])]
    fn coords_and_rank_round_trip(#[case] d: &[i32], #[case] r: i32, #[case] want: &[i32]) {
        assert_eq!(cart_coords(d, r), want);
        let p = vec![false; d.len()];
        assert_eq!(cart_rank(d, &p, want).unwrap(), r);
    }

    #[rstest]
    #[case(&[3, 4], &[true, true], &[-1, 5], 9)]
    #[case(&[3, 4], &[true, false], &[4, 3], 7)]
    #[case(&[3, 4], &[true, true], &[-7, -9], 11)]
    fn cart_rank_wraps_periodic(#[case] d: &[i32], #[case] p: &[bool], #[case] x: &[i32], #[case] want: i32) {
        assert_eq!(cart_rank(d, p, x).unwrap(), want);
    }

    #[rstest]
    #[case(&[3, 4], &[true, false], &[1, 4])]
    #[case(&[3, 4], &[false, true], &[-1, 0])]
    fn cart_rank_out_of_range(#[case] d: &[i32], #[case] p: &[bool], #[case] x: &[i32]) {
        assert_eq!(cart_rank(d, p, x).unwrap_err().class, c::MPI_ERR_ARG);
    }

    const P: i32 = c::MPI_PROC_NULL;

    // Grid 3 x 4, dimension 0 periodic, dimension 1 not.
    #[rstest]
    #[case(5, 0, 1, (1, 9))]
    #[case(1, 0, 1, (9, 5))]
    #[case(5, 1, 1, (4, 6))]
    #[case(4, 1, 1, (P, 5))]
    #[case(7, 1, 1, (6, P))]
    #[case(7, 1, -1, (P, 6))]
    #[case(5, 0, 3, (5, 5))]
    #[case(5, 0, -4, (9, 1))]
    #[case(5, 1, 0, (5, 5))]
    #[case(5, 1, 5, (P, P))]
    fn shifts(#[case] r: i32, #[case] dir: usize, #[case] disp: i32, #[case] want: (i32, i32)) {
        assert_eq!(cart_shift(&[3, 4], &[true, false], r, dir, disp), want);
    }

    #[rstest]
    // rows of a 3 x 4 grid
    #[case(&[false, true], 6, 1, &[4, 5, 6, 7], 2, &[4])]
    // columns
    #[case(&[true, false], 6, 2, &[2, 6, 10], 1, &[3])]
    #[case(&[true, true], 6, 0, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 6, &[3, 4])]
    #[case(&[false, false], 6, 6, &[6], 0, &[])]
    fn sub_grids(
        #[case] keep: &[bool],
        #[case] r: i32,
        #[case] index: i64,
        #[case] members: &[i32],
        #[case] rank: i32,
        #[case] sub_dims: &[i32],
    ) {
        let g = cart_sub(&[3, 4], &[true, false], r, keep);
        assert_eq!(
            (g.index, g.members.as_slice(), g.rank, g.dims.as_slice()),
            (index, members, rank, sub_dims)
        );
    }

    #[test]
    fn sub_grid_of_three_dims_keeps_order_and_periods() {
        let g = cart_sub(&[2, 3, 4], &[false, true, false], 17, &[true, false, true]);
        // rank 17 = (1, 1, 1): members have coordinate 1 in dimension 1.
        assert_eq!(g.members, vec![4, 5, 6, 7, 16, 17, 18, 19]);
        assert_eq!((g.index, g.rank, g.dims, g.periods), (1, 5, vec![2, 4], vec![false, false]));
    }

    #[test]
    fn cart_neighbours_are_source_then_dest_per_dimension() {
        let t = Topo::Cart {
            dims: vec![3, 4],
            periods: vec![true, false],
        };
        let n = neighbours(&t, 4);
        assert_eq!(n.sources, vec![0, 8, P, 5]);
        assert_eq!(n.sources, n.dests);
        assert!(n.cart);
    }

    #[test]
    fn graph_neighbours_slices() {
        let (index, edges) = (vec![2, 3, 3, 5], vec![1, 3, 0, 0, 1]);
        check_graph(&index, &edges).unwrap();
        assert_eq!(graph_neighbours(&index, &edges, 0), &[1, 3]);
        assert_eq!(graph_neighbours(&index, &edges, 2), &[] as &[i32]);
        assert_eq!(graph_neighbours(&index, &edges, 3), &[0, 1]);
        assert_eq!(check_graph(&[2, 1], &[0, 1]).unwrap_err().class, c::MPI_ERR_ARG);
        assert_eq!(check_graph(&[1, 2], &[0, 2]).unwrap_err().class, c::MPI_ERR_ARG);
    }

    #[test]
    fn table_copy_and_forget() {
        let t = Topo::Graph {
            index: vec![1],
            edges: vec![0],
        };
        attach(7, 100, t.clone());
        assert_eq!(next_call(7, 100), 1);
        copy(7, 100, 101);
        assert_eq!(get(7, 101).as_deref(), Some(&t));
        assert_eq!(next_call(7, 101), 1);
        forget(7, 100);
        assert!(get(7, 100).is_none());
        assert_eq!(next_call(7, 100), 0);
        forget(7, 101);
    }

    #[test]
    fn neighbour_context_is_collective_and_distinct() {
        use super::super::comm::CTX_WORLD;
        let x = neighbour_ctx(CTX_WORLD);
        assert_eq!(x & CTX_COLL, CTX_COLL);
        assert_ne!(x, CTX_WORLD | CTX_COLL);
        assert_ne!(x & !CTX_COLL, derive_ctx(CTX_WORLD, 1, -1));
    }
}
