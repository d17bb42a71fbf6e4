//! Typed errors for the library, each carrying the exit code the CLI reports:
//! `2` for bad input (nothing was written), `1` for a failure while acting (a closed output
//! aside: `Closed`, which ends the command as SIGPIPE would).

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
    /// An I/O failure (exit 1), keeping its kind and source, with what it concerns (a path,
    /// or what was being done) when known.
    #[error("{}", io_line(.context, .source))]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// Standard output's reader went away (EPIPE: `teamctl log -f | head -1`). Not a failure
    /// to report: `main` ends quietly, as a command killed by SIGPIPE does (`out.rs`).
    #[error("the output's reader went away")]
    Closed,
    /// Ctrl-C (SIGINT) or SIGTERM caught by a command that then stopped at a safe point
    /// (`signals`): the line says what it left; the exit code is 128 + the signal (130 for
    /// Ctrl-C), as a shell reports a command the signal ended.
    #[error("{message}")]
    Interrupted { code: i32, message: String },
}

/// The source of the I/O error `store::fsutil` gives when a state file's path holds something
/// other than a regular file (a FIFO, a directory, a device).
#[derive(Debug, thiserror::Error)]
#[error("not a regular file")]
pub struct NotRegular;

/// An I/O error's line: `CONTEXT: ERROR`, or the error alone.
fn io_line(context: &str, err: &io::Error) -> String {
    match context {
        "" => err.to_string(),
        c => format!("{c}: {err}"),
    }
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
        if err.get_ref().is_some_and(|e| e.is::<NotRegular>()) {
            return Error::Failed(format!(
                "{} is not a regular file; teamctl keeps only regular files there: remove it",
                path.display()
            ));
        }
        Error::io_while(path.display().to_string(), err)
    }

    /// An I/O error met while doing `what` (`cannot find the teamctl binary`).
    pub fn io_while(what: impl Into<String>, err: io::Error) -> Self {
        Error::Io {
            context: what.into(),
            source: err,
        }
    }

    /// The I/O error's kind, when this is one.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }

    /// The process exit code the CLI uses for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::BadInput(_) => 2,
            Error::Failed(_) | Error::Io { .. } | Error::Closed => 1,
            Error::Interrupted { code, .. } => *code,
        }
    }
}

impl From<io::Error> for Error {
    fn from(err: io::Error) -> Self {
        Error::io_while("", err)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_keeps_its_kind_and_source_and_reads_as_before() {
        let e = Error::io(Path::new("/x/y"), io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(e.io_kind(), Some(io::ErrorKind::NotFound));
        assert!(std::error::Error::source(&e).is_some());
        assert_eq!(
            e.to_string(),
            format!("/x/y: {}", io::Error::from(io::ErrorKind::NotFound))
        );
        assert_eq!(e.exit_code(), 1);
        let e = Error::from(io::Error::other("boom"));
        assert_eq!(e.to_string(), "boom");
        assert_eq!(e.io_kind(), Some(io::ErrorKind::Other));
    }
}
