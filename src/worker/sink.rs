//! Where a worker's turn output goes: the teammate's log file always, and the pane (the
//! worker's stdout) when stdout is not that same log file.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::store::fsutil::open_append;

pub struct Sink {
    log: Option<File>,
    to_stdout: bool,
}

impl Sink {
    pub fn open(log_path: &Path) -> Sink {
        let log = open_append(log_path).ok();
        let to_stdout = !stdout_is(log_path);
        Sink { log, to_stdout }
    }

    /// Raw turn output.
    pub fn output(&mut self, bytes: &[u8]) {
        if let Some(f) = &mut self.log {
            let _ = f.write_all(bytes);
        }
        if self.to_stdout {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(bytes);
            let _ = out.flush();
        }
    }

    /// A line of the worker's own narration.
    pub fn note(&mut self, line: &str) {
        let stamped = format!("[{}] {line}\n", crate::domain::time::now_rfc3339());
        self.output(stamped.as_bytes());
    }
}

fn stdout_is(path: &Path) -> bool {
    let Ok(target) = std::fs::metadata(path) else {
        return false;
    };
    let Ok(out) = std::fs::metadata("/proc/self/fd/1") else {
        return false;
    };
    out.dev() == target.dev() && out.ino() == target.ino()
}
