//! `Toucan_Region` (toucan.h): hints that mark receive / send / compute regions, applied by
//! `core::region`. Hints never change results. Outside `MPI_Init`..`MPI_Finalize` they do
//! nothing; an unknown kind is an `MPI_ERR_ARG` error, raised on `MPI_COMM_WORLD`.

use super::consts as c;
use crate::core::error::err;
use crate::core::region::{self, Hint};
use crate::core::state;
use crate::sched;
use std::os::raw::c_int;

const RECEIVE: c_int = 1;
const SEND: c_int = 2;
const COMPUTE: c_int = 3;
const END: c_int = 4;

mpi_fn!(Toucan_Region, PToucan_Region, |kind: c_int| errcomm = c::MPI_COMM_WORLD, {
    let hint = match kind {
        RECEIVE => Hint::Receive,
        SEND => Hint::Send,
        COMPUTE => Hint::Compute,
        END => Hint::End,
        _ => {
            return err(
                c::MPI_ERR_ARG,
                format!("unknown region kind {kind} (expected TOUCAN_RECEIVE, TOUCAN_SEND, TOUCAN_COMPUTE or TOUCAN_END)"),
            )
        }
    };
    // Regions schedule the subrank's own coroutine: ignored in the program's other threads.
    let sub = sched::current();
    let active = sched::in_coroutine() && state::with(|s| s.locals[sub].initialized && !s.locals[sub].finalized).unwrap_or(false);
    if active {
        region::enter(sub, hint)?;
    }
    Ok(())
});
