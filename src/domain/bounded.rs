//! Bounded memory and disk: what a long-lived process (a worker, the console) keeps per
//! teammate or per message is capped, oldest out first, so its memory stays flat however long
//! it runs (the seed's 50-message cap after a 292-agent, 36.8 GB incident; issue 12 item 7); what
//! one turn writes to disk is capped too.

use std::collections::VecDeque;

/// Recent message ids a worker keeps to drop repeats.
pub const SEEN: usize = 50;
/// Control requests (shutdown, plan answers) a worker's live state remembers as handled.
pub const HANDLED: usize = 64;
/// Lines the console keeps to redraw its message area after a resize.
pub const SHOWN: usize = 500;
/// Bytes of one turn's output written to the teammate's log; the rest is shown in the pane
/// only. A runaway agent (`yes`) wrote 857 MB there in 3 s (new-user QA).
pub const TURN_LOG: u64 = 16 * 1024 * 1024;
/// Bytes of a reply too long for a message kept in its file (`replies/ID.txt`).
pub const SPILL: u64 = 64 * 1024 * 1024;
/// Bytes of each output stream of an `--on-shutdown` command read as its refusal's reason;
/// 50 MB of it were read into memory, logged whole and made the refusal undeliverable (QA).
pub const REASON: u64 = 4096;

/// Push `item`, dropping the oldest first when `queue` already holds `cap`.
pub fn push<T>(queue: &mut VecDeque<T>, item: T, cap: usize) {
    while queue.len() >= cap.max(1) {
        queue.pop_front();
    }
    queue.push_back(item);
}

/// Remember `item` once (nothing when it is there already), dropping the oldest past `cap`.
pub fn remember<T: PartialEq>(list: &mut Vec<T>, item: T, cap: usize) {
    if list.contains(&item) {
        return;
    }
    list.push(item);
    if list.len() > cap {
        let over = list.len() - cap;
        list.drain(..over);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_never_holds_more_than_its_cap_and_keeps_the_newest() {
        let mut q = VecDeque::new();
        for i in 0..10 * SEEN {
            push(&mut q, i, SEEN);
            assert!(q.len() <= SEEN);
        }
        assert_eq!(q.len(), SEEN);
        assert_eq!(q.front(), Some(&(9 * SEEN)));
        assert_eq!(q.back(), Some(&(10 * SEEN - 1)));
    }

    #[test]
    fn a_remembered_list_holds_each_once_and_at_most_its_cap() {
        let mut l = Vec::new();
        for i in 0..3 * HANDLED {
            remember(&mut l, i, HANDLED);
            remember(&mut l, i, HANDLED);
        }
        assert_eq!(l.len(), HANDLED);
        assert_eq!(l.first(), Some(&(2 * HANDLED)));
        assert_eq!(l.last(), Some(&(3 * HANDLED - 1)));
    }
}
