//! The program's live threads, as a debugger's thread list shows them.
//!
//! `/proc/PID/task` lists Frida's own threads among the program's, under
//! the program's name (they inherit it). Gum cloaks them, so the agent can
//! tell them apart: it is asked once per thread it has not classified yet,
//! which after the first status is only the threads started since.

use super::*;
use std::sync::atomic::Ordering;
use strobe_frida::agent_protocol::OwnThreads;

/// At most this many threads are listed (the rest are counted).
const MAX_LISTED: usize = 64;
/// How long a status waits for the agent to classify new threads.
const CLASSIFY_WAIT: Duration = Duration::from_millis(500);

/// One of the program's live threads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadInfo {
    /// Thread id (the kernel's tid; the main thread's is the pid).
    pub id: u32,
    /// Its name (`/proc/PID/task/TID/comm`).
    pub name: String,
    /// The process it belongs to, when that is not the session's first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
}

/// The program's live threads, at most [`MAX_LISTED`] of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadList {
    /// The threads listed, by process then thread id.
    pub threads: Vec<ThreadInfo>,
    /// Threads left out of the list.
    pub omitted: usize,
    /// Why some listed threads may be Frida's, when the agent could not say.
    pub note: Option<String>,
}

/// Which threads of one process are Frida's, by tid (kept only while
/// `/proc` lists the thread, so a tid the kernel gives again is asked again
/// unless it was reused between two looks: that takes pid_max threads).
pub(super) type ThreadOwners = HashMap<u32, bool>;

impl SessionManager {
    /// The live threads of the session's running processes.
    pub(super) fn live_threads(&self, root: &Live) -> ThreadList {
        let mut images: Vec<Arc<Live>> = root
            .children
            .lock()
            .expect("children lock")
            .values()
            // An exec'd root's new image is among them under the root's pid.
            // One still being set up is left out: its agent is busy with
            // that, and the list would show it only for a moment.
            .filter(|c| !c.gone.load(Ordering::SeqCst) && c.set_up.load(Ordering::SeqCst))
            .cloned()
            .collect();
        images.sort_by_key(|c| c.id_base);
        let root_running = !root.gone.load(Ordering::SeqCst);
        let processes = root_running
            .then_some(root)
            .into_iter()
            .chain(images.iter().map(|c| &**c));
        let mut list = ThreadList::default();
        let mut all = Vec::new();
        for live in processes {
            let (tids, note) = self.program_threads(live);
            all.extend(tids.into_iter().map(|t| (live.pid, t)));
            list.note = list.note.or(note);
        }
        list.omitted = all.len().saturating_sub(MAX_LISTED);
        // Names are read for the listed threads only.
        list.threads = all
            .into_iter()
            .take(MAX_LISTED)
            .map(|(pid, tid)| ThreadInfo {
                id: tid,
                name: std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                    .map(|n| n.trim_end().to_string())
                    .unwrap_or_default(),
                pid: (pid != root.pid).then_some(pid),
            })
            .collect();
        list
    }

    /// One process's thread ids without Frida's, and why some may be
    /// Frida's when the agent could not say.
    fn program_threads(&self, live: &Live) -> (Vec<u32>, Option<String>) {
        let mut tids = crate::procfs::threads(live.pid);
        tids.sort_unstable();
        let unknown: Vec<u32> = {
            let mut owners = live.thread_owners.lock().expect("thread owners lock");
            owners.retain(|t, _| tids.binary_search(t).is_ok());
            tids.iter()
                .filter(|t| !owners.contains_key(t))
                .copied()
                .collect()
        };
        let mut why = None;
        if !unknown.is_empty() {
            let answer = self.agent_request::<OwnThreads>(
                live,
                |id| DaemonMessage::OwnThreads {
                    id,
                    tids: unknown.clone(),
                },
                CLASSIFY_WAIT,
            );
            match answer {
                Ok(OwnThreads {
                    own, error: None, ..
                }) => {
                    let mut owners = live.thread_owners.lock().expect("thread owners lock");
                    for t in &unknown {
                        owners.insert(*t, own.contains(t));
                    }
                }
                Ok(OwnThreads { error: Some(e), .. }) => why = Some(e),
                Err(e) => why = Some(e.message().to_string()),
            }
        }
        let note = why.map(|why| {
            format!(
                "process {}: {} of these thread(s) may be Frida's, not the program's \
                 (the agent could not tell them apart: {why})",
                live.pid,
                unknown.len()
            )
        });
        let owners = live.thread_owners.lock().expect("thread owners lock");
        tids.retain(|t| owners.get(t) != Some(&true));
        (tids, note)
    }
}
