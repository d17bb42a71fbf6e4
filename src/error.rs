//! Typed errors for the library, each carrying the exit code the CLI reports:
//! `2` for bad input (nothing was written), `1` for a failure while acting.

use std::io;
use std::path::Path;

/// What went wrong, in one line that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: a usage error, a bad name, an unknown team or member, an invalid message.
    /// Raised before anything is written.
    #[error("{0}")]
    BadInput(String),
    /// The operation was valid but could not be carried out (tmux missing, timeout, I/O).
    #[error("{0}")]
    Failed(String),
}

impl Error {
    pub fn bad(msg: impl Into<String>) -> Self {
        Error::BadInput(msg.into())
    }

    pub fn failed(msg: impl Into<String>) -> Self {
        Error::Failed(msg.into())
    }

    /// An I/O error with the path it concerns.
    pub fn io(path: &Path, err: io::Error) -> Self {
        // `O_NOFOLLOW` (store::fsutil) refused a symbolic link at `path`.
        if err.raw_os_error() == Some(nix::libc::ELOOP) {
            return Error::Failed(format!(
                "{} is a symbolic link; teamctl never reads or writes through links in its home: remove it",
                path.display()
            ));
        }
        Error::Failed(format!("{}: {err}", path.display()))
    }

    /// The process exit code the CLI uses for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) => 2,
            Error::Failed(_) => 1,
        }
    }
}

impl From<io::Error> for Error {
    fn from(err: io::Error) -> Self {
        Error::Failed(err.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attach a path to an `io::Result`.
pub trait IoContext<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}
