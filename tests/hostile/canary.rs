//! Files outside the project tree that a hostile project aims at, hashed
//! before a case and checked after it.

use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};

/// A temporary folder of canary files (what a link in the project points
/// at), with each one's hash when it was made.
pub struct Canaries {
    pub dir: tempfile::TempDir,
    files: Vec<(PathBuf, Option<[u8; 32]>)>,
}

fn hash(path: &Path) -> Option<[u8; 32]> {
    let bytes = fs::read(path).ok()?;
    Some(Sha256::digest(&bytes).into())
}

impl Canaries {
    /// A folder holding `names`, each with a line of its own content.
    pub fn new(names: &[&str]) -> Canaries {
        let dir = tempfile::Builder::new()
            .prefix("strobe-canary-")
            .tempdir()
            .unwrap();
        let mut c = Canaries {
            dir,
            files: Vec::new(),
        };
        for name in names {
            let p = c.dir.path().join(name);
            fs::write(&p, format!("canary {name}: must never change\n")).unwrap();
            c.files.push((p, None));
        }
        c.rehash();
        c
    }

    /// The canary called `name`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn rehash(&mut self) {
        for (p, h) in &mut self.files {
            *h = hash(p);
        }
    }

    /// Panics when a canary changed, went away, or a file appeared beside
    /// them (a backup or temporary file written through a link).
    pub fn assert_untouched(&self) {
        for (p, h) in &self.files {
            assert_eq!(&hash(p), h, "canary {} changed", p.display());
        }
        let names: Vec<_> = fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names.len(),
            self.files.len(),
            "files appeared beside the canaries: {names:?}"
        );
    }
}
