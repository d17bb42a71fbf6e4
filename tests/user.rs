//! End-to-end tests from a new user's point of view: odd inputs and odd orders of commands
//! that no issue lists (QA). The real binary in a temporary home, process backend unless the
//! case is about tmux.

mod common;

use common::TestEnv;

/// Error lines name teams and members as `"alpha"`, never as a Rust value `Name("alpha")`.
#[test]
fn errors_quote_names_plainly() {
    let env = TestEnv::new();
    env.ok(&["create", "alpha"]);
    let taken = env.fails(&["create", "beta"], 2);
    assert!(taken.contains("team \"alpha\""), "{taken}");
    let gone = env.fails(&["--team", "gone", "status"], 2);
    assert!(gone.contains("no team \"gone\""), "{gone}");
    for e in [&taken, &gone] {
        assert!(!e.contains("Name("), "{e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
}
