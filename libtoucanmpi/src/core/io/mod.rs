//! MPI-IO (chapter 14 of MPI 4.1), the parts below the C boundary: file views over the
//! datatype typemaps (`view`), POSIX access to the file and to the shared-pointer sidecar
//! (`posix`), and the per-process I/O thread that blocking and nonblocking accesses run on so
//! that a subrank waiting for the kernel lets its siblings run (`ioq`). The exports, the file
//! handles and the collective (two-phase) algorithms are in `abi::file`. See docs/io.md.
pub mod datarep;
pub mod filetype;
pub mod ioq;
pub mod posix;
pub mod view;
