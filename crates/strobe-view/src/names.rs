//! Function and thread names of a session, fetched once per id.

use std::collections::HashMap;
use strobe_store::Store;

/// Names of a session's functions and threads, looked up on first use.
pub struct Names<'a> {
    store: &'a Store,
    key: i64,
    functions: HashMap<u32, Function>,
    threads: HashMap<u32, Option<String>>,
}

/// A traced function as views show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Function {
    /// Qualified, demangled name.
    pub name: String,
    /// Source file and declaration line, when known.
    pub file: Option<String>,
    /// Declaration line.
    pub line: Option<u32>,
}

impl<'a> Names<'a> {
    /// Names of the session stored under `key`.
    pub fn new(store: &'a Store, key: i64) -> Self {
        Self {
            store,
            key,
            functions: HashMap::new(),
            threads: HashMap::new(),
        }
    }

    /// Fetches the functions among `ids` not seen yet, in one query.
    pub fn prefetch(&mut self, ids: impl IntoIterator<Item = u32>) -> Result<(), crate::ViewError> {
        let mut missing: Vec<u32> = ids
            .into_iter()
            .filter(|id| *id != 0 && !self.functions.contains_key(id))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if missing.is_empty() {
            return Ok(());
        }
        for row in self.store.functions(self.key, &missing)? {
            self.functions.insert(
                row.func_id,
                Function {
                    name: row.name,
                    file: row.file,
                    line: row.line,
                },
            );
        }
        for id in missing {
            self.functions.entry(id).or_insert_with(|| Function {
                name: format!("function #{id}"),
                ..Function::default()
            });
        }
        Ok(())
    }

    /// A function (prefetched, else fetched now).
    pub fn function(&mut self, id: u32) -> Result<&Function, crate::ViewError> {
        self.prefetch([id])?;
        Ok(self.functions.get(&id).expect("prefetched"))
    }

    /// A thread's name, when the target named it.
    pub fn thread(&mut self, tid: u32) -> Result<Option<&str>, crate::ViewError> {
        if !self.threads.contains_key(&tid) {
            let name = self
                .store
                .thread_names(self.key, &[tid])?
                .into_iter()
                .next()
                .map(|(_, n)| n);
            self.threads.insert(tid, name);
        }
        Ok(self.threads.get(&tid).and_then(|n| n.as_deref()))
    }
}
