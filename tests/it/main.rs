//! The one integration-test binary: every suite is a module, so the release build links one
//! test executable instead of one per suite. Run one suite with `cargo test --test it core::`.

mod common;

mod across;
mod agent_aider;
mod agent_codex;
mod agent_gemini;
mod agents;
mod attack;
mod core;
mod doorbell;
mod env;
#[cfg(feature = "nats")]
mod hosts;
mod identity;
mod interactive;
mod interrupted;
mod launch;
mod lifecycle;
mod loops;
#[cfg(feature = "nats")]
mod nats;
#[cfg(feature = "nats")]
mod nats_faults;
mod oddfiles;
mod output;
mod proptest_messages;
mod races;
mod reliability;
mod security;
mod shutdown_all;
mod spawnkill;
mod tags;
mod takeover;
mod tasks;
mod tmux;
mod up;
mod user;
mod view;
mod worker_process;
mod worktree_links;
