//! Settings for UCX (under MPICH's ch4:ucx), made in our environment before the real MPI is
//! loaded; each only when the user set none. Other real MPIs ignore them.

/// `UCX_RNDV_THRESH` for the real MPI when the user confined UCX to TCP (`tcp_only`) and set
/// no threshold: halo faces of an overdecomposed stencil (51-102 KB in bench/jacobi3d at
/// V=2-4) go eagerly. Measured over TCP at 1 Gbit/s (bench/netns.sh, median of 3): jacobi3d
/// `toucan` V=2 0.218 -> 0.192 s, V=4 0.195 -> 0.167 s; cannon2d (MB-sized messages)
/// unchanged. Not over shared memory: there UCX's rendezvous is a single copy by CMA and
/// eager 64 KiB messages measured 3x slower (pingpong, 10.5 -> 36 us).
const UCX_RNDV_THRESH: &str = "256k";

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
}

#[cfg(test)]
mod tests {
    use super::tcp_only;
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
}
