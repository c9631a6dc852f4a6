//! Process topologies: Cartesian and graph communicators, distributed graphs, their queries,
//! and the neighbourhood collectives.
//!
//! New communicators are made the way MPI_Comm_split makes them: every member of the old
//! communicator takes its next creation number and derives the same context id, with a colour
//! of its own per kind of topology so they never collide with a dup or a split. Ranks are kept
//! (`reorder` is accepted and ignored). The topology itself lives in `core::topo`.

use super::coll::{blocks, wide, At, CArr, Layout, Prepared};
use super::consts as c;
use super::handles::{self as hd, comm};
use crate::core::coll::Coll;
use crate::core::comm::{derive_ctx, CommRef, Group};
use crate::core::error::{err, MpiResult};
use crate::core::state;
use crate::core::topo::{self, Neighbours, Plan, Topo};
use std::os::raw::{c_int, c_void};
use std::sync::Arc;

/// Context colours (MPI_Comm_dup uses -1, MPI_Comm_split the user's colours, all >= 0).
const COLOR_CART: i64 = -2;
const COLOR_GRAPH: i64 = -3;
const COLOR_DIST_GRAPH: i64 = -4;
/// MPI_Cart_sub: this minus the index of the sub-grid.
const COLOR_CART_SUB: i64 = -16;

/// Writes `v` through an output pointer.
unsafe fn put<T>(p: *mut T, v: T, what: &str) -> MpiResult<()> {
    if p.is_null() {
        return err(c::MPI_ERR_ARG, format!("null {what} pointer"));
    }
    *p = v;
    Ok(())
}

/// Copies `v` into a C array of room `max` (at most `max` entries are written).
unsafe fn put_ints(p: *mut c_int, v: &[i32], max: usize, what: &str) -> MpiResult<()> {
    let n = v.len().min(max);
    if n == 0 {
        return Ok(());
    }
    if p.is_null() {
        return err(c::MPI_ERR_ARG, format!("null {what} array"));
    }
    std::ptr::copy_nonoverlapping(v.as_ptr(), p, n);
    Ok(())
}

fn non_negative(n: c_int, what: &str) -> MpiResult<usize> {
    if n < 0 {
        return err(c::MPI_ERR_ARG, format!("negative {what} {n}"));
    }
    Ok(n as usize)
}

/// The old communicator of a topology constructor: an intra-communicator.
fn intra(h: usize) -> MpiResult<(usize, CommRef)> {
    let (sub, cm) = comm(h)?;
    if cm.is_inter() {
        return err(c::MPI_ERR_COMM, "topologies cannot be attached to an inter-communicator");
    }
    Ok((sub, cm))
}

/// Registers a communicator over `ranks` (world ranks) with topology `t` for this subrank.
fn add_comm(sub: usize, parent: &CommRef, ctx: u64, ranks: Vec<u32>, rank: i32, t: Topo) -> MpiResult<usize> {
    let mut n = CommRef::new(ctx, Arc::new(Group::new(ranks)), rank, "");
    n.errhandler = parent.errhandler;
    let h = state::with(|s| {
        let t = &mut s.locals[sub].comms;
        t.push(Some(n));
        hd::comm_handle(t.len() - 1)
    })?;
    topo::attach(sub, h, t);
    Ok(h)
}

/// The communicator `h` and its topology.
fn with_topo(h: usize) -> MpiResult<(usize, CommRef, Arc<Topo>)> {
    let (sub, cm) = comm(h)?;
    match topo::get(sub, h) {
        Some(t) => Ok((sub, cm, t)),
        None => err(c::MPI_ERR_TOPOLOGY, "the communicator has no topology"),
    }
}

/// The communicator `h`, which must be Cartesian: (its view, dims, periods).
fn cart(h: usize) -> MpiResult<(usize, CommRef, Vec<i32>, Vec<bool>)> {
    let (sub, cm, t) = with_topo(h)?;
    match &*t {
        Topo::Cart { dims, periods } => Ok((sub, cm, dims.clone(), periods.clone())),
        _ => err(c::MPI_ERR_TOPOLOGY, "the communicator does not have a Cartesian topology"),
    }
}

