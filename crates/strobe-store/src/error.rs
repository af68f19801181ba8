/// Failures of the event store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The writer thread is gone (the store was closed or it panicked).
    #[error("the store's writer thread has stopped")]
    WriterGone,
    /// A stored chunk could not be decoded.
    #[error("corrupt event chunk {chunk}: {reason}")]
    Corrupt {
        /// Row id of the chunk.
        chunk: i64,
        /// What was wrong.
        reason: &'static str,
    },
    /// A session id is already used.
    #[error("a session with id '{0}' already exists")]
    DuplicateSession(String),
}
