//! Where the machine's CPU goes during a measurement, read from `/proc` (Linux).
//!
//! The tool, the server and the database share the machine's cores, so a throughput figure is
//! also a CPU budget: dividing each process's CPU time by the requests answered tells what one
//! request costs each of them. The database's own processes are counted when its server runs on
//! this machine ([`watch_database`]: the postmaster and its children); what remains of the
//! machine's busy time is the rest (the kernel's network work outside any process, and anything
//! else that ran).

use std::sync::OnceLock;
use std::time::Instant;

use crate::stats::Repeated;

/// The postmaster of the database server, when it runs on this machine.
static DATABASE: OnceLock<u32> = OnceLock::new();

/// Counts the CPU of the PostgreSQL server that runs `backend` as the database's from now on,
/// when that backend runs on this machine: its parent is the server's postmaster.
pub fn watch_database(backend: u32) {
    if let Some(postmaster) = std::fs::read_to_string(format!("/proc/{backend}/stat"))
        .ok()
        .and_then(|stat| parent_of(&stat))
        && std::fs::read_to_string(format!("/proc/{postmaster}/comm"))
            .is_ok_and(|name| name.trim() == "postgres")
    {
        let _ = DATABASE.set(postmaster);
    }
}

/// The CPU time of the database server's processes so far, in µs (0 when it is not watched).
pub fn database_us() -> u64 {
    DATABASE.get().map_or(0, |&pid| tree_ticks_us(pid))
}

/// Whether the database's own CPU is counted apart from the rest.
pub fn database_watched() -> bool {
    DATABASE.get().is_some()
}

/// CPU counters at one instant, in the kernel's clock ticks.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    at: Instant,
    busy: u64,
    all: u64,
    cpus: u64,
    tool: u64,
    server: u64,
    database: u64,
}

/// CPU time per request over a window, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuPerRequest {
    /// This process: the load generator or the direct queries.
    pub tool: f64,
    /// The `timetrack` server.
    pub server: f64,
    /// The PostgreSQL server's processes (0 when it is not on this machine: then in `rest`).
    pub database: f64,
    /// The rest of the machine's busy time: the kernel's work outside any process, and whatever
    /// else ran.
    pub rest: f64,
}

impl CpuPerRequest {
    /// All of it.
    pub fn total(&self) -> f64 {
        self.tool + self.server + self.database + self.rest
    }

    /// Each part's median over repetitions; `None` for none.
    pub fn median(repetitions: &[Self]) -> Option<Self> {
        let part = |get: fn(&Self) -> f64| Repeated(repetitions.iter().map(get).collect()).median();
        (!repetitions.is_empty()).then(|| Self {
            tool: part(|c| c.tool),
            server: part(|c| c.server),
            database: part(|c| c.database),
            rest: part(|c| c.rest),
        })
    }
}

impl CpuSample {
    /// Reads the counters now; `None` where `/proc` cannot be read (not Linux).
    pub fn now(server_pid: u32) -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let (busy, all, cpus) = machine_ticks(&stat)?;
        Some(Self {
            at: Instant::now(),
            busy,
            all,
            cpus,
            tool: process_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)?,
            server: process_ticks(
                &std::fs::read_to_string(format!("/proc/{server_pid}/stat")).ok()?,
            )?,
            database: DATABASE.get().map_or(0, |&pid| server_tree_ticks(pid)),
        })
    }

    /// What each part spent per request between `self` and `later`, for `requests` answered.
    pub fn per_request(&self, later: &Self, requests: usize) -> Option<CpuPerRequest> {
        let seconds = later.at.duration_since(self.at).as_secs_f64();
        let all = later.all.checked_sub(self.all)? as f64;
        if requests == 0 || seconds <= 0.0 || all <= 0.0 {
            return None;
        }
        // Ticks per second, from the machine's own count: every CPU accrues one tick per tick,
        // busy or idle.
        let tick_us = seconds * self.cpus as f64 / all * 1e6;
        let per = |ticks: u64| ticks as f64 * tick_us / requests as f64;
        let busy = later.busy.saturating_sub(self.busy);
        let tool = later.tool.saturating_sub(self.tool);
        let server = later.server.saturating_sub(self.server);
        let database = later.database.saturating_sub(self.database);
        Some(CpuPerRequest {
            tool: per(tool),
            server: per(server),
            database: per(database),
            rest: per(busy.saturating_sub(tool + server + database)),
        })
    }
}

/// Busy ticks, all ticks and the number of CPUs, from `/proc/stat`.
fn machine_ticks(stat: &str) -> Option<(u64, u64, u64)> {
    let mut lines = stat.lines();
    let total: Vec<u64> = lines
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    let field = |i: usize| total.get(i).copied().unwrap_or(0);
    let busy = field(0) + field(1) + field(2) + field(5) + field(6);
    let all = busy + field(3) + field(4) + field(7);
    let cpus = lines
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u64;
    (cpus > 0).then_some((busy, all, cpus))
}

