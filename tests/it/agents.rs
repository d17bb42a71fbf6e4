//! Real agent CLIs as teammates: the real Claude Code CLI (npm `@anthropic-ai/claude-code`,
//! found by `common::fake_model::claude_bin`) run offline against a scripted stand-in for the
//! Messages API on loopback.

use std::process::Command;

use crate::common::fake_model::{self, FakeModel, Reply};

/// The stand-in itself, against the real CLI: a session continued with `--resume` carries every
/// earlier user turn, and a Bash tool call runs and comes back as a tool result.
#[test]
fn fake_model_serves_the_real_claude_cli() {
    let model = FakeModel::start(|req| {
        if fake_model::ends_with_tool_result(req) {
            let out = fake_model::last_tool_result(req).unwrap_or_default();
            return Reply::text(format!("tool said {}", out.trim()));
        }
        let text = fake_model::last_user_text(req);
        if text.contains("run it") {
            return Reply::bash("echo hello-from-bash");
        }
        Reply::text(format!("turns={}", fake_model::user_turns(req)))
    });
    let work = tempfile::tempdir().unwrap();
    let cc = fake_model::claude(&model, &[work.path()]);
    let session = "0b6a3c1e-7f7e-4a53-9a55-2b3f3f6b8a11";
    let run = |args: &[&str]| {
        let out = Command::new(&cc.bin)
            .args(args)
            .current_dir(work.path())
            .envs(cc.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "claude {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(run(&["-p", "--session-id", session, "one"]), "turns=1");
    assert_eq!(run(&["-p", "--resume", session, "two"]), "turns=2");
    // (`--allowedTools` takes several values: the prompt goes before it.)
    let bash = run(&[
        "-p",
        "run it",
        "--resume",
        session,
        "--allowedTools",
        "Bash(echo:*)",
    ]);
    assert_eq!(bash, "tool said hello-from-bash");
}
