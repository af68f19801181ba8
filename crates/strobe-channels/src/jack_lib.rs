//! Strobe's own binding to JACK's client library, `libjack.so.0`, opened
//! at run time the first time a midi or audio channel or a private server
//! (`debug_launch {jack: "auto"}`) needs it. Nothing links against libjack
//! and nothing loads it otherwise: Strobe builds without JACK's headers and
//! starts, launches and traces programs on a machine without JACK at all.
//!
//! Only the functions Strobe calls are resolved, with the types JACK's
//! public C API (`<jack/jack.h>`, `<jack/types.h>`, `<jack/midiport.h>`)
//! declares for them.

use std::ffi::{CStr, c_char, c_int, c_ulong, c_void};
use std::sync::OnceLock;

/// The client library's name as Debian's `libjack-jackd2-0` (and the JACK
/// of PipeWire's `pipewire-jack`) installs it.
pub(crate) const SONAME: &str = "libjack.so.0";

/// JACK's `jack_nframes_t`: a count of frames.
pub(crate) type Nframes = u32;

/// JACK's `jack_client_t`: an open client (opaque).
#[repr(C)]
pub(crate) struct RawClient {
    _opaque: [u8; 0],
}

/// JACK's `jack_port_t`: a registered port (opaque).
#[repr(C)]
pub(crate) struct RawPort {
    _opaque: [u8; 0],
}

/// JACK's `jack_midi_event_t`: one MIDI event of a port buffer.
#[repr(C)]
pub(crate) struct MidiEvent {
    /// The frame of the cycle it is at.
    pub time: Nframes,
    /// How many bytes `buffer` holds.
    pub size: usize,
    /// The raw MIDI bytes (`jack_midi_data_t *`).
    pub buffer: *mut u8,
}

impl Default for MidiEvent {
    fn default() -> MidiEvent {
        MidiEvent {
            time: 0,
            size: 0,
            buffer: std::ptr::null_mut(),
        }
    }
}

/// `JackOptions`' `JackNoStartServer`: fail rather than start a server.
const NO_START_SERVER: c_int = 0x01;
/// `JackOptions`' `JackServerName`: the server's name follows as the
/// variadic argument of `jack_client_open`.
const SERVER_NAME: c_int = 0x04;
/// `JackPortFlags`' `JackPortIsInput`.
pub(crate) const PORT_IS_INPUT: c_ulong = 0x1;
/// `JackPortFlags`' `JackPortIsOutput`.
pub(crate) const PORT_IS_OUTPUT: c_ulong = 0x2;

/// `JackProcessCallback`: one cycle of `nframes` frames.
pub(crate) type ProcessCallback = unsafe extern "C" fn(Nframes, *mut c_void) -> c_int;
/// `JackXRunCallback`: the server reported a late cycle.
pub(crate) type XrunCallback = unsafe extern "C" fn(*mut c_void) -> c_int;

/// Why JACK's client library cannot be used; each says what to install.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum JackLibError {
    /// The library is not on the machine, or the loader refused it.
    #[error(
        "JACK's client library {SONAME} is not installed or cannot be loaded ({why}): install it \
         with `apt install libjack-jackd2-0` (or, on a PipeWire system, `apt install pipewire-jack` \
         and start Strobe under `pw-jack`); only the midi and audio channels and `jack` launches need it"
    )]
    Missing {
        /// The loader's own words.
        why: String,
    },
    /// A library of that name lacks a function every JACK client library has.
    #[error(
        "{SONAME} has no {symbol} ({why}): it is not a usable JACK client library; \
         install `libjack-jackd2-0`"
    )]
    Incomplete {
        /// The function missing.
        symbol: &'static str,
        /// The loader's own words.
        why: String,
    },
}

/// The functions Strobe calls, resolved from the loaded library (each
/// field is the C function of the same name with a `jack_` prefix).
pub(crate) struct Jack {
    client_open: unsafe extern "C" fn(*const c_char, c_int, *mut c_int, ...) -> *mut RawClient,
    pub client_close: unsafe extern "C" fn(*mut RawClient) -> c_int,
    pub port_register: unsafe extern "C" fn(
        *mut RawClient,
        *const c_char,
        *const c_char,
        c_ulong,
        c_ulong,
    ) -> *mut RawPort,
    pub port_get_buffer: unsafe extern "C" fn(*mut RawPort, Nframes) -> *mut c_void,
    pub port_name: unsafe extern "C" fn(*const RawPort) -> *const c_char,
    pub set_process_callback:
        unsafe extern "C" fn(*mut RawClient, ProcessCallback, *mut c_void) -> c_int,
    pub set_xrun_callback: unsafe extern "C" fn(*mut RawClient, XrunCallback, *mut c_void) -> c_int,
    pub activate: unsafe extern "C" fn(*mut RawClient) -> c_int,
    pub deactivate: unsafe extern "C" fn(*mut RawClient) -> c_int,
    pub get_sample_rate: unsafe extern "C" fn(*mut RawClient) -> Nframes,
    pub get_ports: unsafe extern "C" fn(
        *mut RawClient,
        *const c_char,
        *const c_char,
        c_ulong,
    ) -> *mut *const c_char,
    pub free: unsafe extern "C" fn(*mut c_void),
    pub connect: unsafe extern "C" fn(*mut RawClient, *const c_char, *const c_char) -> c_int,
    pub midi_get_event_count: unsafe extern "C" fn(*mut c_void) -> u32,
    pub midi_event_get: unsafe extern "C" fn(*mut MidiEvent, *mut c_void, u32) -> c_int,
    pub midi_clear_buffer: unsafe extern "C" fn(*mut c_void),
    pub midi_event_write: unsafe extern "C" fn(*mut c_void, Nframes, *const u8, usize) -> c_int,
    /// Kept open for as long as the functions above may be called (the
    /// process's life: the binding is never dropped).
    _library: libloading::Library,
}

