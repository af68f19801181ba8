//! X authority files: the secret a client shows an X server to be let in.
//!
//! A virtual display is started with `-auth FILE` (a fresh 16-byte
//! MIT-MAGIC-COOKIE-1 in a 0600 file in the session's private runtime
//! directory), so only Strobe and the program it gave `XAUTHORITY=FILE`
//! can connect: another local user cannot read the window or send it input.
//!
//! The file format (Xau): entries of a big-endian u16 family, then four
//! length-prefixed (u16 big-endian) fields: address, display number, auth
//! name, auth data. Family 65535 ("wild") with an empty address matches any
//! host. The server takes every cookie of its file whatever its number, but
//! clients (libXau) want their display's number, which is not known before
//! Xvfb picks it: the file is written without one for the server, then
//! rewritten with it for clients.

use std::io::Read;
use std::path::Path;

/// The one auth scheme Strobe writes and reads.
pub const MIT_COOKIE: &[u8] = b"MIT-MAGIC-COOKIE-1";

/// "Wild" family: any address.
const FAMILY_WILD: u16 = 0xffff;

/// A fresh random cookie.
pub fn new_cookie() -> std::io::Result<[u8; 16]> {
    let mut c = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut c)?;
    Ok(c)
}

/// An authority file holding `cookie` for display `number` (any, if
/// empty) on any host.
pub fn encode(cookie: &[u8], number: &str) -> Vec<u8> {
    let mut out = FAMILY_WILD.to_be_bytes().to_vec();
    for field in [&b""[..], number.as_bytes(), MIT_COOKIE, cookie] {
        out.extend_from_slice(&(field.len() as u16).to_be_bytes());
        out.extend_from_slice(field);
    }
    out
}

/// Writes (or replaces, atomically) the authority file `path` with
/// `cookie` for display `number`, readable by its owner only.
pub fn write(path: &Path, cookie: &[u8], number: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("new");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(&encode(cookie, number))?;
    std::fs::rename(&tmp, path)
}

/// The MIT cookie in authority file `data` for display number `number`:
/// an entry whose number is that one or empty (any).
pub fn cookie_for(data: &[u8], number: &str) -> Option<Vec<u8>> {
    let mut rest = data;
    let field = |rest: &mut &[u8]| -> Option<Vec<u8>> {
        let (len, tail) = rest.split_first_chunk::<2>()?;
        let len = u16::from_be_bytes(*len) as usize;
        let value = tail.get(..len)?.to_vec();
        *rest = &tail[len..];
        Some(value)
    };
    while rest.len() >= 2 {
        rest = &rest[2..]; // the family: any (Strobe's own files are wild)
        let _address = field(&mut rest)?;
        let num = field(&mut rest)?;
        let name = field(&mut rest)?;
        let data = field(&mut rest)?;
        if name == MIT_COOKIE && (num.is_empty() || num == number.as_bytes()) {
            return Some(data);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_cookie_is_read_back_for_any_display() {
        let cookie = new_cookie().unwrap();
        let file = encode(&cookie, "");
        assert_eq!(cookie_for(&file, "7"), Some(cookie.to_vec()));
        let file = encode(&cookie, "7");
        assert_eq!(cookie_for(&file, "7"), Some(cookie.to_vec()));
        assert_eq!(cookie_for(&file, "8"), None);
        // An entry for display 3 only, before ours: skipped for 7.
        let mut other = vec![0x01, 0x00];
        for f in [&b"host"[..], b"3", MIT_COOKIE, &[9u8; 16]] {
            other.extend_from_slice(&(f.len() as u16).to_be_bytes());
            other.extend_from_slice(f);
        }
        other.extend_from_slice(&file);
        assert_eq!(cookie_for(&other, "7"), Some(cookie.to_vec()));
        assert_eq!(cookie_for(&other, "3"), Some(vec![9u8; 16]));
        assert_eq!(cookie_for(&other[..5], "3"), None, "truncated");
    }
}
