//! The overlap report (`TOUCAN_REPORT`): where each process's time went, made when the
//! process ends (after every subrank's `MPI_Finalize`). `TOUCAN_REPORT=1` prints a table on
//! stderr (from process 0); any other value except `0` names a JSON file that process 0
//! writes. The numbers come from `sched::metrics`; processes exchange theirs with one real
//! `MPI_Allgather` just before the real MPI is finalized.

use crate::sched::metrics::{self, PerKind, Totals, WorkerTotals, KINDS, KIND_NAMES};
use std::fmt::Write as _;

/// Where the report goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Text,
    Json(String),
}

/// The report asked for by the environment at start-up, if any (read once, so that a
/// program changing its environment cannot make processes disagree about the exchange).
pub fn wanted() -> Option<Target> {
    static WANTED: std::sync::OnceLock<Option<Target>> = std::sync::OnceLock::new();
    WANTED
        .get_or_init(|| parse(&std::env::var("TOUCAN_REPORT").unwrap_or_default()))
        .clone()
}

fn parse(v: &str) -> Option<Target> {
    match v.trim() {
        "" | "0" | "off" | "no" => None,
        "1" | "on" | "yes" | "text" => Some(Target::Text),
        path => Some(Target::Json(path.to_string())),
    }
}

/// One process's numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub t: Totals,
    pub sent: u64,
    pub received: u64,
    /// The process's page faults while its subranks ran: minor, major.
    pub faults: [u64; 2],
    /// Peak heap bytes of each of its subranks (0 with `TOUCAN_HEAP=system`).
    pub heap_peak: Vec<u64>,
}

/// The process's page faults (minor, major) so far.
fn faults_now() -> [u64; 2] {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    [ru.ru_minflt as u64, ru.ru_majflt as u64]
}

static FAULTS0: [std::sync::atomic::AtomicU64; 2] = [const { std::sync::atomic::AtomicU64::new(0) }; 2];

/// Called when the subranks start (with the report on): page faults count from here, and the
/// subranks' heaps count their bytes.
pub fn memory_start() {
    let f = faults_now();
    for (a, v) in FAULTS0.iter().zip(f) {
        a.store(v, std::sync::atomic::Ordering::Relaxed);
    }
    crate::heap::stats::enable();
}

fn faults_since_start() -> [u64; 2] {
    let f = faults_now();
    std::array::from_fn(|i| f[i].saturating_sub(FAULTS0[i].load(std::sync::atomic::Ordering::Relaxed)))
}

/// Words per row on the wire: 5 times, 7 counts, then 3 per region kind, 2 page fault
/// counts; then one peak heap size per subrank of the process, then 3 per worker (compute,
/// blocked, steals).
const HEAD: usize = 13;
const WORDS: usize = HEAD + 3 * KINDS + 2;

impl Row {
    fn to_words(&self) -> Vec<f64> {
        let t = &self.t;
        let mut w = vec![0.0; WORDS];
        let head = [
            t.wall,
            t.compute,
            t.blocked,
            t.waiting,
            t.helpers,
            t.switches as f64,
            t.parks as f64,
            t.subranks as f64,
            self.sent as f64,
            self.received as f64,
            t.workers as f64,
            t.steals as f64,
            t.moves as f64,
        ];
        w[..HEAD].copy_from_slice(&head);
        for (k, pk) in t.kinds.iter().enumerate() {
            w[HEAD + 3 * k] = pk.run;
            w[HEAD + 1 + 3 * k] = pk.blocked;
            w[HEAD + 2 + 3 * k] = pk.entries as f64;
        }
        w[WORDS - 2] = self.faults[0] as f64;
        w[WORDS - 1] = self.faults[1] as f64;
        w.extend(self.heap_peak.iter().map(|&b| b as f64));
        for pw in &t.per_worker {
            w.extend([pw.compute, pw.blocked, pw.steals as f64]);
        }
        w
    }

