//! Symbolic links planted in a team's `worktrees/` (attacker QA): every path that removes a
//! team's worktrees (`delete`, forced or not, of a leftover or of a team; `doctor --fix` of a
//! leftover, or of a worktree that belongs to no member) once took the link for a worktree and
//! ran `git worktree remove --force` on the repository it points at, deleting a worktree
//! outside the home with its uncommitted work. Now the link itself is removed and said, and
//! what it points at stays as it was.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::TestEnv;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The user's own work outside the home: a repository with two worktrees, one with an
/// uncommitted draft, one clean (nothing a dirty check would keep).
struct Outside {
    repo: PathBuf,
    /// The directory holding both worktrees.
    trees: PathBuf,
    dirty: PathBuf,
    clean: PathBuf,
}

impl Outside {
    fn new(env: &TestEnv) -> Outside {
        let base = env.work.path().join("outside");
        let repo = base.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README"), "hello\n").unwrap();
        git(&repo, &["add", "README"]);
        git(&repo, &["commit", "-q", "-m", "first"]);
        let trees = base.join("trees");
        let (dirty, clean) = (trees.join("dirty"), trees.join("clean"));
        for (tree, branch) in [(&dirty, "feature"), (&clean, "other")] {
            git(
                &repo,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    branch,
                    tree.to_str().unwrap(),
                ],
            );
        }
        std::fs::write(dirty.join("draft.txt"), "my draft\n").unwrap();
        Outside {
            repo: repo.canonicalize().unwrap(),
            trees: trees.canonicalize().unwrap(),
            dirty: dirty.canonicalize().unwrap(),
            clean: clean.canonicalize().unwrap(),
        }
    }

    /// Plant links to both worktrees in `team_dir/worktrees` (made if missing).
    fn plant(&self, team_dir: &Path) -> [PathBuf; 2] {
        let dir = team_dir.join("worktrees");
        std::fs::create_dir_all(&dir).unwrap();
        let (x, y) = (dir.join("x"), dir.join("y"));
        symlink(&self.dirty, &x).unwrap();
        symlink(&self.clean, &y).unwrap();
        [x, y]
    }

    /// Plant a link to the clean worktree only: no dirty check keeps a removal from it.
    fn plant_clean(&self, team_dir: &Path) -> PathBuf {
        let dir = team_dir.join("worktrees");
        std::fs::create_dir_all(&dir).unwrap();
        let y = dir.join("y");
        symlink(&self.clean, &y).unwrap();
        y
    }

    /// Both worktrees are still there, whole, and still known to their repository.
    fn intact(&self, after: &str) {
        assert_eq!(
            std::fs::read_to_string(self.dirty.join("draft.txt")).ok(),
            Some("my draft\n".to_string()),
            "{after}: the uncommitted draft outside the home is gone"
        );
        for tree in [&self.dirty, &self.clean] {
            assert!(
                tree.join("README").is_file(),
                "{after}: the worktree {} outside the home is gone",
                tree.display()
            );
        }
        let list = git(&self.repo, &["worktree", "list", "--porcelain"]);
        for tree in [&self.dirty, &self.clean] {
            assert!(
                list.contains(&format!("worktree {}\n", tree.display())),
                "{after}: {} is no longer a worktree of its repository: {list}",
                tree.display()
            );
        }
    }
}

fn gone(path: &Path) -> bool {
    path.symlink_metadata().is_err()
}

/// A team directory without a team file, with nothing in it but what the test puts there.
fn leftover(env: &TestEnv, team: &str) -> PathBuf {
    use std::os::unix::fs::DirBuilderExt;
    let dir = env.team_dir(team);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .unwrap();
    dir
}

fn doctor(env: &TestEnv, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--json", "doctor"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code().unwrap(), v)
}

fn problems(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["level"] == "problem")
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect()
}

/// The brief's reproduction: a team whose teammate ran, its team file gone, links planted in
/// its `worktrees/`; `delete --force --team T` removed the worktree the link pointed at. And
/// a leftover whose `worktrees` directory itself is a link to the directory holding them.
#[test]
fn delete_force_of_a_leftover_removes_links_not_what_they_point_at() {
    let env = TestEnv::new();
    let outside = Outside::new(&env);
    env.ok(&["create", "esc"]);
    env.ok(&["spawn", "eve", "--backend", "process", "--exec", "cat"]);
    env.ok(&["shutdown", "--all"]);
    let dir = env.team_dir("esc");
    std::fs::remove_file(dir.join("config.json")).unwrap();
    let links = outside.plant(&dir);
    let out = env.run(&["delete", "--force", "--team", "esc"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    outside.intact("delete --force of a leftover");
    for link in &links {
        assert!(
            err.contains(&format!("symbolic link {}", link.display())),
            "{err}"
        );
    }
    assert!(gone(&dir), "the leftover is still there");

    // `worktrees` itself a link: nothing behind it is listed, the link goes.
    let dir = leftover(&env, "esc2");
    symlink(&outside.trees, dir.join("worktrees")).unwrap();
    let out = env.run(&["delete", "--force", "--team", "esc2"]);
    assert!(out.status.success(), "{out:?}");
    outside.intact("delete --force of a leftover whose worktrees directory is a link");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!(
            "symbolic link {}",
            dir.join("worktrees").display()
        )),
        "{out:?}"
    );
    assert!(gone(&dir));
}

