//! How the console draws. On a terminal: a scrolling region for messages, a fixed status line
//! and a fixed input line at the bottom; output is written with the cursor saved and restored,
//! so a line being typed is never overwritten. Elsewhere (a pipe, a file, an unknown size):
//! plain lines, and the status line printed only when it changes.

use std::collections::VecDeque;
use std::io::Write;

/// Lines kept to redraw the message area after a resize.
const KEPT: usize = crate::domain::bounded::SHOWN;

/// Where console output goes.
pub struct Screen {
    out: std::io::Stdout,
    /// Terminal rows and columns, when drawing on a terminal.
    size: Option<(u16, u16)>,
    status: String,
    prompt: String,
    /// The last lines shown, to redraw after a resize (tmux delivers a pane's new size late,
    /// so lines drawn just before may have gone to the wrong rows).
    shown: VecDeque<String>,
    /// The first write error (a full disk, a reader gone): the console then ends (`check`).
    failed: Option<crate::error::Error>,
}

impl Screen {
    /// `tty`: stdin and stdout are a terminal.
    pub fn new(tty: bool, prompt: &str) -> Screen {
        let size = if tty {
            crate::output::terminal_size().filter(|(r, _)| *r >= 6)
        } else {
            None
        };
        let mut s = Screen {
            out: std::io::stdout(),
            size,
            status: String::new(),
            prompt: prompt.to_string(),
            shown: VecDeque::new(),
            failed: None,
        };
        s.layout();
        s
    }

    /// Redo the layout when the terminal changed size (cheap to call on every wake).
    pub fn refresh(&mut self) {
        if self.size.is_some() {
            let now = crate::output::terminal_size().filter(|(r, _)| *r >= 6);
            if now.is_some() && now != self.size {
                self.size = now;
                self.layout();
            }
        }
    }

    /// Set the scrolling region above the two fixed lines, then redraw the whole screen from
    /// what it keeps: the last lines shown, the status line and the prompt.
    fn layout(&mut self) {
        if let Some((rows, _)) = self.size {
            let area = usize::from(rows - 2);
            // Each row erased on its own (EL), not the screen (ED): tmux keeps a cleared
            // screen in the pane's history, so every resize added a copy of the whole console
            // to the scrollback.
            let mut buf = format!("\x1b[1;{}r", rows - 2);
            for row in 1..=rows {
                buf.push_str(&format!("\x1b[{row};1H\x1b[2K"));
            }
            buf.push_str("\x1b[H");
            let skip = self.shown.len().saturating_sub(area);
            let lines: Vec<&str> = self.shown.iter().skip(skip).map(String::as_str).collect();
            buf.push_str(&lines.join("\r\n"));
            self.put(&buf);
            let status = std::mem::take(&mut self.status);
            self.status(&status);
            self.prompt();
        }
    }

    /// Print lines of output above the status line.
    pub fn line(&mut self, text: &str) {
        self.refresh();
        if self.size.is_some() {
            for l in text.split('\n') {
                crate::domain::bounded::push(&mut self.shown, l.to_string(), KEPT);
            }
        }
        match self.size {
            Some((rows, _)) => {
                let mut buf = String::from("\x1b7");
                for l in text.split('\n') {
                    buf.push_str(&format!("\x1b[{};1H\n{l}", rows - 2));
                }
                buf.push_str("\x1b8");
                self.put(&buf);
            }
            None => self.put(&format!("{text}\n")),
        }
    }

    /// Show the status line: fixed on a terminal, else printed when it changes.
    pub fn status(&mut self, text: &str) {
        self.refresh();
        match self.size {
            Some((rows, cols)) => {
                self.put(&format!(
                    "\x1b7\x1b[{};1H\x1b[2K{}\x1b8",
                    rows - 1,
                    crate::output::clip(text, cols as usize)
                ));
            }
            None if text != self.status => self.put(&format!("{text}\n")),
            None => {}
        }
        self.status = text.to_string();
    }

    /// Draw a fresh input line (only after a line was read: it clears what is typed).
    pub fn prompt(&mut self) {
        if let Some((rows, _)) = self.size {
            let prompt = format!("\x1b[{rows};1H\x1b[2K{} ", self.prompt);
            self.put(&prompt);
        }
    }

    /// Write and flush `text`, unless an earlier write failed; a failure is kept for `check`.
    fn put(&mut self, text: &str) {
        if self.failed.is_none()
            && let Err(e) = crate::out::now(text.as_bytes())
        {
            self.failed = Some(e);
        }
    }

    /// The first write error, as the console's error: it cannot go on with nowhere to print.
    pub fn check(&mut self) -> crate::error::Result<()> {
        self.failed.take().map_or(Ok(()), Err)
    }

    /// Drawing on a terminal (not plain lines)?
    pub fn is_terminal(&self) -> bool {
        self.size.is_some()
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        if let Some((rows, _)) = self.size {
            // Give the terminal its whole screen back, cursor on the last line.
            let _ = write!(self.out, "\x1b[r\x1b[{rows};1H\x1b[2K");
            let _ = self.out.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clip_counts_visible_characters_only() {
        assert_eq!(crate::output::clip("abc", 10), "abc");
        assert_eq!(
            crate::output::clip("\x1b[34mabcdef\x1b[0m", 4),
            "\x1b[34mabc…\x1b[0m"
        );
    }
}
