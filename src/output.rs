//! Terminal output: member colours (when colour is on) and message lines. Text that came from
//! agents or other members is shown through `printable`, so it cannot drive the terminal.

use owo_colors::{AnsiColors, OwoColorize};

use crate::domain::{Body, Envelope, TeamConfig};

#[derive(Debug, Clone, Copy)]
pub struct Painter {
    enabled: bool,
}

impl Painter {
    pub fn new(enabled: bool) -> Painter {
        Painter { enabled }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `text` in the named colour.
    pub fn color(&self, text: &str, color: &str) -> String {
        if !self.enabled {
            return text.to_string();
        }
        text.color(ansi(color)).to_string()
    }

    /// A member's name in its colour (looked up in the team file).
    pub fn member(&self, config: &TeamConfig, name: &str) -> String {
        let color = config
            .member(name)
            .map(|m| m.color.as_str())
            .unwrap_or("white");
        self.color(name, color)
    }

    pub fn dim(&self, text: &str) -> String {
        if self.enabled {
            text.dimmed().to_string()
        } else {
            text.to_string()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        if self.enabled {
            text.bold().to_string()
        } else {
            text.to_string()
        }
    }

    /// One message as a line or block: `time from -> to [type]: text`.
    pub fn message(&self, config: &TeamConfig, env: &Envelope) -> String {
        let time = env.timestamp.get(11..19).unwrap_or(&env.timestamp);
        let head = format!(
            "{} {} -> {}",
            self.dim(time),
            self.member(config, &env.from),
            self.member(config, &env.to)
        );
        match &env.body {
            Body::Message { text, .. } => format!("{head}: {}", printable(text.trim_end())),
            other => format!(
                "{head} {}",
                self.dim(&format!(
                    "[{}] {}",
                    other.kind(),
                    printable(&other.preview())
                ))
            ),
        }
    }
}

/// `text` safe to print on a terminal: control characters other than newline and tab (escape
/// sequences that retitle the window, move the cursor, clear the screen, ring the bell...)
/// are shown as `\u{1b}` instead of being obeyed. Machine output (`--json`) keeps the text.
pub fn printable(text: &str) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return text.to_string();
    }
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if c.is_control() => c.escape_unicode().to_string(),
            c => c.to_string(),
        })
        .collect()
}

fn ansi(color: &str) -> AnsiColors {
    match color {
        "blue" => AnsiColors::Blue,
        "green" => AnsiColors::Green,
        "yellow" => AnsiColors::Yellow,
        "magenta" => AnsiColors::Magenta,
        "cyan" => AnsiColors::Cyan,
        "red" => AnsiColors::Red,
        "black" => AnsiColors::Black,
        _ => AnsiColors::White,
    }
}