/// `delete --team T` (no `--force`) of a leftover without mail: the link to a clean worktree
/// was followed and that worktree removed; a link to a worktree with uncommitted changes is
/// no reason to refuse (nothing behind it is touched).
#[test]
fn delete_of_a_leftover_removes_links_not_what_they_point_at() {
    let env = TestEnv::new();
    let outside = Outside::new(&env);
    env.ok(&["create", "home-team"]);
    let dir = leftover(&env, "lk");
    let link = outside.plant_clean(&dir);
    let out = env.run(&["delete", "--team", "lk"]);
    outside.intact("delete of a leftover");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("symbolic link {}", link.display())),
        "{out:?}"
    );
    assert!(gone(&dir));

    let dir = leftover(&env, "lk2");
    let links = outside.plant(&dir);
    let out = env.run(&["delete", "--team", "lk2"]);
    outside.intact("delete of a leftover");
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    for link in &links {
        assert!(
            err.contains(&format!("symbolic link {}", link.display())),
            "{err}"
        );
    }
    assert!(gone(&dir));
}

/// `doctor --fix` of a leftover (no mail, old enough not to be a team being made): the links
/// go with it, what they point at stays, and a second look finds nothing.
#[test]
fn doctor_fix_of_a_leftover_removes_links_not_what_they_point_at() {
    let env = TestEnv::new();
    let outside = Outside::new(&env);
    env.ok(&["create", "home-team"]);
    // One with a link to the clean worktree only (nothing dirty to stop the removal), one
    // with both.
    let (clean_only, both) = (leftover(&env, "lk"), leftover(&env, "lk2"));
    outside.plant_clean(&clean_only);
    outside.plant(&both);
    for dir in [&clean_only, &both] {
        let ok = Command::new("touch")
            .args(["-h", "-d", "2 hours ago"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(ok.success());
    }
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = problems(&report).join("\n");
    let (code, report) = doctor(&env, &["--fix"]);
    outside.intact("doctor --fix of a leftover");
    for dir in [&clean_only, &both] {
        assert!(
            found.contains(&format!(
                "{} is a team directory without a team file",
                dir.display()
            )),
            "{found}"
        );
    }
    assert_eq!(code, 0, "{report:#}");
    let fixed = report["fixed"].to_string();
    assert!(fixed.contains("symbolic link"), "{report:#}");
    assert!(gone(&clean_only) && gone(&both));
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 0, "{report:#}");
}

/// `doctor --fix` on a live team (its team file there) with links in its `worktrees/` that
/// belong to no member, one of them pointing nowhere: each is reported as a link, `--fix`
/// unlinks it (once: the fix converges, no "already gone" while it stays) and the worktrees
/// it pointed at stay.
#[test]
fn doctor_fix_of_unowned_links_on_a_live_team_removes_only_the_links() {
    let env = TestEnv::new();
    let outside = Outside::new(&env);
    env.ok(&["create", "live"]);
    env.ok(&["spawn", "bob", "--backend", "process", "--exec", "cat"]);
    let dir = env.team_dir("live");
    let mut links = outside.plant(&dir).to_vec();
    let dangling = dir.join("worktrees/z");
    symlink(env.work.path().join("nowhere"), &dangling).unwrap();
    links.push(dangling);
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 1, "{report:#}");
    let found = problems(&report);
    let (code, report) = doctor(&env, &["--fix"]);
    outside.intact("doctor --fix of a live team");
    for link in &links {
        assert!(
            found.iter().any(|p| p.starts_with(&format!(
                "{} in team live is a symbolic link",
                link.display()
            ))),
            "{found:#?}"
        );
    }
    assert_eq!(code, 0, "{report:#}");
    let fixed: Vec<&str> = report["fixed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(fixed.len(), 3, "{fixed:#?}");
    assert!(
        fixed.iter().all(|f| f.contains("symbolic link")),
        "{fixed:#?}"
    );
    for link in &links {
        assert!(gone(link), "{} is still there", link.display());
    }
    let (code, report) = doctor(&env, &[]);
    assert_eq!(code, 0, "{report:#}");
    // The team is untouched.
    assert_eq!(env.member_status("bob"), "idle");
    env.ok(&["shutdown", "bob"]);
}

/// A teammate's own worktree, made by `spawn --worktree`, replaced by a link to another
/// worktree of the same repository: `resume` refuses to run in it, `shutdown
/// --remove-worktree` and `delete` (plain: the link is not dirty) remove the link, never the
/// worktree behind it (git, asked to remove the path, removed the worktree it resolves to).
#[test]
fn a_teammates_worktree_replaced_by_a_link_is_unlinked_not_followed() {
    let env = TestEnv::new();
    let outside = Outside::new(&env);
    env.ok(&["create", "own"]);
    let repo = outside.repo.display().to_string();
    env.ok(&[
        "spawn",
        "bob",
        "--backend",
        "process",
        "--cwd",
        &repo,
        "--worktree",
        "--exec",
        "cat",
    ]);
    env.ok(&["shutdown", "bob", "--remove-worktree"]);
    let tree = env.team_dir("own").join("worktrees/bob");
    assert!(gone(&tree));
    symlink(&outside.dirty, &tree).unwrap();
    let out = env.run(&["shutdown", "bob", "--remove-worktree"]);
    outside.intact("shutdown --remove-worktree");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(&format!("removed bob's symbolic link {}", tree.display())),
        "{out:?}"
    );
    assert!(gone(&tree));
    symlink(&outside.clean, &tree).unwrap();
    let err = env.fails(&["resume", "bob"], 1);
    assert!(err.contains("is a symbolic link"), "{err}");
    let out = env.run(&["delete"]);
    outside.intact("delete");
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("symbolic link {}", tree.display())),
        "{out:?}"
    );
    assert!(gone(&env.team_dir("own")));
}
