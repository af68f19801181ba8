//! Whether a program with no window yet is still starting up: `debug_ui`
//! waits past its registration grace only for one that keeps working.

use std::time::{Duration, Instant};

/// The span over which "still busy" is judged.
const BUSY_WINDOW: Duration = Duration::from_millis(500);

/// Whether a session's processes have used CPU lately: a program past the
/// registration grace that is still working is still starting up.
pub(super) struct StartupActivity {
    pids: Vec<u32>,
    /// (when, total CPU ticks) samples, oldest first, spanning [`BUSY_WINDOW`].
    samples: std::collections::VecDeque<(Instant, u64)>,
}

impl StartupActivity {
    pub(super) fn new(pids: &[u32]) -> StartupActivity {
        let mut activity = StartupActivity {
            pids: pids.to_vec(),
            samples: Default::default(),
        };
        activity.sample();
        activity
    }

    pub(super) fn sample(&mut self) {
        let ticks = self
            .pids
            .iter()
            .filter_map(|&p| crate::procfs::Stat::of(p)?.cpu_ticks())
            .sum();
        let now = Instant::now();
        self.samples.push_back((now, ticks));
        while self.samples.len() > 2 && now.duration_since(self.samples[1].0) >= BUSY_WINDOW {
            self.samples.pop_front();
        }
    }

    /// True when the processes used CPU over the last [`BUSY_WINDOW`]
    /// (judged only once that much has been watched).
    pub(super) fn is_busy(&self) -> bool {
        match (self.samples.front(), self.samples.back()) {
            (Some(&(t0, first)), Some(&(t1, last))) => {
                t1.duration_since(t0) >= BUSY_WINDOW && last > first
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_process_is_busy_and_a_sleeping_one_is_not() {
        let mut spinner = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let mut spinning = StartupActivity::new(&[spinner.id()]);
        let mut sleeping = StartupActivity::new(&[sleeper.id()]);
        assert!(!spinning.is_busy(), "nothing is judged before a window");
        let start = Instant::now();
        while start.elapsed() < BUSY_WINDOW * 3 {
            std::thread::sleep(Duration::from_millis(100));
            spinning.sample();
            sleeping.sample();
        }
        let _ = spinner.kill();
        let _ = sleeper.kill();
        let _ = spinner.wait();
        let _ = sleeper.wait();
        assert!(spinning.is_busy());
        assert!(!sleeping.is_busy());
        assert!(spinning.samples.len() <= 8, "{}", spinning.samples.len());
    }
}
