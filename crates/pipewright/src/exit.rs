//! The exit status of every command, as the README and `--help` document them.

/// What the process exits with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExitStatus(u8);

impl ExitStatus {
    /// Nothing wrong: no error found, formatted, the run finished.
    pub(crate) const OK: ExitStatus = ExitStatus(0);
    /// The command did its work and the answer is no: errors found, a file would be reformatted,
    /// the run failed, nothing waits for that approval.
    pub(crate) const FAILED: ExitStatus = ExitStatus(1);
    /// The command could not do its work: a usage error, nothing could be read, a run that
    /// could not start (nothing ran, nothing was recorded), output that could not be written.
    pub(crate) const COULD_NOT_START: ExitStatus = ExitStatus(2);

    /// A run's own status: 3 paused at an approval gate, 4 stopped by a budget, 128 + the
    /// signal when cancelled.
    pub(crate) fn of_run(code: i32) -> ExitStatus {
        ExitStatus(u8::try_from(code).unwrap_or(1))
    }

    /// What a dialect's own command or approval decision returned (its codes are its own,
    /// documented with it).
    pub(crate) fn of_dialect(code: u8) -> ExitStatus {
        ExitStatus(code)
    }

    pub(crate) fn code(self) -> u8 {
        self.0
    }
}