impl Jack {
    /// Opens client `name` on the server `server`, never starting one
    /// (`JackNoStartServer | JackServerName`); the status bits JACK gave
    /// when it could not. The caller closes the client (`client_close`).
    pub(crate) fn open_client(&self, name: &CStr, server: &CStr) -> Result<*mut RawClient, c_int> {
        let mut status: c_int = 0;
        // SAFETY: valid C strings; JackServerName takes the server's name
        // as the one variadic argument.
        let client = unsafe {
            (self.client_open)(
                name.as_ptr(),
                NO_START_SERVER | SERVER_NAME,
                &mut status,
                server.as_ptr(),
            )
        };
        if client.is_null() {
            Err(status)
        } else {
            Ok(client)
        }
    }
}

// SAFETY: the binding holds function pointers and the library handle;
// JACK's client API may be called from any thread.
unsafe impl Send for Jack {}
// SAFETY: as above; nothing in it is mutated after loading.
unsafe impl Sync for Jack {}

/// The loaded library. Only a success is kept: after a failure the next
/// caller tries again, so installing JACK needs no daemon restart.
static JACK: OnceLock<Jack> = OnceLock::new();

/// JACK's client library, loaded on the first call.
pub(crate) fn jack() -> Result<&'static Jack, JackLibError> {
    if let Some(j) = JACK.get() {
        return Ok(j);
    }
    let loaded = load(SONAME)?;
    // Two first callers at once each load it; one binding is kept and the
    // other's handle closed (dlopen counts references).
    Ok(JACK.get_or_init(|| loaded))
}

/// One symbol of `library`, as `T`.
///
/// # Safety
/// `T` must be the C type of the function `name` names.
unsafe fn symbol<T: Copy>(
    library: &libloading::Library,
    name: &'static str,
) -> Result<T, JackLibError> {
    // SAFETY: the caller names the symbol's own type.
    let found = unsafe { library.get::<T>(name.as_bytes()) };
    found.map(|s| *s).map_err(|e| JackLibError::Incomplete {
        symbol: name,
        why: loader_words(&e),
    })
}

/// What the loader said: libloading's own message ("dlopen failed") is
/// only the headline; the reason (the file not found, too short) is its
/// source.
fn loader_words(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(why) => why.to_string(),
        None => e.to_string(),
    }
}

/// Opens `file` and resolves every function of [`Jack`].
fn load(file: &str) -> Result<Jack, JackLibError> {
    // SAFETY: JACK's client library runs no initialiser that could break
    // the daemon (its constructors only set up its own state).
    let library = unsafe { libloading::Library::new(file) }.map_err(|e| JackLibError::Missing {
        why: loader_words(&e),
    })?;
    // SAFETY (every `symbol` below): each field's type is the one
    // <jack/jack.h> or <jack/midiport.h> declares for the function.
    unsafe {
        Ok(Jack {
            client_open: symbol(&library, "jack_client_open")?,
            client_close: symbol(&library, "jack_client_close")?,
            port_register: symbol(&library, "jack_port_register")?,
            port_get_buffer: symbol(&library, "jack_port_get_buffer")?,
            port_name: symbol(&library, "jack_port_name")?,
            set_process_callback: symbol(&library, "jack_set_process_callback")?,
            set_xrun_callback: symbol(&library, "jack_set_xrun_callback")?,
            activate: symbol(&library, "jack_activate")?,
            deactivate: symbol(&library, "jack_deactivate")?,
            get_sample_rate: symbol(&library, "jack_get_sample_rate")?,
            get_ports: symbol(&library, "jack_get_ports")?,
            free: symbol(&library, "jack_free")?,
            connect: symbol(&library, "jack_connect")?,
            midi_get_event_count: symbol(&library, "jack_midi_get_event_count")?,
            midi_event_get: symbol(&library, "jack_midi_event_get")?,
            midi_clear_buffer: symbol(&library, "jack_midi_clear_buffer")?,
            midi_event_write: symbol(&library, "jack_midi_event_write")?,
            _library: library,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_says_which_package_provides_it() {
        let Err(e) = load("libstrobe-no-such-jack.so.0") else {
            panic!("a library that does not exist loaded");
        };
        let text = e.to_string();
        for want in [
            SONAME,
            "libjack-jackd2-0",
            "pipewire-jack",
            "libstrobe-no-such-jack",
        ] {
            assert!(text.contains(want), "{want:?} not in {text:?}");
        }
    }

    #[test]
    fn a_library_without_jacks_functions_is_refused_by_name() {
        // libc is loaded already and has none of JACK's functions.
        let Err(e) = load("libc.so.6") else {
            panic!("libc passed for JACK");
        };
        assert!(
            matches!(
                e,
                JackLibError::Incomplete {
                    symbol: "jack_client_open",
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn the_installed_library_has_every_function_strobe_calls() {
        // `./dev setup` installs JACK (jackd2 brings libjack-jackd2-0).
        if let Err(e) = jack() {
            panic!("this machine needs JACK for the channel tests: {e}");
        }
    }
}