    fn from_words(w: &[f64]) -> Row {
        let mut kinds = [PerKind::default(); KINDS];
        let subranks = w[7] as usize;
        let heap_end = (WORDS + subranks).min(w.len());
        let per_worker = w[heap_end..]
            .chunks_exact(3)
            .map(|c| WorkerTotals {
                compute: c[0],
                blocked: c[1],
                steals: c[2] as u64,
            })
            .collect();
        for (k, pk) in kinds.iter_mut().enumerate() {
            *pk = PerKind {
                run: w[HEAD + 3 * k],
                blocked: w[HEAD + 1 + 3 * k],
                entries: w[HEAD + 2 + 3 * k] as u64,
            };
        }
        Row {
            t: Totals {
                wall: w[0],
                compute: w[1],
                blocked: w[2],
                waiting: w[3],
                helpers: w[4],
                switches: w[5] as u64,
                parks: w[6] as u64,
                subranks,
                workers: w[10] as usize,
                steals: w[11] as u64,
                moves: w[12] as u64,
                kinds,
                per_worker,
            },
            sent: w[8] as u64,
            received: w[9] as u64,
            faults: [w[WORDS - 2] as u64, w[WORDS - 1] as u64],
            heap_peak: w[WORDS..heap_end].iter().map(|&b| b as u64).collect(),
        }
    }

    /// Adds `o` (for the job's sum).
    fn add(&mut self, o: &Row) {
        let (t, u) = (&mut self.t, &o.t);
        t.wall += u.wall;
        t.compute += u.compute;
        t.blocked += u.blocked;
        t.waiting += u.waiting;
        t.helpers += u.helpers;
        t.switches += u.switches;
        t.parks += u.parks;
        t.subranks += u.subranks;
        // Per process (worker-seconds of the sum are its wall times this).
        t.workers = t.workers.max(u.workers);
        t.steals += u.steals;
        t.moves += u.moves;
        for (a, b) in t.kinds.iter_mut().zip(u.kinds.iter()) {
            a.run += b.run;
            a.blocked += b.blocked;
            a.entries += b.entries;
        }
        self.sent += o.sent;
        self.received += o.received;
        self.faults[0] += o.faults[0];
        self.faults[1] += o.faults[1];
        self.heap_peak.extend_from_slice(&o.heap_peak);
    }

    /// Share of the time spent waiting for messages during which other subranks worked:
    /// (waiting - blocked) / waiting; None when nobody waited.
    pub fn hidden(&self) -> Option<f64> {
        let t = &self.t;
        (t.waiting > 0.0).then(|| ((t.waiting - t.blocked) / t.waiting).clamp(0.0, 1.0))
    }

    fn regions_used(&self) -> bool {
        self.t.kinds[1..].iter().any(|k| k.entries > 0)
    }
}