/// The CPU time of a server process and its children so far, in µs (see
/// [`server_tree_ticks`]); the kernel counts it in `USER_HZ` ticks, 100 a second on Linux.
pub fn tree_ticks_us(parent: u32) -> u64 {
    server_tree_ticks(parent) * 10_000
}

/// The ticks of a server process and its children: its own, those of its children that it
/// has reaped, and those of the children that run (PostgreSQL's backends and helpers are the
/// postmaster's children and start no processes of their own).
fn server_tree_ticks(parent: u32) -> u64 {
    let Some(own) = std::fs::read_to_string(format!("/proc/{parent}/stat"))
        .ok()
        .and_then(|stat| process_and_reaped_ticks(&stat))
    else {
        return 0;
    };
    let children: u64 = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| parent_of(stat) == Some(parent))
        .filter_map(|stat| process_ticks(&stat))
        .sum();
    own + children
}

/// The fields after a `/proc/<pid>/stat` line's name (in parentheses, which may hold spaces).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    Some(
        stat.get(stat.rfind(')')? + 2..)?
            .split_whitespace()
            .collect(),
    )
}

/// The parent process id of a `/proc/<pid>/stat` line.
fn parent_of(stat: &str) -> Option<u32> {
    stat_fields(stat)?.get(1)?.parse().ok()
}

/// User plus system ticks of a process and of its reaped children.
fn process_and_reaped_ticks(stat: &str) -> Option<u64> {
    let fields = stat_fields(stat)?;
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some(field(11)? + field(12)? + field(13)? + field(14)?)
}

/// User plus system ticks of a process, from its `/proc/<pid>/stat`.
fn process_ticks(stat: &str) -> Option<u64> {
    // The name, in parentheses, may hold spaces; the fields after it are positional.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 2..)?
        .split_whitespace()
        .collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_and_process_counters_are_read_from_their_formats() {
        let stat = "cpu  100 5 50 800 10 3 2 7 0 0\ncpu0 50 2 25 400 5 1 1 3 0 0\n\
                    cpu1 50 3 25 400 5 2 1 4 0 0\nintr 12345\nctxt 999\n";
        assert_eq!(machine_ticks(stat), Some((160, 977, 2)));
        let process = "4242 (time track) S 1 4242 4242 0 -1 4194304 500 0 0 0 37 12 0 0 20 0 \
                       9 0 1000 300000000 5000";
        assert_eq!(process_ticks(process), Some(49));
        assert_eq!(process_ticks("garbage"), None);
        assert_eq!(parent_of(process), Some(1));
        assert_eq!(process_and_reaped_ticks(process), Some(49));
        let reaped = "7 (postgres) S 1 7 7 0 -1 4194304 500 0 0 0 37 12 100 3 20 0 9 0 1000";
        assert_eq!(process_and_reaped_ticks(reaped), Some(152));
    }

    #[test]
    fn per_request_shares_divide_the_ticks_among_the_requests() {
        let start = Instant::now();
        let before = CpuSample {
            at: start,
            busy: 1_000,
            all: 2_000,
            cpus: 2,
            tool: 10,
            server: 20,
            database: 5,
        };
        // One second later at 100 ticks a second on two CPUs: 200 ticks, 150 of them busy.
        let after = CpuSample {
            at: start + std::time::Duration::from_secs(1),
            busy: 1_150,
            all: 2_200,
            tool: 40,
            server: 70,
            database: 25,
            ..before
        };
        let per = before.per_request(&after, 1_000).unwrap();
        // A tick is 10 ms; 30 ticks over 1,000 requests = 300 µs each.
        assert!((per.tool - 300.0).abs() < 1e-6, "{per:?}");
        assert!((per.server - 500.0).abs() < 1e-6, "{per:?}");
        assert!((per.database - 200.0).abs() < 1e-6, "{per:?}");
        assert!((per.rest - 500.0).abs() < 1e-6, "{per:?}");
        assert!((per.total() - 1_500.0).abs() < 1e-6);
        assert_eq!(before.per_request(&after, 0), None);
    }

    #[test]
    fn the_median_is_taken_part_by_part() {
        let cpu = |tool, server, rest| CpuPerRequest {
            tool,
            server,
            database: server / 10.0,
            rest,
        };
        let runs = [
            cpu(1.0, 50.0, 9.0),
            cpu(3.0, 10.0, 7.0),
            cpu(2.0, 30.0, 8.0),
        ];
        assert_eq!(CpuPerRequest::median(&runs), Some(cpu(2.0, 30.0, 8.0)));
        assert_eq!(CpuPerRequest::median(&[]), None);
    }

    #[test]
    fn this_process_can_be_sampled() {
        let pid = std::process::id();
        let first = CpuSample::now(pid).expect("/proc is readable on Linux");
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed().as_millis() < 60 {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let second = CpuSample::now(pid).unwrap();
        let per = first.per_request(&second, 1).unwrap();
        assert!(per.tool > 0.0, "{per:?}");
    }
}
