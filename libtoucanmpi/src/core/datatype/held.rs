//! A datatype held by a call or a request (session 26): the static table's own `Arc` of a
//! predefined type, taken and dropped without touching its reference count, or a counted
//! clone of a derived one. Every receive request of a predefined type (the message rate's
//! case) and the nonblocking pair collectives cloned the table's `Arc` and dropped it again:
//! two atomic read-modify-writes on one cache line per receive that cost time without
//! showing in instruction counts. smp7 found the same in the team calls (`abi::collteam`).

use super::{lookup, predefined_arc, DtRef};
use crate::consts as c;
use crate::core::error::{err, MpiResult};

#[derive(Clone)]
pub enum Held {
    Table(&'static DtRef),
    Derived(DtRef),
}

impl Held {
    /// The committed datatype handle `h` names (MPI_ERR_TYPE otherwise).
    #[inline(always)]
    pub fn of(h: usize) -> MpiResult<Held> {
        match predefined_arc(h) {
            Some(d) => Ok(Held::Table(d)),
            None => committed(h).map(Held::Derived),
        }
    }

    /// A counted `Arc`, for what outlives the call and needs one.
    #[inline(always)]
    pub fn arc(&self) -> DtRef {
        DtRef::clone(self)
    }

    #[inline(always)]
    pub fn predefined(&self) -> bool {
        matches!(self, Held::Table(_))
    }
}

impl std::ops::Deref for Held {
    type Target = DtRef;

    #[inline(always)]
    fn deref(&self) -> &DtRef {
        match self {
            Held::Table(d) => d,
            Held::Derived(d) => d,
        }
    }
}

impl From<DtRef> for Held {
    #[inline(always)]
    fn from(d: DtRef) -> Held {
        Held::Derived(d)
    }
}

/// The datatype handle `h` names when it is committed (MPI_ERR_TYPE otherwise).
pub fn committed(h: usize) -> MpiResult<DtRef> {
    let d = lookup(h)?;
    if !d.committed {
        return err(c::MPI_ERR_TYPE, format!("datatype {} is not committed", d.name));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::Held;
    use crate::consts as c;
    use rstest::rstest;

    /// A predefined type is held as the table's own `Arc`; anything else that is not a
    /// committed type is MPI_ERR_TYPE.
    #[rstest]
    #[case(c::MPI_INT, Some((true, 4)))]
    #[case(c::MPI_DOUBLE, Some((true, 8)))]
    #[case(c::MPI_DATATYPE_NULL, None)]
    #[case(0x7fff_fff0, None)]
    fn held(#[case] h: usize, #[case] want: Option<(bool, usize)>) {
        match Held::of(h) {
            Ok(d) => {
                assert_eq!(Some((d.predefined(), d.size)), want);
                // (Counts are not compared: tests running beside this one clone the table's types.)
                let table = super::predefined_arc(h).expect("a predefined type");
                assert!(std::sync::Arc::ptr_eq(&d.clone(), table) && std::sync::Arc::ptr_eq(&d.arc(), table));
            }
            Err(e) => {
                assert_eq!(want, None);
                assert_eq!(e.class, c::MPI_ERR_TYPE);
            }
        }
    }
}