/// Makes the report for this process's share of the job (collective over the processes).
pub fn finish(s: &mut super::state::State) {
    let Some(target) = wanted() else { return };
    let Some(t) = metrics::totals() else { return };
    let mine = Row {
        sent: s.tp.ctrl_sent,
        received: s.tp.ctrl_recvd,
        faults: faults_since_start(),
        heap_peak: (0..t.subranks).map(|k| crate::heap::stats::peak(k) as u64).collect(),
        t,
    };
    let per = WORDS + mine.heap_peak.len() + 3 * mine.t.per_worker.len();
    let words = mine.to_words();
    let bytes: Vec<u8> = words.iter().flat_map(|x| x.to_ne_bytes()).collect();
    let all = match s.tp.allgather(&bytes) {
        Ok(a) => a,
        Err(e) => {
            crate::core::diag::say(&format!("toucan: report: {e}\n"));
            return;
        }
    };
    if s.myproc != 0 {
        return;
    }
    let rows: Vec<Row> = all
        .chunks_exact(per * 8)
        .map(|c| {
            let w: Vec<f64> = c
                .chunks_exact(8)
                .map(|b| f64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
                .collect();
            Row::from_words(&w)
        })
        .collect();
    match target {
        Target::Text => crate::core::diag::say(&text(&rows, s.cfg.v)),
        Target::Json(path) => {
            if let Err(e) = std::fs::write(&path, json(&rows, s.cfg.v)) {
                crate::core::diag::say(&format!("toucan: report: cannot write {path}: {e}\n"));
            }
        }
    }
}

fn sum(rows: &[Row]) -> Row {
    let mut total = Row::default();
    rows.iter().for_each(|r| total.add(r));
    total
}

fn pct(x: Option<f64>) -> String {
    x.map(|h| format!("{:.1}%", 100.0 * h)).unwrap_or_else(|| "-".into())
}

/// The table printed for `TOUCAN_REPORT=1`.
pub fn text(rows: &[Row], v: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "toucan report: {} process(es) x {v} subrank(s); seconds from start-up to the end of the last subrank",
        rows.len()
    );
    let _ = writeln!(
        o,
        "{:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10} {:>10} {:>8} {:>6}",
        "process", "wall", "compute", "blocked", "runtime", "waiting", "hidden", "switches", "messages", "steals", "moves"
    );
    let total = sum(rows);
    let named = rows.iter().enumerate().map(|(i, r)| (i.to_string(), r));
    for (name, r) in named.chain(std::iter::once(("sum".to_string(), &total))) {
        let t = &r.t;
        let _ = writeln!(
            o,
            "{name:>8} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>7} {:>10} {:>10} {:>8} {:>6}",
            t.wall,
            t.compute,
            t.blocked,
            t.runtime(),
            t.waiting,
            pct(r.hidden()),
            t.switches,
            r.sent,
            t.steals,
            t.moves
        );
    }
    if total.regions_used() {
        let _ = writeln!(o, "regions (summed over subranks): run / blocked seconds, entries");
        for (name, r) in rows
            .iter()
            .enumerate()
            .map(|(i, r)| (i.to_string(), r))
            .chain(std::iter::once(("sum".to_string(), &total)))
        {
            let mut line = format!("{name:>8}");
            for (k, pk) in r.t.kinds.iter().enumerate() {
                let _ = write!(line, "  {}: {:.4} / {:.4}, {}", KIND_NAMES[k], pk.run, pk.blocked, pk.entries);
            }
            let _ = writeln!(o, "{line}");
        }
    }
    if rows.iter().any(|r| r.t.per_worker.len() > 1) {
        let _ = writeln!(o, "workers (SMP mode): compute / blocked seconds, steals");
        for (i, r) in rows.iter().enumerate() {
            let mut line = format!("{i:>8}");
            for (w, pw) in r.t.per_worker.iter().enumerate() {
                let _ = write!(line, "  {w}: {:.4} / {:.4}, {}", pw.compute, pw.blocked, pw.steals);
            }
            let _ = writeln!(o, "{line}");
        }
    }
    let _ = writeln!(
        o,
        "memory: page faults while the subranks ran (minor / major); peak heap per virtual rank (MiB)"
    );
    let mut first = 0;
    for (i, r) in rows.iter().enumerate() {
        let peaks: Vec<String> = r.heap_peak.iter().map(|&b| format!("{:.1}", b as f64 / (1 << 20) as f64)).collect();
        let ranks = if r.heap_peak.is_empty() {
            String::new()
        } else {
            format!("; ranks {}-{}: {}", first, first + r.heap_peak.len() - 1, peaks.join(" "))
        };
        first += r.heap_peak.len();
        let _ = writeln!(o, "{i:>8} faults {} / {}{ranks}", r.faults[0], r.faults[1]);
    }
    let _ = writeln!(o, "{:>8} faults {} / {}", "sum", total.faults[0], total.faults[1]);
    let _ = writeln!(
        o,
        "compute: subranks running (MPI calls' own work included); blocked: nothing to run; runtime: the rest \
         (switches, polls, nonblocking collectives); waiting: some subrank waited for a message; hidden: share of \
         waiting not blocked"
    );
    o
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "null".into()
    }
}

