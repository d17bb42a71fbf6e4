//! The worker's shutdown path (SPEC section 7): a request from the leader is answered as soon
//! as the current turn is done. The agent decides in a turn of its own (`teamctl
//! shutdown-response` inside it records a refusal), or `--on-shutdown` does, or the worker
//! approves; an approval writes `stopped` before the answer and the worker exits.

use super::turn::{self, Stoppers, TurnEnd};
use super::{Next, Worker};
use crate::domain::env;
use crate::domain::message::Approve;
use crate::domain::time::now_ms;
use crate::domain::{BackendType, Body, Envelope, LEADER, Status, TurnInfo};
use crate::error::Result;

impl Worker {
    /// Answer a shutdown request: the leader's only; asked of the agent in a turn of its own
    /// (a preset agent), of `--on-shutdown`, or approved at once.
    pub(super) async fn answer_shutdown(
        &mut self,
        req: &Envelope,
        stop: &mut Stoppers,
    ) -> Result<Next> {
        let Body::ShutdownRequest { request_id, reason } = &req.body else {
            return Ok(Next::Continue);
        };
        self.remember_control(&req.id);
        if req.from != LEADER {
            self.sink.note(&format!(
                "ignored a shutdown request from {} (only {LEADER} may ask)",
                req.from
            ));
            return Ok(Next::Continue);
        }
        if !self.awaited(request_id) {
            // Left in the inbox by a stop the leader gave up on (a shutdown that timed out,
            // then `kill` or `shutdown --force`): answered now, it would stop the worker a
            // `resume` just started. Remembered as handled, written at once.
            self.sink.note(&format!(
                "ignored shutdown request {request_id}: {LEADER} no longer waits for its answer (it ended or started this teammate again since)"
            ));
            self.save_live();
            return Ok(Next::Continue);
        }
        self.sink.note(&format!(
            "shutdown requested{}",
            reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
        // An interactive agent is not asked (its pane's environment cannot carry the request
        // id): the companion approves now that no delivered turn is running.
        let asks_agent = self.member.agent.is_some()
            && self.member.on_shutdown.is_none()
            && self.companion.is_none();
        let refusal = if asks_agent {
            match self
                .shutdown_turn(req, request_id, reason.as_deref(), stop)
                .await?
            {
                Ok(refusal) => refusal,
                Err(next) => return Ok(next),
            }
        } else {
            self.shutdown_refusal(request_id, reason.as_deref()).await
        };
        if let Some(refusal) = refusal {
            self.sink.note(&format!("refusing shutdown: {refusal}"));
            let body = Body::ShutdownResponse {
                request_id: request_id.clone(),
                approve: Approve(false),
                reason: Some(refusal),
                pane_id: self.live.pane_id.clone(),
                backend_type: self.member.backend_type,
            };
            self.send(LEADER, body)?;
            self.set_status(Status::Idle);
            return Ok(Next::Continue);
        }
        self.go_idle();
        self.set_status(Status::ShutdownPending);
        // Stopped is written before the answer: the leader may end the pane right after it.
        self.live.status = Status::Stopped;
        self.live.since = now_ms();
        self.save_live();
        let body = Body::ShutdownResponse {
            request_id: request_id.clone(),
            approve: Approve(true),
            reason: None,
            pane_id: self.live.pane_id.clone(),
            backend_type: Some(self.member.backend_type.unwrap_or(BackendType::Process)),
        };
        self.send(LEADER, body)?;
        self.sink.note("shutdown approved; exiting");
        self.close_own_pane();
        Ok(Next::Exit)
    }

    /// Whether the leader still waits for the answer to `request_id`. It records the request
    /// it waits for with the member before sending it (`leader::expect_shutdowns`) and clears
    /// the record once it has the answer or gives up: `kill`, `shutdown --force`, a worker
    /// found dead, a new start of this teammate. A request it no longer waits for would only
    /// stop a worker nobody asked to stop; its answer would be ignored too (`leader::act_on`).
    /// Read anew from the team file (a request is rare); when it cannot be read, answered as
    /// before.
    fn awaited(&self, request_id: &str) -> bool {
        match self
            .store
            .roster_with(&[&self.name])
            .and_then(|r| r.member(self.name.as_str()))
        {
            Ok(Some(m)) => m.shutdown_request_id.as_deref() == Some(request_id),
            Ok(None) | Err(_) => true,
        }
    }

    /// On a store that hosts share, the leader may run on another host, where it cannot close
    /// this worker's pane: the worker closes it itself (its own, tag checked) once it has
    /// answered. Closing it ends this process too, which is on its way out.
    fn close_own_pane(&mut self) {
        if !self.store.spans_hosts() || self.member.backend_type != Some(BackendType::Tmux) {
            return;
        }
        let Some(pane) = &self.live.pane_id else {
            return;
        };
        let backend = crate::backend::tmux::TmuxBackend::for_member(&self.member);
        let known = crate::backend::tmux::Known::of(&self.member, Some(&self.live));
        if let Err(e) = backend.close_tagged(pane, &self.member.agent_id, &known) {
            self.sink
                .note(&format!("warning: cannot close my pane: {e}"));
        }
    }

    /// A preset agent decides on a shutdown request in a turn of its own: the request (reason
    /// and id) is the message, and `teamctl shutdown-response` inside the turn records the
    /// answer. `Ok(Some(reason))` refuses, `Ok(None)` approves (also when the turn recorded
    /// nothing); `Err(next)` when the worker was stopped meanwhile.
    async fn shutdown_turn(
        &mut self,
        req: &Envelope,
        request_id: &str,
        reason: Option<&str>,
        stop: &mut Stoppers,
    ) -> Result<std::result::Result<Option<String>, Next>> {
        let text = format!(
            "Shutdown request {request_id} from {LEADER}: {}.\n\nIf you can stop now, finish up and end your turn (no answer needed: you will be stopped). If you must not stop yet, run `teamctl shutdown-response reject --reason \"why\"`.",
            reason.unwrap_or("no reason given")
        );
        let extra = vec![
            (env::SHUTDOWN_REQUEST_ID.to_string(), request_id.to_string()),
            (
                env::SHUTDOWN_REASON.to_string(),
                turn::env_value(reason.unwrap_or_default()),
            ),
        ];
        // No stale answer from an earlier request counts.
        let _ = self.store.take_shutdown_answer(&self.name, request_id);
        self.live.current_turn = Some(TurnInfo {
            message_id: req.id.clone(),
            from: req.from.clone(),
            summary: req.body.preview(),
            started_at: now_ms(),
            hops: req.hops,
        });
        self.mark_status(Status::Working);
        let result = self.agent_turn(req, &text, &extra, stop).await?;
        self.live.current_turn = None;
        if let Some(r) = &result {
            if r.end == TurnEnd::Stopped {
                self.exit_on_signal("a stop signal")?;
                return Ok(Err(Next::Abandon));
            }
            if !r.succeeded() {
                self.sink
                    .note(&format!("shutdown turn: {}; approving", r.failure()));
            }
        }
        Ok(Ok(self
            .store
            .take_shutdown_answer(&self.name, request_id)
            .filter(|a| !a.approve)
            .map(|a| {
                a.reason
                    .unwrap_or_else(|| format!("{} refused without a reason", self.name))
            })))
    }

    /// Run `--on-shutdown` (the request on stdin as JSON and in the environment); a non-zero
    /// exit refuses with its output as the reason.
    async fn shutdown_refusal(&mut self, request_id: &str, reason: Option<&str>) -> Option<String> {
        let cmd = self.member.on_shutdown.clone()?;
        let request = serde_json::json!({
            "type": "shutdown_request",
            "requestId": request_id,
            "reason": reason,
            "from": LEADER,
        })
        .to_string();
        let child = tokio::process::Command::new(turn::SHELL)
            .arg("-c")
            .arg(&cmd)
            .current_dir(&self.member.cwd)
            .env(env::AGENT_NAME, self.name.as_str())
            .env(env::TEAM, self.store.team().as_str())
            .env(env::AGENT_ID, &self.member.agent_id)
            .env(env::SHUTDOWN_REQUEST_ID, request_id)
            .env(
                env::SHUTDOWN_REASON,
                turn::env_value(reason.unwrap_or_default()),
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let out = match child {
            Ok(mut child) => {
                if let Some(mut stdin) = child.stdin.take() {
                    use tokio::io::AsyncWriteExt;
                    let _ = stdin.write_all(request.as_bytes()).await;
                    let _ = stdin.write_all(b"\n").await;
                }
                // The start of each stream only (`bounded::REASON`).
                let (stdout, stderr) = tokio::join!(
                    read_start(child.stdout.take()),
                    read_start(child.stderr.take())
                );
                child.wait().await.map(|status| (status, stdout, stderr))
            }
            Err(e) => Err(e),
        };
        match out {
            Ok((status, _, _)) if status.success() => None,
            Ok((status, stdout, stderr)) => {
                let mut why = String::from_utf8_lossy(&stdout).trim().to_string();
                if why.is_empty() {
                    why = String::from_utf8_lossy(&stderr).trim().to_string();
                }
                if why.is_empty() {
                    why = format!("--on-shutdown exited with {status}");
                }
                // A NUL byte would make the refusal itself undeliverable.
                Some(why.replace('\0', "\u{fffd}"))
            }
            Err(e) => Some(format!("--on-shutdown could not run: {e}")),
        }
    }
}

/// The first `bounded::REASON` bytes of `stream`; the rest is read and dropped, so the command
/// ends as it would have (a closed pipe would kill it, and an approval would turn refusal).
async fn read_start(stream: Option<impl tokio::io::AsyncRead + Unpin>) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut start = Vec::new();
    if let Some(mut stream) = stream {
        let _ = (&mut stream)
            .take(crate::domain::bounded::REASON)
            .read_to_end(&mut start)
            .await;
        let _ = tokio::io::copy(&mut stream, &mut tokio::io::sink()).await;
    }
    start
}
