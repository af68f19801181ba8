//! The tracer over a process's images: built from the program and the
//! libraries it has loaded, brought up to date with what happened while it
//! was busy, and extended by libraries loaded later (whose loading thread
//! waits for their hooks).

use super::hooks::{hook_target, save_captures};
use super::{Live, SessionManager};
use crate::SessionError;
use crate::trace::Tracer;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strobe_frida::agent_protocol::{DaemonMessage, ModuleHooks};
use strobe_symbols::resolvers::{self, Image, ImageKind};
use strobe_symbols::{SymbolError, SymbolResolver};

impl SessionManager {
    /// A tracer over the program and the libraries it has loaded.
    pub(super) fn new_tracer(&self, live: &Live) -> Result<Tracer, SessionError> {
        // The agent reports the loaded images while it loads; at launch that
        // message may still be on its way through the event thread.
        for _ in 0..200 {
            if !live.modules.lock().expect("modules lock").is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let mut modules = Vec::new();
        for r in self.resolvers(live, Path::new(&live.binary_path), ImageKind::Program) {
            modules.push(r.map_err(|e| {
                SessionError::validation(format!("cannot read the symbols of the program: {e}"))
            })?);
        }
        let libs: Vec<String> = live.modules.lock().expect("modules lock").clone();
        for lib in libs {
            if lib == live.binary_path || !Path::new(&lib).is_file() {
                continue;
            }
            for r in self.resolvers(live, Path::new(&lib), ImageKind::Library) {
                match r {
                    Ok(r) => modules.push(r),
                    Err(e) => tracing::debug!("not tracing into {lib}: {e}"),
                }
            }
        }
        Ok(Tracer::new(modules, Path::new(&live.project_root)).with_id_base(live.id_base))
    }

    /// Brings the tracer up to date with what happened while it was busy:
    /// hooks the agent installed for late libraries, and libraries that were
    /// loaded while it could not take them in.
    pub(super) fn catch_up(&self, live: &Live, tracer: &mut Tracer) {
        for (ok, bad) in live.late_hooks.lock().expect("late hooks lock").drain(..) {
            tracer.applied(&ok, &bad, &[]);
        }
        let modules: Vec<String> = live.modules.lock().expect("modules lock").clone();
        for m in modules {
            let path = Path::new(&m);
            if m != live.binary_path && path.is_file() && !tracer.has_module(path) {
                for r in self.resolvers(live, path, ImageKind::Library) {
                    match r {
                        Ok(r) => tracer.push_module(r),
                        Err(e) => tracing::debug!("not tracing into {m}: {e}"),
                    }
                }
            }
        }
    }

    /// The resolvers the registry has for an image of `live`'s process.
    fn resolvers(
        &self,
        live: &Live,
        path: &Path,
        kind: ImageKind,
    ) -> Vec<Result<Arc<dyn SymbolResolver>, SymbolError>> {
        let image = Image {
            path,
            kind,
            project_root: Path::new(&live.project_root),
            args: &live.program_args,
            env: &live.program_env,
        };
        resolvers::open(&image, Some(&self.symbol_cache_dir()), None)
    }

    /// A library was loaded while patterns are active and the loading thread
    /// waits: hook what the patterns match in it, then let it go on.
    pub(super) fn on_library_loaded(&self, live: &Live, path: &str) {
        let mut reply = ModuleHooks {
            module: path.to_string(),
            functions: Vec::new(),
        };
        let mut resolvers = Vec::new();
        for r in self.resolvers(live, Path::new(path), ImageKind::Library) {
            match r {
                Ok(r) => resolvers.push(r),
                Err(e) => tracing::debug!("not tracing into {path}: {e}"),
            }
        }
        // The tracer may be busy applying a debug_trace call that itself waits
        // on the agent; never wait on it for long while the program is blocked.
        let mut guard = None;
        for _ in 0..100 {
            if let Ok(g) = live.tracer.try_lock() {
                guard = Some(g);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        match (resolvers, guard) {
            (r, _) if r.is_empty() => {}
            (r, Some(mut g)) => {
                if let Some(t) = g.as_mut() {
                    for (ok, bad) in live.late_hooks.lock().expect("late hooks lock").drain(..) {
                        t.applied(&ok, &bad, &[]);
                    }
                }
                if let Some(t) = g.as_mut().filter(|t| !t.has_module(Path::new(path))) {
                    let plan = t.add_modules(r);
                    if !plan.new_rows.is_empty() {
                        let _ = self.store.register_functions(live.key, plan.new_rows);
                    }
                    let mut functions = Vec::new();
                    let mut unhookable = Vec::new();
                    for h in &plan.to_hook {
                        match hook_target(live, t, h) {
                            Ok((target, _)) => functions.push(target),
                            Err(why) => unhookable.push((h.id, why)),
                        }
                    }
                    t.applied(&[], &unhookable, &[]);
                    reply.functions = functions;
                    save_captures(&self.store, live, t);
                }
            }
            (_, None) => tracing::warn!(
                "session {}: {path} loaded while tracing was being changed; it is not traced",
                live.id
            ),
        }
        live.modules
            .lock()
            .expect("modules lock")
            .push(path.to_string());
        let _ = live.post(&DaemonMessage::ModuleHooks(reply));
    }
}
