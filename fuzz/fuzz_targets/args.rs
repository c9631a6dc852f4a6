//! Fuzz target: the argument-checking layer. Arbitrary integers as handles, counts, ranks,
//! tags, operations, datatypes, orders and distributions go through the checks every MPI
//! call uses; arbitrary bytes go through the wire header decoder; arbitrary sequences of
//! insertions, removals and stale lookups go through the request slab; arbitrary graphs and
//! grids through the topology checks. Nothing may panic, valid values must be accepted and
//! invalid ones refused with the MPI error class the call reports.
#![no_main]

use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use toucanmpi::abi::consts as c;
use toucanmpi::abi::handles as hd;
use toucanmpi::core::coll::op::OpKind;
use toucanmpi::core::request::{Request, Slab};
use toucanmpi::core::datatype::{self, typemap};
use toucanmpi::core::{errh, topo};
use toucanmpi::transport::wire::{self, Header};

fn handles(u: &mut Unstructured) -> Result<()> {
    let h: usize = match u.int_in_range(0u8..=3)? {
        0 => u.int_in_range(0usize..=0x1000)?,
        1 => u.arbitrary::<u32>()? as usize,
        _ => u.arbitrary()?,
    };
    if let Some(i) = hd::comm_index(h) {
        assert_eq!(hd::comm_index(hd::comm_handle(i)), Some(i), "comm handle {h:#x}");
    }
    if let Some(i) = hd::group_index(h) {
        assert!(i < 0x1000_0000);
    }
    match datatype::lookup(h) {
        Ok(d) => assert!(
            d.committed && datatype::predefined(h).is_some(),
            "type {h:#x} without being created"
        ),
        Err(e) => assert_eq!(e.class, c::MPI_ERR_TYPE, "type {h:#x}"),
    }
    match hd::op(h) {
        Ok(k) => assert_eq!(OpKind::from_handle(h), Some(k)),
        Err(e) => assert_eq!(e.class, c::MPI_ERR_OP, "op {h:#x}"),
    }
    let _ = errh::is_valid(h);
    if h < 256 || h == usize::MAX {
        let _ = errh::user(h);
    }
    Ok(())
}

fn numbers(u: &mut Unstructured) -> Result<()> {
    let n: i64 = u.arbitrary()?;
    match hd::count(n) {
        Ok(k) => assert_eq!(k as i64, n),
        Err(e) => assert!(n < 0 && e.class == c::MPI_ERR_COUNT),
    }
    let t: i32 = u.arbitrary()?;
    assert_eq!(hd::send_tag(t).is_ok(), t >= 0);
    match hd::recv_tag(t) {
        Ok(()) => assert!(t >= 0 || t == c::MPI_ANY_TAG),
        Err(e) => assert_eq!(e.class, c::MPI_ERR_TAG),
    }
    let o: i32 = u.arbitrary()?;
    assert_eq!(
        typemap::Order::from_abi(o).is_ok(),
        o == c::MPI_ORDER_C || o == c::MPI_ORDER_FORTRAN
    );
    let (d, a): (i32, i32) = (u.arbitrary()?, u.arbitrary()?);
    if let Err(e) = typemap::Distrib::from_abi(d, a) {
        assert_eq!(e.class, c::MPI_ERR_ARG);
    }
    let p = if u.arbitrary()? { std::ptr::null() } else { 8 as *const u8 };
    let k: usize = u.int_in_range(0usize..=4)?;
    let dt = datatype::lookup(c::MPI_INT).expect("MPI_INT");
    match hd::buffer(p, k, &dt) {
        Ok(()) => assert!(!p.is_null() || k == 0),
        Err(e) => assert_eq!(e.class, c::MPI_ERR_BUFFER),
    }
    Ok(())
}

fn header(u: &mut Unstructured) -> Result<()> {
    let bytes: Vec<u8> = u.arbitrary()?;
    match Header::from_bytes(&bytes) {
        Some(h) => {
            assert!(bytes.len() >= wire::HDR_LEN);
            assert_eq!(&h.to_bytes()[..], &bytes[..wire::HDR_LEN]);
        }
        None => assert!(bytes.len() < wire::HDR_LEN),
    }
    let tag: i32 = u.arbitrary()?;
    let hi: u32 = u.arbitrary()?;
    let (d, s) = wire::split_subs(tag, hi);
    assert!(d < wire::MAX_SUBS && s < wire::MAX_SUBS);
    assert_eq!(wire::ctrl_tag(d, s), tag & 0xffff);
    assert_eq!(wire::sub_hi(d, s), hi);
    Ok(())
}

fn slab(u: &mut Unstructured) -> Result<()> {
    let mut s = Slab::default();
    let mut live: Vec<u64> = Vec::new();
    let mut dead: Vec<u64> = Vec::new();
    for _ in 0..u.int_in_range(0usize..=64)? {
        match u.int_in_range(0u8..=3)? {
            0 | 1 => live.push(s.insert(Request::new(u.int_in_range(0usize..=3)?, 0))),
            2 if !live.is_empty() => {
                let i = u.choose_index(live.len())?;
                let id = live.swap_remove(i);
                assert!(s.remove(id).is_some(), "a live request could not be removed");
                dead.push(id);
            }
            _ => {
                let id: u64 = u.arbitrary()?;
                if !live.contains(&id) {
                    assert!(s.get(id).is_none(), "id {id:#x} found, which is not a live request");
                }
            }
        }
        for &id in &dead {
            assert!(s.get(id).is_none(), "a removed request {id:#x} is still found");
        }
        assert_eq!(s.live(), live.len());
    }
    Ok(())
}

fn topology(u: &mut Unstructured) -> Result<()> {
    let n = u.int_in_range(0usize..=6)?;
    let mut index = Vec::new();
    for _ in 0..n {
        index.push(u.int_in_range(-2i32..=12)?);
    }
    let m = u.int_in_range(0usize..=12)?;
    let mut edges = Vec::new();
    for _ in 0..m {
        edges.push(u.int_in_range(-2i32..=8)?);
    }
    if topo::check_graph(&index, &edges).is_ok() {
        for r in 0..n as i32 {
            for &e in topo::graph_neighbours(&index, &edges, r) {
                assert!((0..n as i32).contains(&e), "neighbour {e} of {r} outside the graph");
            }
        }
    }
    let nnodes = u.int_in_range(-2i32..=5000)?;
    let mut dims: Vec<i32> = (0..u.int_in_range(0usize..=4)?)
        .map(|_| u.int_in_range(-1i32..=7).unwrap_or(0))
        .collect();
    let fixed = dims.clone();
    // (No dimensions at all is accepted and left alone, as MPICH does.)
    if topo::dims_create(nnodes, &mut dims).is_ok() && !dims.is_empty() {
        assert_eq!(
            dims.iter().map(|&d| d as i64).product::<i64>(),
            nnodes as i64,
            "{fixed:?} -> {dims:?}"
        );
        for (a, b) in fixed.iter().zip(&dims) {
            assert!(*a == 0 || a == b, "a fixed dimension changed: {fixed:?} -> {dims:?}");
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    while !u.is_empty() {
        let r = match u.int_in_range(0u8..=4) {
            Ok(0) => handles(&mut u),
            Ok(1) => numbers(&mut u),
            Ok(2) => header(&mut u),
            Ok(3) => slab(&mut u),
            Ok(_) => topology(&mut u),
            Err(_) => break,
        };
        if r.is_err() {
            break;
        }
    }
});