fn json_row(o: &mut String, r: &Row, process: Option<usize>) {
    let t = &r.t;
    o.push('{');
    if let Some(p) = process {
        let _ = write!(o, "\"process\": {p}, ");
    }
    let _ = write!(
        o,
        "\"subranks\": {}, \"wall_s\": {}, \"compute_s\": {}, \"blocked_s\": {}, \"runtime_s\": {}, \"helpers_s\": {}, \
         \"waiting_s\": {}, \"hidden_share\": {}, \"switches\": {}, \"parks\": {}, \"messages_sent\": {}, \
         \"messages_received\": {}, \"workers\": {}, \"steals\": {}, \"moves\": {}, \"minor_faults\": {}, \"major_faults\": {}, \
         \"heap_peak_bytes\": [{}], \"per_worker\": [{}], \"regions\": ",
        t.subranks,
        num(t.wall),
        num(t.compute),
        num(t.blocked),
        num(t.runtime()),
        num(t.helpers),
        num(t.waiting),
        r.hidden().map(num).unwrap_or_else(|| "null".into()),
        t.switches,
        t.parks,
        r.sent,
        r.received,
        t.workers,
        t.steals,
        t.moves,
        r.faults[0],
        r.faults[1],
        r.heap_peak.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(", "),
        t.per_worker
            .iter()
            .enumerate()
            .map(|(w, pw)| format!(
                "{{\"worker\": {w}, \"compute_s\": {}, \"blocked_s\": {}, \"steals\": {}}}",
                num(pw.compute),
                num(pw.blocked),
                pw.steals
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if r.regions_used() {
        o.push('{');
        for (k, pk) in t.kinds.iter().enumerate() {
            let sep = if k + 1 < KINDS { ", " } else { "" };
            let _ = write!(
                o,
                "\"{}\": {{\"run_s\": {}, \"blocked_s\": {}, \"entries\": {}}}{sep}",
                KIND_NAMES[k],
                num(pk.run),
                num(pk.blocked),
                pk.entries
            );
        }
        o.push('}');
    } else {
        o.push_str("null");
    }
    o.push('}');
}

/// The JSON document written for `TOUCAN_REPORT=file.json`.
pub fn json(rows: &[Row], v: usize) -> String {
    let mut o = String::new();
    let _ = write!(o, "{{\"v\": {v}, \"processes\": {}, \"per_process\": [", rows.len());
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            o.push_str(", ");
        }
        json_row(&mut o, r, Some(i));
    }
    o.push_str("], \"total\": ");
    json_row(&mut o, &sum(rows), None);
    o.push_str("}\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    fn row(wall: f64, compute: f64, blocked: f64, waiting: f64) -> Row {
        let mut t = Totals {
            wall,
            compute,
            blocked,
            waiting,
            switches: 10,
            subranks: 2,
            workers: 2,
            per_worker: vec![
                WorkerTotals {
                    compute: 0.75,
                    blocked: 0.125,
                    steals: 3,
                },
                WorkerTotals {
                    compute: 0.5,
                    blocked: 0.25,
                    steals: 0,
                },
            ],
            ..Default::default()
        };
        t.kinds[3] = PerKind {
            run: 0.5,
            blocked: 0.25,
            entries: 3,
        };
        Row {
            t,
            sent: 4,
            received: 5,
            faults: [100, 1],
            heap_peak: vec![1 << 20, 3 << 20],
        }
    }

    #[rstest]
    #[case::all_hidden(1.0, 0.0, Some(1.0))]
    #[case::none_hidden(1.0, 1.0, Some(0.0))]
    #[case::quarter(0.8, 0.6, Some(0.25))]
    #[case::nobody_waited(0.0, 0.0, None)]
    #[case::clamped(0.5, 0.7, Some(0.0))]
    fn hidden_share(#[case] waiting: f64, #[case] blocked: f64, #[case] want: Option<f64>) {
        let r = row(2.0, 1.0, blocked, waiting);
        match (r.hidden(), want) {
            (Some(a), Some(b)) => assert!((a - b).abs() < 1e-12, "{a} != {b}"),
            (a, b) => assert_eq!(a, b),
        }
    }

    #[rstest]
    #[case("", None)]
    #[case("0", None)]
    #[case("1", Some(Target::Text))]
    #[case("out/r.json", Some(Target::Json("out/r.json".into())))]
    fn targets(#[case] v: &str, #[case] want: Option<Target>) {
        assert_eq!(parse(v), want);
    }

    #[test]
    fn words_round_trip_and_sum() {
        let a = row(2.0, 1.5, 0.25, 0.5);
        assert_eq!(Row::from_words(&a.to_words()), a);
        let s = sum(&[a.clone(), a.clone()]);
        assert_eq!(s.t.wall, 4.0);
        assert_eq!(s.t.kinds[3].entries, 6);
        assert_eq!(s.sent, 8);
        assert_eq!(s.faults, [200, 2]);
        assert_eq!(s.heap_peak.len(), 4);
        assert!((s.hidden().unwrap() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn json_and_text_name_every_field() {
        let rows = [row(2.0, 1.5, 0.25, 0.5), row(2.0, 1.0, 0.5, 0.5)];
        let j = json(&rows, 2);
        for key in [
            "\"per_process\"",
            "\"total\"",
            "\"hidden_share\": 0.500000",
            "\"compute\": {\"run_s\": 0.500000",
            "\"process\": 1",
            "\"minor_faults\": 100",
            "\"heap_peak_bytes\": [1048576, 3145728]",
            "\"per_worker\": [{\"worker\": 0, \"compute_s\": 0.750000, \"blocked_s\": 0.125000, \"steals\": 3}",
        ] {
            assert!(j.contains(key), "{key} missing in {j}");
        }
        assert_eq!(j.matches('{').count(), j.matches('}').count());
        let t = text(&rows, 2);
        assert!(t.contains("sum") && t.contains("50.0%") && t.contains("regions"), "{t}");
        assert!(t.contains("ranks 2-3: 1.0 3.0") && t.contains("faults 200 / 2"), "{t}");
        assert!(t.contains("0: 0.7500 / 0.1250, 3  1: 0.5000 / 0.2500, 0"), "{t}");
    }
}
