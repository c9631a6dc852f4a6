//! User data representations (`MPI_Register_datarep`, MPI 4.1 section 14.5.3), per subrank:
//! each virtual rank is an MPI process of its own, so two subranks of one process may
//! register the same name (with their own functions, from their own copy of the program).
//!
//! `core` only keeps what was registered; the calls into the program's conversion functions
//! are made by `abi::file::datarep`. The file extent of each basic type comes from the
//! program's extent function through `extent_of`, asked once per type and kept.

use crate::consts as c;
use crate::core::datatype::basic::BasicType;
use crate::core::datatype::Datatype;
use crate::core::error::{err, MpiResult};
use crate::sched::lock::Lock;
use std::collections::HashMap;
use std::sync::Arc;

/// How a representation's file extent of a basic type is found (the program's extent
/// function, called by the ABI layer).
pub type ExtentOf = Box<dyn Fn(BasicType) -> MpiResult<usize> + Send + Sync>;

/// One registered representation.
pub struct UserRep {
    pub name: String,
    /// The subrank that registered it.
    pub owner: usize,
    /// The program's read and write conversion functions (0: `MPI_CONVERSION_FN_NULL`) and
    /// extra state, as addresses; `large`: registered by `MPI_Register_datarep_c`.
    pub read: usize,
    pub write: usize,
    pub extra: usize,
    pub large: bool,
    extent_of: ExtentOf,
    extents: Lock<HashMap<BasicType, usize>>,
}

impl UserRep {
    /// Bytes of one `b` in the file.
    pub fn extent(&self, b: BasicType) -> MpiResult<usize> {
        if let Some(&e) = self.extents.lock().get(&b) {
            return Ok(e);
        }
        let e = (self.extent_of)(b)?;
        self.extents.lock().insert(b, e);
        Ok(e)
    }

    /// Bytes of one element of `d` in the file: its basic elements' file extents, packed.
    pub fn size(&self, d: &Datatype) -> MpiResult<usize> {
        let mut t = 0usize;
        for r in d.runs().iter() {
            t += r.n * self.extent(r.ty)?;
        }
        Ok(t)
    }

    /// Whether every basic type of `d` takes its native size in the file (then `d`'s file
    /// layout is its memory layout).
    pub fn same_sizes(&self, d: &Datatype) -> MpiResult<bool> {
        for r in d.runs().iter() {
            if self.extent(r.ty)? != r.ty.size() || r.ty.size() != r.ty.extent() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Basic elements in one element of `d` (the "data items" a conversion function counts).
pub fn items(d: &Datatype) -> usize {
    d.runs().iter().map(|r| r.n).sum()
}

static REPS: Lock<Vec<Arc<UserRep>>> = Lock::new(Vec::new());

/// The names no program may register.
const PREDEFINED: [&str; 3] = ["native", "internal", "external32"];

/// Registers `name` for subrank `owner`: its index.
#[allow(clippy::too_many_arguments)]
pub fn register(owner: usize, name: &str, read: usize, write: usize, extra: usize, large: bool, extent_of: ExtentOf) -> MpiResult<u32> {
    if name.is_empty() || name.len() >= c::MPI_MAX_DATAREP_STRING as usize {
        return err(
            c::MPI_ERR_ARG,
            format!(
                "data representation name of {} bytes (1 to {} allowed)",
                name.len(),
                c::MPI_MAX_DATAREP_STRING - 1
            ),
        );
    }
    let mut reps = REPS.lock();
    if PREDEFINED.contains(&name) || reps.iter().any(|r| r.owner == owner && r.name == name) {
        return err(c::MPI_ERR_DUP_DATAREP, format!("data representation \"{name}\" is already defined"));
    }
    reps.push(Arc::new(UserRep {
        name: name.to_string(),
        owner,
        read,
        write,
        extra,
        large,
        extent_of,
        extents: Lock::new(HashMap::new()),
    }));
    Ok((reps.len() - 1) as u32)
}

/// The representation `name` registered by subrank `owner`.
pub fn lookup(owner: usize, name: &str) -> Option<u32> {
    REPS.lock()
        .iter()
        .position(|r| r.owner == owner && r.name == name)
        .map(|i| i as u32)
}

pub fn get(id: u32) -> Arc<UserRep> {
    REPS.lock()[id as usize].clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::datatype::basic::BasicType;

    #[test]
    fn per_subrank_names_and_sizes() {
        let ext: fn() -> ExtentOf = || Box::new(|b: BasicType| Ok(if b == BasicType::Int { 8 } else { b.size() }));
        let a = register(9001, "unit-wide", 0, 0, 0, false, ext()).unwrap();
        // The same name at another subrank is another representation.
        let b = register(9002, "unit-wide", 0, 0, 0, false, ext()).unwrap();
        assert_ne!(a, b);
        assert_eq!(
            register(9001, "unit-wide", 0, 0, 0, false, ext()).unwrap_err().class,
            c::MPI_ERR_DUP_DATAREP
        );
        assert_eq!(
            register(9001, "external32", 0, 0, 0, false, ext()).unwrap_err().class,
            c::MPI_ERR_DUP_DATAREP
        );
        assert_eq!(register(9001, "", 0, 0, 0, false, ext()).unwrap_err().class, c::MPI_ERR_ARG);
        assert_eq!(lookup(9002, "unit-wide"), Some(b));
        assert_eq!(lookup(9003, "unit-wide"), None);
        let int = crate::core::datatype::lookup(c::MPI_INT).unwrap();
        let dbl = crate::core::datatype::lookup(c::MPI_DOUBLE).unwrap();
        assert_eq!(get(a).size(&int).unwrap(), 8);
        assert!(!get(a).same_sizes(&int).unwrap());
        assert!(get(a).same_sizes(&dbl).unwrap());
        assert_eq!(items(&int), 1);
    }
}