/// The communicator `h`, which must have a graph topology: (its view, index, edges).
fn graph(h: usize) -> MpiResult<(CommRef, Vec<i32>, Vec<i32>)> {
    let (_, cm, t) = with_topo(h)?;
    match &*t {
        Topo::Graph { index, edges } => Ok((cm, index.clone(), edges.clone())),
        _ => err(c::MPI_ERR_TOPOLOGY, "the communicator does not have a graph topology"),
    }
}

fn check_rank(cm: &CommRef, r: c_int) -> MpiResult<()> {
    if (0..cm.size()).contains(&r) {
        Ok(())
    } else {
        err(c::MPI_ERR_RANK, format!("invalid rank {r} (communicator size {})", cm.size()))
    }
}

/// Reads the dims and periods arrays of a Cartesian grid and checks the grid fits in `cm`.
unsafe fn grid_args(cm: &CommRef, ndims: c_int, dims: *const c_int, periods: *const c_int) -> MpiResult<(Vec<i32>, Vec<bool>, i64)> {
    let n = non_negative(ndims, "number of dimensions")?;
    let d = hd::ints(dims, n)?.to_vec();
    let p = hd::ints(periods, n)?.iter().map(|&x| x != 0).collect();
    let total = topo::grid_size(&d)?;
    if total > cm.size() as i64 {
        return err(
            c::MPI_ERR_ARG,
            format!("the grid has {total} processes, more than the communicator's {}", cm.size()),
        );
    }
    Ok((d, p, total))
}

// ---- Cartesian topologies ----

mpi_fn!(
    MPI_Dims_create,
    PMPI_Dims_create,
    |nnodes: c_int, ndims: c_int, dims: *mut c_int| errcomm = c::MPI_COMM_WORLD,
    {
        let n = non_negative(ndims, "number of dimensions")?;
        if n > 0 && dims.is_null() {
            return err(c::MPI_ERR_ARG, "null dims array");
        }
        let mut v = hd::ints(dims, n)?.to_vec();
        topo::dims_create(nnodes, &mut v)?;
        put_ints(dims, &v, n, "dims")
    }
);

