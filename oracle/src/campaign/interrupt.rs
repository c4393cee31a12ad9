//! Interrupts of a campaign: SIGINT (Ctrl-C) and SIGTERM (a CI runner's cancel, `kill`)
//! ask a campaign to stop, not the process to die, so that the seed under way is finished
//! (or, for a reduction or a validation, abandoned), the state is written, and the summary
//! and reports say what was done. The handler only stores the signal's number in an
//! atomic (all a signal handler may safely do); the driver polls [`requested`] between
//! seeds and the reducer between candidates. A second signal of either kind while the
//! first is handled ends the process at once, as a user pressing Ctrl-C twice expects.
//!
//! The exit status of an interrupted campaign is `128 + signal` (130 for SIGINT, 143 for
//! SIGTERM), as shells report a process that a signal ended.

use std::sync::atomic::{AtomicI32, Ordering};

/// The number of the first signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(signal: libc::c_int) {
    if RECEIVED.swap(signal, Ordering::SeqCst) != 0 {
        // The second request: the user does not want to wait.
        unsafe { libc::_exit(128 + signal) };
    }
}

/// Installs the handler for SIGINT and SIGTERM (for `tandem fuzz`; a library user that
/// does not call it keeps the default behaviour).
pub fn install() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only does async-signal-safe work (an atomic swap, `_exit`).
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// The signal that asked the campaign to stop, if one did.
pub fn requested() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The exit status that says the process was interrupted by `signal`.
pub fn exit_status(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}

/// The signal's name for messages.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "a signal",
    }
}
