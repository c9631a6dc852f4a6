//! Sorted numbers written as ranges, `0-3,8,10-11`: ranks in deadlock reports, CPUs in the
//! workers' placement.

/// `0-3,8,10-11` for sorted, distinct numbers.
pub fn ranges<T>(r: &[T]) -> String
where
    T: Copy + PartialEq + std::fmt::Display + std::ops::Add<Output = T> + From<u8>,
{
    let mut out = Vec::new();
    let mut i = 0;
    while i < r.len() {
        let mut j = i;
        while j + 1 < r.len() && r[j + 1] == r[j] + T::from(1) {
            j += 1;
        }
        out.push(if i == j { r[i].to_string() } else { format!("{}-{}", r[i], r[j]) });
        i = j + 1;
    }
    out.join(",")
}