mpi_fn!(
    MPI_Cart_create,
    PMPI_Cart_create,
    |old: usize, ndims: c_int, dims: *const c_int, periods: *const c_int, _reorder: c_int, newcomm: *mut usize| errcomm = old,
    {
        let (sub, cm) = intra(old)?;
        if newcomm.is_null() {
            return err(c::MPI_ERR_ARG, "null comm_cart pointer");
        }
        let (d, p, total) = grid_args(&cm, ndims, dims, periods)?;
        let seq = super::comm::next_seq(sub, old)?;
        let ranks: Vec<u32> = (0..total as i32).map(|r| cm.world_of(r)).collect();
        let ctx = derive_ctx(cm.ctx, seq, COLOR_CART);
        super::comm::twin(sub, &cm, old, ctx, &ranks)?;
        if cm.rank as i64 >= total {
            *newcomm = c::MPI_COMM_NULL;
            return Ok(());
        }
        let t = Topo::Cart { dims: d, periods: p };
        *newcomm = add_comm(sub, &cm, ctx, ranks, cm.rank, t)?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Cart_map,
    PMPI_Cart_map,
    |comm_h: usize, ndims: c_int, dims: *const c_int, periods: *const c_int, newrank: *mut c_int| errcomm = comm_h,
    {
        let (_, cm) = comm(comm_h)?;
        let n = non_negative(ndims, "number of dimensions")?;
        let total = topo::grid_size(hd::ints(dims, n)?)?;
        hd::ints(periods, n)?;
        if total > cm.size() as i64 {
            return err(
                c::MPI_ERR_DIMS,
                format!("the grid has {total} processes, more than the communicator's {}", cm.size()),
            );
        }
        let r = if (cm.rank as i64) < total { cm.rank } else { c::MPI_UNDEFINED };
        put(newrank, r, "newrank")
    }
);

mpi_fn!(
    MPI_Cartdim_get,
    PMPI_Cartdim_get,
    |comm_h: usize, ndims: *mut c_int| errcomm = comm_h,
    {
        let (_, _, dims, _) = cart(comm_h)?;
        put(ndims, dims.len() as c_int, "ndims")
    }
);

mpi_fn!(
    MPI_Cart_get,
    PMPI_Cart_get,
    |comm_h: usize, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int| errcomm = comm_h,
    {
        let (_, cm, d, p) = cart(comm_h)?;
        let max = non_negative(maxdims, "maxdims")?;
        let p: Vec<i32> = p.iter().map(|&x| x as i32).collect();
        put_ints(dims, &d, max, "dims")?;
        put_ints(periods, &p, max, "periods")?;
        put_ints(coords, &topo::cart_coords(&d, cm.rank), max, "coords")
    }
);

mpi_fn!(
    MPI_Cart_rank,
    PMPI_Cart_rank,
    |comm_h: usize, coords: *const c_int, rank: *mut c_int| errcomm = comm_h,
    {
        let (_, _, d, p) = cart(comm_h)?;
        let r = topo::cart_rank(&d, &p, hd::ints(coords, d.len())?)?;
        put(rank, r, "rank")
    }
);

mpi_fn!(
    MPI_Cart_coords,
    PMPI_Cart_coords,
    |comm_h: usize, rank: c_int, maxdims: c_int, coords: *mut c_int| errcomm = comm_h,
    {
        let (_, cm, d, _) = cart(comm_h)?;
        check_rank(&cm, rank)?;
        if maxdims < d.len() as c_int {
            return err(
                c::MPI_ERR_ARG,
                format!("maxdims {maxdims} is less than the {} dimensions of the grid", d.len()),
            );
        }
        put_ints(coords, &topo::cart_coords(&d, rank), d.len(), "coords")
    }
);

mpi_fn!(
    MPI_Cart_shift,
    PMPI_Cart_shift,
    |comm_h: usize, direction: c_int, disp: c_int, source: *mut c_int, dest: *mut c_int| errcomm = comm_h,
    {
        let (_, cm, d, p) = cart(comm_h)?;
        if direction < 0 || direction as usize >= d.len() {
            return err(
                c::MPI_ERR_ARG,
                format!("direction {direction} is not a dimension of the grid (it has {})", d.len()),
            );
        }
        let (s, t) = topo::cart_shift(&d, &p, cm.rank, direction as usize, disp);
        put(source, s, "rank_source")?;
        put(dest, t, "rank_dest")
    }
);

mpi_fn!(
    MPI_Cart_sub,
    PMPI_Cart_sub,
    |comm_h: usize, remain_dims: *const c_int, newcomm: *mut usize| errcomm = comm_h,
    {
        let (sub, cm, d, p) = cart(comm_h)?;
        if newcomm.is_null() {
            return err(c::MPI_ERR_ARG, "null newcomm pointer");
        }
        let keep: Vec<bool> = hd::ints(remain_dims, d.len())?.iter().map(|&x| x != 0).collect();
        let seq = super::comm::next_seq(sub, comm_h)?;
        if !keep.contains(&true) {
            // A zero-dimensional grid has one process: as MPICH does (MPI_Cart_create with
            // ndims 0 on this communicator), rank 0 gets it and the others MPI_COMM_NULL.
            *newcomm = if cm.rank == 0 {
                let t = Topo::Cart {
                    dims: Vec::new(),
                    periods: Vec::new(),
                };
                add_comm(sub, &cm, derive_ctx(cm.ctx, seq, COLOR_CART), vec![cm.world_of(0)], 0, t)?
            } else {
                c::MPI_COMM_NULL
            };
            return Ok(());
        }
        let g = topo::cart_sub(&d, &p, cm.rank, &keep);
        let ranks = g.members.iter().map(|&r| cm.world_of(r)).collect();
        let ctx = derive_ctx(cm.ctx, seq, COLOR_CART_SUB - g.index);
        let t = Topo::Cart {
            dims: g.dims,
            periods: g.periods,
        };
        *newcomm = add_comm(sub, &cm, ctx, ranks, g.rank, t)?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Topo_test,
    PMPI_Topo_test,
    |comm_h: usize, status: *mut c_int| errcomm = comm_h,
    {
        let (sub, _) = comm(comm_h)?;
        let k = topo::get(sub, comm_h).map(|t| t.kind()).unwrap_or(c::MPI_UNDEFINED);
        put(status, k, "status")
    }
);

// ---- graph topologies ----

/// Reads and checks MPI_Graph_create's arrays for a graph over (part of) `cm`.
unsafe fn graph_args(cm: &CommRef, nnodes: c_int, index: *const c_int, edges: *const c_int) -> MpiResult<(Vec<i32>, Vec<i32>)> {
    let n = non_negative(nnodes, "number of nodes")?;
    if nnodes > cm.size() {
        return err(
            c::MPI_ERR_ARG,
            format!("the graph has {nnodes} nodes, more than the communicator's {} processes", cm.size()),
        );
    }
    let ix = hd::ints(index, n)?.to_vec();
    let ne = non_negative(ix.last().copied().unwrap_or(0), "number of edges")?;
    let ed = hd::ints(edges, ne)?.to_vec();
    topo::check_graph(&ix, &ed)?;
    Ok((ix, ed))
}

mpi_fn!(
    MPI_Graph_create,
    PMPI_Graph_create,
    |old: usize, nnodes: c_int, index: *const c_int, edges: *const c_int, _reorder: c_int, newcomm: *mut usize| errcomm = old,
    {
        let (sub, cm) = intra(old)?;
        if newcomm.is_null() {
            return err(c::MPI_ERR_ARG, "null comm_graph pointer");
        }
        let (ix, ed) = graph_args(&cm, nnodes, index, edges)?;
        let seq = super::comm::next_seq(sub, old)?;
        let ranks: Vec<u32> = (0..nnodes).map(|r| cm.world_of(r)).collect();
        let ctx = derive_ctx(cm.ctx, seq, COLOR_GRAPH);
        super::comm::twin(sub, &cm, old, ctx, &ranks)?;
        if cm.rank >= nnodes {
            *newcomm = c::MPI_COMM_NULL;
            return Ok(());
        }
        let t = Topo::Graph { index: ix, edges: ed };
        *newcomm = add_comm(sub, &cm, ctx, ranks, cm.rank, t)?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Graph_map,
    PMPI_Graph_map,
    |comm_h: usize, nnodes: c_int, index: *const c_int, edges: *const c_int, newrank: *mut c_int| errcomm = comm_h,
    {
        let (_, cm) = comm(comm_h)?;
        graph_args(&cm, nnodes, index, edges)?;
        put(newrank, if cm.rank < nnodes { cm.rank } else { c::MPI_UNDEFINED }, "newrank")
    }
);

mpi_fn!(
    MPI_Graphdims_get,
    PMPI_Graphdims_get,
    |comm_h: usize, nnodes: *mut c_int, nedges: *mut c_int| errcomm = comm_h,
    {
        let (_, ix, ed) = graph(comm_h)?;
        put(nnodes, ix.len() as c_int, "nnodes")?;
        put(nedges, ed.len() as c_int, "nedges")
    }
);

mpi_fn!(
    MPI_Graph_get,
    PMPI_Graph_get,
    |comm_h: usize, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int| errcomm = comm_h,
    {
        let (_, ix, ed) = graph(comm_h)?;
        put_ints(index, &ix, non_negative(maxindex, "maxindex")?, "index")?;
        put_ints(edges, &ed, non_negative(maxedges, "maxedges")?, "edges")
    }
);

mpi_fn!(
    MPI_Graph_neighbors_count,
    PMPI_Graph_neighbors_count,
    |comm_h: usize, rank: c_int, n: *mut c_int| errcomm = comm_h,
    {
        let (cm, ix, ed) = graph(comm_h)?;
        check_rank(&cm, rank)?;
        put(n, topo::graph_neighbours(&ix, &ed, rank).len() as c_int, "nneighbors")
    }
);

mpi_fn!(
    MPI_Graph_neighbors,
    PMPI_Graph_neighbors,
    |comm_h: usize, rank: c_int, maxneighbors: c_int, neighbors: *mut c_int| errcomm = comm_h,
    {
        let (cm, ix, ed) = graph(comm_h)?;
        check_rank(&cm, rank)?;
        let max = non_negative(maxneighbors, "maxneighbors")?;
        put_ints(neighbors, topo::graph_neighbours(&ix, &ed, rank), max, "neighbors")
    }
);

// ---- distributed graphs ----

fn is_unweighted(p: *const c_int) -> bool {
    p as usize == c::MPI_UNWEIGHTED_ADDR
}

fn is_special(p: *const c_int) -> bool {
    p.is_null() || is_unweighted(p) || p as usize == c::MPI_WEIGHTS_EMPTY_ADDR
}

/// `n` weights from `p` (MPI_UNWEIGHTED: none; MPI_WEIGHTS_EMPTY only when there are none).
unsafe fn weights(p: *const c_int, n: usize) -> MpiResult<Vec<i32>> {
    if is_unweighted(p) || n == 0 {
        return Ok(Vec::new());
    }
    if is_special(p) {
        return err(c::MPI_ERR_ARG, format!("no weights given for {n} edges"));
    }
    let w = hd::ints(p, n)?;
    if let Some(x) = w.iter().find(|&&x| x < 0) {
        return err(c::MPI_ERR_ARG, format!("negative edge weight {x}"));
    }
    Ok(w.to_vec())
}

fn check_ranks(cm: &CommRef, v: &[i32], what: &str) -> MpiResult<()> {
    match v.iter().find(|&&r| !(0..cm.size()).contains(&r)) {
        Some(r) => err(
            c::MPI_ERR_RANK,
            format!("{what} {r} is not a rank of the communicator (size {})", cm.size()),
        ),
        None => Ok(()),
    }
}

mpi_fn!(
    MPI_Dist_graph_create_adjacent,
    PMPI_Dist_graph_create_adjacent,
    |old: usize,
     indegree: c_int,
     sources: *const c_int,
     sourceweights: *const c_int,
     outdegree: c_int,
     destinations: *const c_int,
     destweights: *const c_int,
     _info: usize,
     _reorder: c_int,
     newcomm: *mut usize| errcomm = old,
    {
        let (sub, cm) = intra(old)?;
        if newcomm.is_null() {
            return err(c::MPI_ERR_ARG, "null comm_dist_graph pointer");
        }
        let (ni, no) = (non_negative(indegree, "indegree")?, non_negative(outdegree, "outdegree")?);
        let s = hd::ints(sources, ni)?.to_vec();
        let d = hd::ints(destinations, no)?.to_vec();
        check_ranks(&cm, &s, "source")?;
        check_ranks(&cm, &d, "destination")?;
        let t = Topo::DistGraph {
            source_weights: weights(sourceweights, ni)?,
            dest_weights: weights(destweights, no)?,
            sources: s,
            dests: d,
            weighted: !is_unweighted(sourceweights),
        };
        let seq = super::comm::next_seq(sub, old)?;
        let ranks = cm.group.ranks.clone();
        let ctx = derive_ctx(cm.ctx, seq, COLOR_DIST_GRAPH);
        super::comm::twin(sub, &cm, old, ctx, &ranks)?;
        *newcomm = add_comm(sub, &cm, ctx, ranks, cm.rank, t)?;
        Ok(())
    }
);

mpi_fn!(
    MPI_Dist_graph_create,
    PMPI_Dist_graph_create,
    |old: usize,
     n: c_int,
     sources: *const c_int,
     degrees: *const c_int,
     destinations: *const c_int,
     weights_p: *const c_int,
     _info: usize,
     _reorder: c_int,
     newcomm: *mut usize| errcomm = old,
    {
        let (sub, cm) = intra(old)?;
        if newcomm.is_null() {
            return err(c::MPI_ERR_ARG, "null comm_dist_graph pointer");
        }
        let n = non_negative(n, "number of source nodes")?;
        let s = hd::ints(sources, n)?;
        let deg = hd::ints(degrees, n)?;
        check_ranks(&cm, s, "source")?;
        let total = deg.iter().try_fold(0usize, |a, &k| non_negative(k, "degree").map(|k| a + k))?;
        let d = hd::ints(destinations, total)?;
        check_ranks(&cm, d, "destination")?;
        let w = weights(weights_p, total)?;
        let mut edges = Vec::with_capacity(total);
        let mut k = 0;
        for (&src, &dg) in s.iter().zip(deg) {
            for _ in 0..dg {
                edges.push((src, d[k], w.get(k).copied().unwrap_or(1)));
                k += 1;
            }
        }
        let seq = super::comm::next_seq(sub, old)?;
        let (ins, outs) = topo::route_edges(sub, &cm, old, &edges)?;
        let weighted = !is_unweighted(weights_p);
        let pick = |v: &[(i32, i32)], f: fn(&(i32, i32)) -> i32| v.iter().map(f).collect::<Vec<i32>>();
        let t = Topo::DistGraph {
            sources: pick(&ins, |e| e.0),
            source_weights: if weighted { pick(&ins, |e| e.1) } else { Vec::new() },
            dests: pick(&outs, |e| e.0),
            dest_weights: if weighted { pick(&outs, |e| e.1) } else { Vec::new() },
            weighted,
        };
        let ranks = cm.group.ranks.clone();
        let ctx = derive_ctx(cm.ctx, seq, COLOR_DIST_GRAPH);
        super::comm::twin(sub, &cm, old, ctx, &ranks)?;
        *newcomm = add_comm(sub, &cm, ctx, ranks, cm.rank, t)?;
        Ok(())
    }
);

/// The distributed-graph topology of `h`.
fn dist_graph(h: usize) -> MpiResult<Arc<Topo>> {
    let (_, _, t) = with_topo(h)?;
    match &*t {
        Topo::DistGraph { .. } => Ok(t),
        _ => err(c::MPI_ERR_TOPOLOGY, "the communicator does not have a distributed graph topology"),
    }
}

mpi_fn!(
    MPI_Dist_graph_neighbors_count,
    PMPI_Dist_graph_neighbors_count,
    |comm_h: usize, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int| errcomm = comm_h,
    {
        let t = dist_graph(comm_h)?;
        let Topo::DistGraph {
            sources,
            dests,
            weighted: w,
            ..
        } = &*t
        else {
            unreachable!("checked by dist_graph")
        };
        put(indegree, sources.len() as c_int, "indegree")?;
        put(outdegree, dests.len() as c_int, "outdegree")?;
        put(weighted, *w as c_int, "weighted")
    }
);

mpi_fn!(
    MPI_Dist_graph_neighbors,
    PMPI_Dist_graph_neighbors,
    |comm_h: usize,
     maxindegree: c_int,
     sources: *mut c_int,
     sourceweights: *mut c_int,
     maxoutdegree: c_int,
     destinations: *mut c_int,
     destweights: *mut c_int| errcomm = comm_h,
    {
        let t = dist_graph(comm_h)?;
        let Topo::DistGraph {
            sources: s,
            source_weights: sw,
            dests: d,
            dest_weights: dw,
            weighted,
        } = &*t
        else {
            unreachable!("checked by dist_graph")
        };
        let (mi, mo) = (
            non_negative(maxindegree, "maxindegree")?,
            non_negative(maxoutdegree, "maxoutdegree")?,
        );
        put_ints(sources, s, mi, "sources")?;
        put_ints(destinations, d, mo, "destinations")?;
        if *weighted {
            if !is_special(sourceweights) {
                put_ints(sourceweights, sw, mi, "sourceweights")?;
            }
            if !is_special(destweights) {
                put_ints(destweights, dw, mo, "destweights")?;
            }
        }
        Ok(())
    }
);

// ---- neighbourhood collectives ----

fn in_place(p: *const c_void) -> MpiResult<()> {
    if p as usize == c::MPI_IN_PLACE_ADDR {
        return err(c::MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed in neighbourhood collectives");
    }
    Ok(())
}

/// The communicator of a neighbourhood collective, which must have a topology, and its neighbours.
fn neighbourhood(comm_h: usize) -> MpiResult<(usize, CommRef, Neighbours)> {
    let (sub, cm, t) = with_topo(comm_h)?;
    let nb = topo::neighbours(&t, cm.rank);
    Ok((sub, cm, nb))
}

/// A neighbourhood collective: `recvs` blocks of `rbuf`, one per in-neighbour (`sources[i]`),
/// and `sends` blocks of `sbuf`, one per out-neighbour (`dests[j]`); `None` for the sends of
/// an allgather, whose one send block goes to every out-neighbour.
fn prep(sbuf: *const c_void, sends: Option<Layout>, one: (i64, usize), rbuf: *mut c_void, recvs: Layout, at: &At) -> MpiResult<Prepared> {
    let comm_h = at.h;
    let (sub, cm, nb) = neighbourhood(comm_h)?;
    in_place(sbuf)?;
    in_place(rbuf)?;
    // SAFETY: the standard gives the arrays one entry per neighbour; only addresses are computed.
    let (sends, recvs) = unsafe {
        let sends = match sends {
            Some(l) => blocks(sbuf, l, nb.dests.len())?,
            None => vec![blocks(sbuf, Layout::Equal(one.0, one.1), 1)?.remove(0); nb.dests.len()],
        };
        (sends, blocks(rbuf, recvs, nb.sources.len())?)
    };
    let plan = Plan {
        recvs: nb.sources.into_iter().zip(recvs).collect(),
        sends: nb.dests.into_iter().zip(sends).collect(),
        cart: nb.cart,
        call: topo::next_call(sub, comm_h),
    };
    // SAFETY (job): MPI requires the buffers to stay valid until the collective completes.
    Ok(Prepared::new(
        sub,
        cm,
        Box::new(move |c: &Coll| unsafe { topo::exchange(c.sub, &c.comm, c.handle, &plan) }),
    ))
}

coll_family!(
    neighbor_allgather,
    comm_h,
    [MPI_Neighbor_allgather PMPI_Neighbor_allgather MPI_Ineighbor_allgather PMPI_Ineighbor_allgather
     MPI_Neighbor_allgather_init PMPI_Neighbor_allgather_init],
    [MPI_Neighbor_allgather_c PMPI_Neighbor_allgather_c MPI_Ineighbor_allgather_c PMPI_Ineighbor_allgather_c
     MPI_Neighbor_allgather_init_c PMPI_Neighbor_allgather_init_c],
    |sbuf: *const c_void, scount: Count, sdt: usize, rbuf: *mut c_void, rcount: Count, rdt: usize, comm_h: usize| {
        prep(sbuf, None, (wide(scount), sdt), rbuf, Layout::Equal(wide(rcount), rdt), comm_h)
    }
);

coll_family!(
    neighbor_allgatherv,
    comm_h,
    [MPI_Neighbor_allgatherv PMPI_Neighbor_allgatherv MPI_Ineighbor_allgatherv PMPI_Ineighbor_allgatherv
     MPI_Neighbor_allgatherv_init PMPI_Neighbor_allgatherv_init],
    [MPI_Neighbor_allgatherv_c PMPI_Neighbor_allgatherv_c MPI_Ineighbor_allgatherv_c PMPI_Ineighbor_allgatherv_c
     MPI_Neighbor_allgatherv_init_c PMPI_Neighbor_allgatherv_init_c],
    |sbuf: *const c_void,
     scount: Count,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const Count,
     displs: *const Displ,
     rdt: usize,
     comm_h: usize| {
        let rl = Layout::V(CArr::of(rcounts), CArr::of(displs), rdt);
        prep(sbuf, None, (wide(scount), sdt), rbuf, rl, comm_h)
    }
);

coll_family!(
    neighbor_alltoall,
    comm_h,
    [MPI_Neighbor_alltoall PMPI_Neighbor_alltoall MPI_Ineighbor_alltoall PMPI_Ineighbor_alltoall
     MPI_Neighbor_alltoall_init PMPI_Neighbor_alltoall_init],
    [MPI_Neighbor_alltoall_c PMPI_Neighbor_alltoall_c MPI_Ineighbor_alltoall_c PMPI_Ineighbor_alltoall_c
     MPI_Neighbor_alltoall_init_c PMPI_Neighbor_alltoall_init_c],
    |sbuf: *const c_void, scount: Count, sdt: usize, rbuf: *mut c_void, rcount: Count, rdt: usize, comm_h: usize| {
        let sl = Layout::Equal(wide(scount), sdt);
        prep(sbuf, Some(sl), (0, sdt), rbuf, Layout::Equal(wide(rcount), rdt), comm_h)
    }
);

coll_family!(
    neighbor_alltoallv,
    comm_h,
    [MPI_Neighbor_alltoallv PMPI_Neighbor_alltoallv MPI_Ineighbor_alltoallv PMPI_Ineighbor_alltoallv
     MPI_Neighbor_alltoallv_init PMPI_Neighbor_alltoallv_init],
    [MPI_Neighbor_alltoallv_c PMPI_Neighbor_alltoallv_c MPI_Ineighbor_alltoallv_c PMPI_Ineighbor_alltoallv_c
     MPI_Neighbor_alltoallv_init_c PMPI_Neighbor_alltoallv_init_c],
    |sbuf: *const c_void,
     scounts: *const Count,
     sdispls: *const Displ,
     sdt: usize,
     rbuf: *mut c_void,
     rcounts: *const Count,
     rdispls: *const Displ,
     rdt: usize,
     comm_h: usize| {
        let sl = Layout::V(CArr::of(scounts), CArr::of(sdispls), sdt);
        let rl = Layout::V(CArr::of(rcounts), CArr::of(rdispls), rdt);
        prep(sbuf, Some(sl), (0, sdt), rbuf, rl, comm_h)
    }
);

// The w-form takes MPI_Aint displacements in both bindings.
coll_family!(
    neighbor_alltoallw,
    comm_h,
    [MPI_Neighbor_alltoallw PMPI_Neighbor_alltoallw MPI_Ineighbor_alltoallw PMPI_Ineighbor_alltoallw
     MPI_Neighbor_alltoallw_init PMPI_Neighbor_alltoallw_init],
    [MPI_Neighbor_alltoallw_c PMPI_Neighbor_alltoallw_c MPI_Ineighbor_alltoallw_c PMPI_Ineighbor_alltoallw_c
     MPI_Neighbor_alltoallw_init_c PMPI_Neighbor_alltoallw_init_c],
    |sbuf: *const c_void,
     scounts: *const Count,
     sdispls: *const isize,
     sdts: *const usize,
     rbuf: *mut c_void,
     rcounts: *const Count,
     rdispls: *const isize,
     rdts: *const usize,
     comm_h: usize| {
        let sl = Layout::W(CArr::of(scounts), CArr::of(sdispls), sdts);
        let rl = Layout::W(CArr::of(rcounts), CArr::of(rdispls), rdts);
        prep(sbuf, Some(sl), (0, 0), rbuf, rl, comm_h)
    }
);
