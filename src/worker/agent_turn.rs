//! The agent's turn for one message: the member's agent (an `--agent` preset, through
//! `call.rs`, or an `--exec` command) run as one turn of its session, with the turn's
//! environment and the team prompt; a session the agent refuses is tried the other way, then
//! renewed (`session.rs`). Running the process itself is `turn.rs`.

use std::path::PathBuf;
use std::time::Duration;

use super::call::{self, Call};
use super::turn::{self, Stoppers, TurnEnd, TurnResult, TurnSpec};
use super::{Ahead, Worker};
use crate::agent::{self, preset::Preset};
use crate::domain::env;
use crate::domain::time::now_ms;
use crate::domain::{Body, Envelope, LEADER};
use crate::error::Result;

impl Worker {
    /// Run the member's agent (preset or `--exec` command) for `env` as one turn of its
    /// session; `None` when no agent answers this member.
    pub(super) async fn agent_turn(
        &mut self,
        env: &Envelope,
        text: &str,
        extra_env: &[(String, String)],
        stop: &mut Stoppers,
    ) -> Result<Option<TurnResult>> {
        if !self.member.runs_agent() {
            return Ok(None);
        }
        // The turn counts in the session once its agent has started (a turn that could not
        // start leaves no trace in the agent's conversation).
        self.live.session_turns += 1;
        let turn_no = self.live.session_turns;
        let mut vars = self.turn_env(env, text, extra_env);
        let session = self.session_id();
        vars.push((env::SESSION_ID.into(), session.clone()));
        vars.push((env::TURN.into(), turn_no.to_string()));
        let mut spec = TurnSpec {
            command: self.member.command.clone().unwrap_or_default(),
            argv: None,
            cwd: PathBuf::from(&self.member.cwd),
            env: vars,
            stdin: text.to_string(),
            timeout: self.member.turn_timeout_secs.map(Duration::from_secs),
            spill: Some(call::reply_file(&self.store.local_dir(), env)),
        };
        let Some(preset) = self.member.agent.as_deref().and_then(agent::preset::find) else {
            if let Some(name) = &self.member.agent {
                let why = format!("unknown agent preset {name:?} in the team file");
                return Ok(Some(TurnResult {
                    end: TurnEnd::Exited(127),
                    ..self.not_run(why)
                }));
            }
            // An `--exec` command: the message's text on stdin.
            let mut result = self.run_spec(&spec, stop).await;
            self.count_if_spawned(&mut result, None);
            return Ok(Some(result));
        };
        let call = Call::new(
            preset,
            &self.member,
            &self.home,
            &*self.store,
            env,
            text,
            turn_no,
        )?;
        self.run_preset(&call, &mut spec, session, turn_no, stop)
            .await
            .map(Some)
    }

    /// Run `call` as turn `turn_no` of `session`; once more the other way when the agent
    /// refuses the session, and then in a new session when it refuses that too.
    async fn run_preset(
        &mut self,
        call: &Call,
        spec: &mut TurnSpec,
        session: String,
        turn_no: u64,
        stop: &mut Stoppers,
    ) -> Result<TurnResult> {
        let mut history = match call.history(&session) {
            Ok(h) => h,
            Err(why) => return Ok(self.not_run(why)),
        };
        let prompt = self.team_prompt()?;
        if call.preset.uses_sessions_dir() {
            crate::store::fsutil::ensure_dir_levels(&call.sessions_dir, 1)?;
        }
        call.aim(spec, &session, turn_no, &prompt)?;
        let mut result = self.run_spec(spec, stop).await;
        // The session the turn ran in last.
        let mut ran_in = session;
        if call.refused(&result) {
            result = self
                .run_other_way(call, spec, &ran_in, turn_no, &prompt, stop)
                .await?;
            if call.refused(&result) {
                // Refused both ways: a new session (`renew_session`).
                let fresh = self.renew_session(spec, &ran_in);
                call.unplace(&ran_in);
                history = match call.history(&fresh) {
                    Ok(h) => h,
                    Err(why) => return Ok(self.not_run(why)),
                };
                call.aim(spec, &fresh, 1, &prompt)?;
                ran_in = fresh;
                result = self.run_spec(spec, stop).await;
            }
        }
        call.unplace(&ran_in);
        if let Some(file) = &history
            && result.succeeded()
        {
            match turn::recorded_reply(file, spec) {
                Ok(reply) => result.stdout = reply,
                Err(why) => result.no_reply(&why),
            }
        }
        self.count_if_spawned(&mut result, Some(call.preset));
        Ok(result)
    }

    /// The turn again in `session` after the agent refused it: the agent lost the session (or
    /// already has it), so once more the other way (started rather than continued, or the
    /// reverse).
    async fn run_other_way(
        &mut self,
        call: &Call,
        spec: &mut TurnSpec,
        session: &str,
        turn_no: u64,
        prompt: &str,
        stop: &mut Stoppers,
    ) -> Result<TurnResult> {
        let as_turn = if turn_no <= 1 { 2 } else { 1 };
        self.sink.note(&format!(
            "session {session} could not be {}; running the turn again {}",
            if as_turn == 1 { "continued" } else { "started" },
            if as_turn == 1 {
                "as a new session"
            } else {
                "continuing it"
            },
        ));
        call.aim(spec, session, as_turn, prompt)?;
        Ok(self.run_spec(spec, stop).await)
    }

