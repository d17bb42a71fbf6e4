//! Which characters of a text from agents, members or other hosts a terminal would obey
//! rather than show: `output::printable` (and `member::plain` for hosts' names) escape them.

/// Control characters (C0, DEL, C1: escape sequences, carriage returns) and the bidirectional
/// controls, which reorder what follows them on the line (U+202E, right-to-left override,
/// shows `exe.txt` as `txt.exe`): embeddings and overrides U+202A..U+202E, isolates
/// U+2066..U+2069, the marks U+200E, U+200F and U+061C.
pub fn obeyed_by_terminals(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_controls_are_obeyed_letters_are_not() {
        for c in [
            '\u{1b}', '\u{7f}', '\u{9b}', '\n', '\u{202e}', '\u{2067}', '\u{61c}',
        ] {
            assert!(obeyed_by_terminals(c), "{:#x}", c as u32);
        }
        for c in ['a', 'é', '字', 'א', '\u{200d}', '\u{2070}', '\u{2029}'] {
            assert!(!obeyed_by_terminals(c), "{:#x}", c as u32);
        }
    }
}
