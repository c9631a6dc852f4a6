//! Settings for UCX (under MPICH's ch4:ucx), made in our environment before the real MPI is
//! loaded; each only when the user set none. Other real MPIs ignore them.

/// `UCX_RNDV_THRESH` for the real MPI when the user confined UCX to TCP (`tcp_only`) and set
/// no threshold: halo faces of an overdecomposed stencil (51-102 KB in bench/jacobi3d at
/// V=2-4) go eagerly. Measured over TCP at 1 Gbit/s (bench/netns.sh, median of 3): jacobi3d
/// `toucan` V=2 0.218 -> 0.192 s, V=4 0.195 -> 0.167 s; cannon2d (MB-sized messages)
/// unchanged. Not over shared memory: there UCX's rendezvous is a single copy by CMA and
/// eager 64 KiB messages measured 3x slower (pingpong, 10.5 -> 36 us).
const UCX_RNDV_THRESH: &str = "256k";

/// `UCX_MM_FIFO_ELEM_SIZE` (UCX's default: 128 bytes, header included) for the shared-memory
/// transports: every message between processes carries our 48-byte header (`wire::Header`)
/// in front of its payload, so with 128-byte elements a 64-byte message (112 bytes on the
/// wire) no longer fits UCX's short path and goes by `uct_mm_ep_am_bcopy`, while plain
/// MPICH's 64 bytes still go short (seen with callgrind: a 64 B ping-pong under Toucan calls
/// am_bcopy only, under MPICH am_short only; with 256, Toucan's 8, 64 and 128 B messages all
/// go short). Costs 8 KiB more per peer's FIFO (64 elements).
const UCX_MM_FIFO_ELEM_SIZE: &str = "256";

/// Whether `UCX_TLS` (a comma-separated list of transports) allows TCP sockets only.
fn tcp_only(tls: &str) -> bool {
    let mut any = false;
    for t in tls.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match t.to_ascii_lowercase().as_str() {
            "tcp" => any = true,
            "self" => {}
            _ => return false,
        }
    }
    any
}

/// Whether `UCX_TLS` (unset: every transport) lets UCX use its shared-memory FIFOs (the mm
/// transports `posix`/`sysv`, also named by `sm`, `shm`, `mm` and `all`); UCX warns about a
/// variable of a transport it does not use, so `UCX_MM_FIFO_ELEM_SIZE` is set only then.
fn uses_mm(tls: Option<&str>) -> bool {
    let Some(tls) = tls.map(str::trim).filter(|t| !t.is_empty()) else {
        return true;
    };
    let (exclude, list) = match tls.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, tls),
    };
    let names: Vec<String> = list.split(',').map(|t| t.trim().to_ascii_lowercase()).collect();
    let has = |set: &[&str]| names.iter().any(|n| set.contains(&n.as_str()));
    if exclude {
        !has(&["sm", "shm", "mm"]) && !(has(&["posix"]) && has(&["sysv"]))
    } else {
        has(&["all", "sm", "shm", "mm", "posix", "sysv"])
    }
}

/// Sets them; call before the real MPI is loaded, while the process has one thread.
pub fn prepare_env() {
    // UCX installs its own SIGSEGV/SIGBUS handlers, which print a backtrace and would hide
    // our stack-overflow report; unless the user asked for them, leave the fault handling
    // to us.
    if std::env::var_os("UCX_HANDLE_ERRORS").is_none() {
        std::env::set_var("UCX_HANDLE_ERRORS", "none");
    }
    // UCX's rendezvous over TCP needs the sender to answer the receiver's request before the
    // bytes move; an overdecomposed process answers only between subranks or from its
    // progress thread, so the link idles meanwhile. Sent eagerly, the kernel moves them
    // without either side polling. Only when every UCX path is a socket, and unless the user
    // chose a threshold (`UCX_RNDV_THRESH=auto` keeps UCX's own).
    if std::env::var_os("UCX_RNDV_THRESH").is_none() && std::env::var("UCX_TLS").is_ok_and(|t| tcp_only(&t)) {
        std::env::set_var("UCX_RNDV_THRESH", UCX_RNDV_THRESH);
    }
    if std::env::var_os("UCX_MM_FIFO_ELEM_SIZE").is_none() && uses_mm(std::env::var("UCX_TLS").ok().as_deref()) {
        std::env::set_var("UCX_MM_FIFO_ELEM_SIZE", UCX_MM_FIFO_ELEM_SIZE);
    }
}

#[cfg(test)]
mod tests {
    use super::{tcp_only, uses_mm};
    use rstest::rstest;

    #[rstest]
    #[case::tcp("tcp", true)]
    #[case::tcp_self("self, TCP", true)]
    #[case::shm_too("tcp,shm", false)]
    #[case::all_but_shm("^shm", false)]
    #[case::rdma("rc,tcp", false)]
    #[case::empty("", false)]
    fn tls_lists(#[case] tls: &str, #[case] want: bool) {
        assert_eq!(tcp_only(tls), want);
    }

    #[rstest]
    #[case::unset(None, true)]
    #[case::empty(Some(""), true)]
    #[case::tcp(Some("tcp"), false)]
    #[case::shm(Some("shm,self"), true)]
    #[case::sm_upper(Some("SM,tcp"), true)]
    #[case::posix(Some("posix"), true)]
    #[case::all(Some("all"), true)]
    #[case::rdma(Some("rc,ud,self"), false)]
    #[case::not_shm(Some("^shm"), false)]
    #[case::not_both(Some("^posix,sysv"), false)]
    #[case::not_posix(Some("^posix"), true)]
    #[case::not_tcp(Some("^tcp"), true)]
    fn mm_in_use(#[case] tls: Option<&str>, #[case] want: bool) {
        assert_eq!(uses_mm(tls), want);
    }
}