    /// A turn whose agent did not start is taken off the session's count (and, for a preset,
    /// says how its program is installed).
    fn count_if_spawned(&mut self, result: &mut TurnResult, preset: Option<&Preset>) {
        if result.spawned {
            return;
        }
        self.live.session_turns -= 1;
        self.save_live();
        if let Some(p) = preset {
            result.stderr_tail = format!(
                "{} (is {} installed and on PATH? {})",
                result.stderr_tail, p.program, p.install
            );
        }
    }

    /// The team prompt for this member, from the team file as it is now.
    fn team_prompt(&mut self) -> Result<String> {
        let config = self.store.load_cached(&mut self.config)?;
        let mates: Vec<String> = config
            .teammates()
            .filter(|m| m.name != self.name)
            .map(|m| m.name.to_string())
            .collect();
        Ok(agent::prompt::TeamPrompt {
            team: config.name.as_str(),
            description: &config.description,
            name: self.name.as_str(),
            leader: LEADER,
            teammates: &mates,
            interactive: false,
            runs_teamctl: self
                .member
                .agent
                .as_deref()
                .and_then(agent::preset::find)
                .is_none_or(|p| p.runs_teamctl(&self.member.agent_args)),
            instructions: self.member.prompt.as_deref(),
        }
        .render())
    }

    /// A turn that fails before its agent runs, for `why`; the worker goes on.
    fn not_run(&mut self, why: String) -> TurnResult {
        self.live.session_turns -= 1;
        TurnResult {
            spawned: false,
            end: TurnEnd::Exited(1),
            stdout: String::new(),
            stderr_tail: why,
        }
    }

    /// Run a command as a turn does (own process group, recorded for `interrupt`).
    pub(super) async fn run_spec(&mut self, spec: &TurnSpec, stop: &mut Stoppers) -> TurnResult {
        let store = self.store.clone();
        let name = self.name.clone();
        let mut live = self.live.clone();
        let warm = self.warm.take();
        if self.companion.is_none() && self.ahead != Ahead::Failed {
            self.ahead = Ahead::Keep;
        }
        let result = turn::run(spec, &mut self.sink, stop, warm, move |pgid| {
            live.turn_pgid = pgid;
            live.last_seen = now_ms();
            let _ = store.set_live(&name, &live);
        })
        .await;
        self.live.turn_pgid = None;
        match result {
            Ok(r) => r,
            Err(e) => TurnResult {
                spawned: false,
                end: TurnEnd::Exited(127),
                stdout: String::new(),
                stderr_tail: e.to_string(),
            },
        }
    }

    /// When this worker's binary was removed (not upgraded: nothing is at its path), its
    /// agents' `teamctl` is not there: one line in the log, not a silent miss on `PATH`
    /// (looked at each time the worker goes idle: at its start and after each turn).
    pub(super) fn say_if_exe_gone(&mut self) {
        match crate::backend::exe::gone() {
            Some(exe) if !self.exe_gone_said => {
                self.exe_gone_said = true;
                self.sink.note(&format!(
                    "warning: this worker's teamctl ({}) was removed and nothing is in its place: its agent finds no `teamctl` there (only another on PATH, if any); install teamctl there again, or `teamctl kill {}` and spawn it with an installed one",
                    exe.display(),
                    self.name
                ));
            }
            Some(_) => {}
            None => self.exe_gone_said = false,
        }
    }

    pub(super) fn turn_env(
        &self,
        env: &Envelope,
        text: &str,
        extra: &[(String, String)],
    ) -> Vec<(String, String)> {
        let team = self.store.team().to_string();
        let mut path = crate::backend::exe::agent_bin_dir(Some(&self.home))
            .display()
            .to_string();
        if let Ok(old) = std::env::var("PATH") {
            path = format!("{path}:{old}");
        }
        let summary = match &env.body {
            Body::Message { summary, .. } => summary.clone(),
            other => other.preview(),
        };
        let mut vars = vec![
            (env::HOME.to_string(), self.home.display().to_string()),
            (env::TEAM.into(), team),
            (env::AGENT_NAME.into(), self.name.to_string()),
            (env::AGENT_ID.into(), self.member.agent_id.clone()),
            (
                env::PROMPT.into(),
                self.member.prompt.clone().unwrap_or_default(),
            ),
            (env::FROM.into(), env.from.clone()),
            (env::MESSAGE.into(), turn::env_value(text)),
            (env::MESSAGE_ID.into(), env.id.clone()),
            (env::SUMMARY.into(), turn::env_value(&summary)),
            (env::HOPS.into(), env.hops.to_string()),
            ("PATH".into(), path),
        ];
        if let Some(model) = &self.member.model {
            vars.push((env::MODEL.into(), model.clone()));
        }
        if let Some(word) = &self.member.pane_nonce {
            vars.push((env::PLACEMENT.into(), word.clone()));
        }
        vars.extend(extra.iter().cloned());
        vars
    }
}
