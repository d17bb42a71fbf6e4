//! Messages across teams (`send NAME@TEAM`): plain text reaches a member of another team kept
//! in the same place, under the sender's agent id, and the answer comes back the same way.
//! Anything else (structured messages, unknown teams or members, bad addresses) is refused
//! with nothing written. Two teams in one home stand for two teams in one store.

use std::time::Duration;

use crate::common::{TestEnv, snapshot, wait_until};

const T: Duration = Duration::from_secs(30);

/// Two teams in one home: `t1` (made first) and `t2` (the current one).
fn two_teams() -> TestEnv {
    let env = TestEnv::new();
    env.ok(&["create", "t1"]);
    // A home's leader leads one team; a second team of the same home (one left by another
    // leader, say) is made here by forgetting the first as current.
    std::fs::remove_file(env.home_path().join("current")).unwrap();
    env.ok(&["create", "t2"]);
    env
}

fn texts(env: &TestEnv, team: &str, member: &str) -> Vec<(String, String)> {
    env.inbox(team, member)
        .into_iter()
        .filter(|m| m["type"].is_null() || m["type"] == "message")
        .filter_map(|m| Some((m["from"].as_str()?.into(), m["text"].as_str()?.into())))
        .collect()
}

#[test]
fn plain_text_reaches_another_team_and_the_answer_comes_back() {
    let env = two_teams();
    env.ok(&[
        "--team",
        "t2",
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "printf 'bob read: %s, from %s' \"$(cat)\" \"$TEAMCTL_FROM\"",
    ]);
    let out = env.ok(&["--team", "t1", "send", "bob@t2", "hello from t1"]);
    assert_eq!(out.trim(), "sent to bob@t2");
    // The recipient sees the sender's full id.
    assert_eq!(
        texts(&env, "t2", "bob"),
        [("team-lead@t1".to_string(), "hello from t1".to_string())]
    );
    // The answer goes back to the sender's team, under the teammate's own agent id.
    wait_until("bob's answer in t1", T, || {
        !texts(&env, "t1", "team-lead").is_empty()
    });
    let back = texts(&env, "t1", "team-lead");
    assert_eq!(back.len(), 1, "{back:?}");
    assert_eq!(back[0].0, "bob@t2");
    assert!(
        back[0]
            .1
            .contains("bob read: hello from t1, from team-lead@t1"),
        "{back:?}"
    );
    // Nothing of it went to t2's own leader.
    assert!(texts(&env, "t2", "team-lead").is_empty());
    // An address in the sender's own team is the plain name.
    let out = env.ok(&["--team", "t2", "send", "bob@t2", "own team"]);
    assert_eq!(out.trim(), "sent to bob");
    assert_eq!(texts(&env, "t2", "bob")[1].0, "team-lead");
}

#[test]
fn what_cannot_cross_is_refused_and_nothing_is_written() {
    let env = two_teams();
    env.ok(&[
        "--team",
        "t2",
        "spawn",
        "bob",
        "--backend",
        "process",
        "--exec",
        "cat",
    ]);
    env.ok(&["--team", "t2", "kill", "bob"]);
    let before = snapshot(env.home_path());
    let refused = [
        (
            vec![
                "send",
                "bob@t2",
                "--structured",
                r#"{"type":"shutdown_request","requestId":"r1","reason":"x"}"#,
            ],
            "plain text",
        ),
        (
            vec!["send", "nobody@t2", "hi"],
            "no member \"nobody\" in team t2",
        ),
        (vec!["send", "bob@t9", "hi"], "no team \"t9\""),
        (vec!["send", "bob@t2@t1", "hi"], "NAME@TEAM, with one @"),
        (
            vec!["send", "bob@../t2", "hi"],
            "invalid recipient's team name",
        ),
        (vec!["send", "bob@t2", "   "], "the text is empty"),
        (vec!["ask", "bob@t2", "hi"], "use `teamctl send bob@t2`"),
    ];
    for (args, why) in refused {
        let mut all = vec!["--team", "t1"];
        all.extend(args.iter());
        let err = env.fails(&all, 2);
        assert!(err.contains(why), "{args:?}: {err}");
    }
    assert!(
        snapshot(env.home_path()) == before,
        "a refused send across teams wrote something"
    );
    // A stopped recipient keeps the message; its own leader decides when it runs again.
    let out = env.run(&["--team", "t1", "send", "bob@t2", "while you were out"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bob@t2 is stopped"),
        "{out:?}"
    );
    assert_eq!(env.member_status("bob"), "stopped");
    assert_eq!(texts(&env, "t2", "bob").len(), 1);
}
