//! MPI error classes, their strings, and the error value that core functions return.

use crate::consts as c;

/// An MPI error: its class and a sentence saying what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MpiError {
    pub class: i32,
    pub msg: String,
}

pub type MpiResult<T> = Result<T, MpiError>;

pub fn err<T>(class: i32, msg: impl Into<String>) -> MpiResult<T> {
    Err(MpiError { class, msg: msg.into() })
}

impl MpiError {
    pub fn new(class: i32, msg: impl Into<String>) -> MpiError {
        MpiError { class, msg: msg.into() }
    }
}

/// Name of an error class (`MPI_ERR_RANK`), for messages.
pub fn class_name(class: i32) -> &'static str {
    CLASSES
        .iter()
        .find(|(k, _, _)| *k == class)
        .map(|(_, n, _)| *n)
        .unwrap_or("MPI_ERR_UNKNOWN")
}

/// The text `MPI_Error_string` returns for a class.
pub fn class_text(class: i32) -> &'static str {
    CLASSES
        .iter()
        .find(|(k, _, _)| *k == class)
        .map(|(_, _, t)| *t)
        .unwrap_or("unknown error")
}

pub fn is_valid_class(class: i32) -> bool {
    CLASSES.iter().any(|(k, _, _)| *k == class)
}

const CLASSES: &[(i32, &str, &str)] = &[
    (c::MPI_SUCCESS, "MPI_SUCCESS", "no error"),
    (c::MPI_ERR_BUFFER, "MPI_ERR_BUFFER", "invalid buffer pointer"),
    (c::MPI_ERR_COUNT, "MPI_ERR_COUNT", "invalid count argument"),
    (c::MPI_ERR_TYPE, "MPI_ERR_TYPE", "invalid datatype"),
    (c::MPI_ERR_TAG, "MPI_ERR_TAG", "invalid tag"),
    (c::MPI_ERR_COMM, "MPI_ERR_COMM", "invalid communicator"),
    (c::MPI_ERR_RANK, "MPI_ERR_RANK", "invalid rank"),
    (c::MPI_ERR_REQUEST, "MPI_ERR_REQUEST", "invalid request"),
    (c::MPI_ERR_ROOT, "MPI_ERR_ROOT", "invalid root"),
    (c::MPI_ERR_GROUP, "MPI_ERR_GROUP", "invalid group"),
    (c::MPI_ERR_OP, "MPI_ERR_OP", "invalid operation"),
    (c::MPI_ERR_TOPOLOGY, "MPI_ERR_TOPOLOGY", "invalid topology"),
    (c::MPI_ERR_DIMS, "MPI_ERR_DIMS", "invalid dimension argument"),
    (c::MPI_ERR_ARG, "MPI_ERR_ARG", "invalid argument"),
    (c::MPI_ERR_UNKNOWN, "MPI_ERR_UNKNOWN", "unknown error"),
    (c::MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE", "message truncated"),
    (c::MPI_ERR_OTHER, "MPI_ERR_OTHER", "other error"),
    (c::MPI_ERR_INTERN, "MPI_ERR_INTERN", "internal error"),
    (c::MPI_ERR_PENDING, "MPI_ERR_PENDING", "pending request"),
    (c::MPI_ERR_IN_STATUS, "MPI_ERR_IN_STATUS", "error code is in status"),
    (c::MPI_ERR_ACCESS, "MPI_ERR_ACCESS", "permission denied"),
    (c::MPI_ERR_AMODE, "MPI_ERR_AMODE", "invalid file access mode"),
    (c::MPI_ERR_ASSERT, "MPI_ERR_ASSERT", "invalid assert argument"),
    (c::MPI_ERR_BAD_FILE, "MPI_ERR_BAD_FILE", "invalid file name"),
    (c::MPI_ERR_BASE, "MPI_ERR_BASE", "invalid base address"),
    (c::MPI_ERR_CONVERSION, "MPI_ERR_CONVERSION", "data conversion error"),
    (c::MPI_ERR_DISP, "MPI_ERR_DISP", "invalid displacement"),
    (c::MPI_ERR_DUP_DATAREP, "MPI_ERR_DUP_DATAREP", "data representation already defined"),
    (c::MPI_ERR_FILE_EXISTS, "MPI_ERR_FILE_EXISTS", "file exists"),
    (c::MPI_ERR_FILE_IN_USE, "MPI_ERR_FILE_IN_USE", "file in use"),
    (c::MPI_ERR_FILE, "MPI_ERR_FILE", "invalid file handle"),
    (c::MPI_ERR_INFO_KEY, "MPI_ERR_INFO_KEY", "invalid info key"),
    (c::MPI_ERR_INFO_NOKEY, "MPI_ERR_INFO_NOKEY", "info key not found"),
    (c::MPI_ERR_INFO_VALUE, "MPI_ERR_INFO_VALUE", "invalid info value"),
    (c::MPI_ERR_INFO, "MPI_ERR_INFO", "invalid info object"),
    (c::MPI_ERR_IO, "MPI_ERR_IO", "input/output error"),
    (c::MPI_ERR_KEYVAL, "MPI_ERR_KEYVAL", "invalid attribute key"),
    (c::MPI_ERR_LOCKTYPE, "MPI_ERR_LOCKTYPE", "invalid lock type"),
    (c::MPI_ERR_NAME, "MPI_ERR_NAME", "invalid service name"),
    (c::MPI_ERR_NO_MEM, "MPI_ERR_NO_MEM", "out of memory"),
    (c::MPI_ERR_NOT_SAME, "MPI_ERR_NOT_SAME", "collective arguments not identical"),
    (c::MPI_ERR_NO_SPACE, "MPI_ERR_NO_SPACE", "no space left"),
    (c::MPI_ERR_NO_SUCH_FILE, "MPI_ERR_NO_SUCH_FILE", "no such file"),
    (c::MPI_ERR_PORT, "MPI_ERR_PORT", "invalid port"),
    (c::MPI_ERR_PROC_ABORTED, "MPI_ERR_PROC_ABORTED", "process aborted"),
    (c::MPI_ERR_QUOTA, "MPI_ERR_QUOTA", "quota exceeded"),
    (c::MPI_ERR_READ_ONLY, "MPI_ERR_READ_ONLY", "read-only file"),
    (c::MPI_ERR_RMA_ATTACH, "MPI_ERR_RMA_ATTACH", "memory cannot be attached"),
    (c::MPI_ERR_RMA_CONFLICT, "MPI_ERR_RMA_CONFLICT", "conflicting accesses to window"),
    (c::MPI_ERR_RMA_RANGE, "MPI_ERR_RMA_RANGE", "target memory not in window"),
    (c::MPI_ERR_RMA_SHARED, "MPI_ERR_RMA_SHARED", "memory cannot be shared"),
    (c::MPI_ERR_RMA_SYNC, "MPI_ERR_RMA_SYNC", "wrong synchronization of RMA calls"),
    (c::MPI_ERR_RMA_FLAVOR, "MPI_ERR_RMA_FLAVOR", "wrong window flavor"),
    (c::MPI_ERR_SERVICE, "MPI_ERR_SERVICE", "invalid service"),
    (c::MPI_ERR_SESSION, "MPI_ERR_SESSION", "invalid session"),
    (c::MPI_ERR_SIZE, "MPI_ERR_SIZE", "invalid size"),
    (c::MPI_ERR_SPAWN, "MPI_ERR_SPAWN", "spawn error"),
    (
        c::MPI_ERR_UNSUPPORTED_DATAREP,
        "MPI_ERR_UNSUPPORTED_DATAREP",
        "unsupported data representation",
    ),
    (
        c::MPI_ERR_UNSUPPORTED_OPERATION,
        "MPI_ERR_UNSUPPORTED_OPERATION",
        "unsupported operation",
    ),
    (c::MPI_ERR_VALUE_TOO_LARGE, "MPI_ERR_VALUE_TOO_LARGE", "value too large"),
    (c::MPI_ERR_WIN, "MPI_ERR_WIN", "invalid window"),
    (c::MPI_ERR_ERRHANDLER, "MPI_ERR_ERRHANDLER", "invalid error handler"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(c::MPI_ERR_RANK, "MPI_ERR_RANK")]
    #[case(c::MPI_ERR_TRUNCATE, "MPI_ERR_TRUNCATE")]
    #[case(12345, "MPI_ERR_UNKNOWN")]
    fn names(#[case] class: i32, #[case] name: &str) {
        assert_eq!(class_name(class), name);
    }

    #[test]
    fn classes_are_distinct() {
        let mut v: Vec<i32> = CLASSES.iter().map(|x| x.0).collect();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), CLASSES.len());
    }
}
