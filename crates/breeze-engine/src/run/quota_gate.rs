//! The gate every role call of a run passes ([`RunContext::call_role`]): a call does not
//! start on a backend paused for a usage window (`[quota] pause_at`, [`crate::quota`]).
//! It goes to the role's fallback (`[roles.<role>] fallback`) when that one is not paused,
//! or waits — journaled, said with why and until when — for the window's reset and then
//! starts by itself. Calls under way are never stopped, and a wait is no attempt. The
//! windows each call reported are saved in `run.json` as they move: `breeze status` shows
//! them, and a run killed during a wait resumes into the same wait.

use std::time::SystemTime;

use breeze_protocol::EventKind;

use super::context::RunContext;
use crate::config::RoleConfig;
use crate::error::EngineError;
use crate::progress::ProgressEvent;
use crate::quota::Pause;
use crate::roles::{RoleCall, RoleOutcome, RoleReply};

impl RunContext {
    /// Runs `call` once a backend may take it: the role's own, else its fallback, else
    /// the own one after the wait for its reset. Cancelled while it waits: a cancelled
    /// reply.
    pub async fn call_role(&self, mut call: RoleCall) -> Result<RoleReply, EngineError> {
        let settings = loop {
            match self.backend_for(&call) {
                Ok(settings) => break settings,
                Err(pause) => {
                    self.say_pause(&call, &pause).await?;
                    // A second past the reset: the backend's clock and ours need not agree.
                    let wait = pause.left(SystemTime::now()) + std::time::Duration::from_secs(1);
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = self.cancel.cancelled() => {
                            return Ok(RoleReply::of(RoleOutcome::Cancelled, Default::default()));
                        }
                    }
                }
            }
        };
        let fell_back = settings.backend != self.config.role(call.role).backend;
        if fell_back {
            self.say_fallback(&call, &settings).await?;
            // A session does not move across vendors: the fallback starts afresh from the
            // brief (the task, its findings and failures; the lane holds the work so far).
            call.resume_session = None;
            call.resume_baseline = None;
        }
        let mut reply = self.roles.invoke_with(call, settings, &self.cancel).await;
        if fell_back {
            // The task's session stays the one on its own backend, to continue there.
            reply.session = None;
        }
        self.save_windows(&reply).await?;
        Ok(reply)
    }

    /// The settings a call runs with now, or the pause it waits out: the role's own
    /// backend when it is not paused, else its fallback when that one is not.
    fn backend_for(&self, call: &RoleCall) -> Result<RoleConfig, Pause> {
        let own = self.config.role(call.role);
        let now = SystemTime::now();
        let Some(pause) = self.roles.quotas.pause(own.backend.as_str(), now) else {
            return Ok(own.clone());
        };
        match own.on_fallback() {
            Some(fallback) => match self.roles.quotas.pause(fallback.backend.as_str(), now) {
                None => Ok(fallback),
                // Both paused: whichever resets first takes the call.
                Some(other) if other.until < pause.until => Err(other),
                Some(_) => Err(pause),
            },
            None => Err(pause),
        }
    }

    /// Journals and says that the call runs on its role's fallback, if it does.
    async fn say_fallback(
        &self,
        call: &RoleCall,
        settings: &RoleConfig,
    ) -> Result<(), EngineError> {
        let own = self.config.role(call.role).backend;
        if settings.backend == own {
            return Ok(());
        }
        let (from, to) = (own.as_str().to_string(), settings.backend.as_str().to_string());
        let why = self
            .roles
            .quotas
            .pause(&from, SystemTime::now())
            .map(|pause| {
                let why = pause.why(self.roles.quotas.pause_at());
                format!("{why} until {}", moment(pause.until))
            })
            .unwrap_or_default();
        let message = format!(
            "[{}] the {} runs on its fallback {to}: {why}",
            call.task_id,
            call.role.as_str()
        );
        tracing::info!("{message}");
        self.book.report(ProgressEvent::Notice { message });
        let event = EventKind::FellBack { task: call.task_id.clone(), role: call.role, from, to };
        self.book.journal(event).await
    }

    /// Journals the wait and says it: why, and until when. The windows are saved first, so
    /// that a run killed during the wait resumes into it.
    async fn say_pause(&self, call: &RoleCall, pause: &Pause) -> Result<(), EngineError> {
        let windows = self.roles.quotas.windows();
        self.book.update(|snapshot| snapshot.windows = windows).await?;
        self.book
            .journal(EventKind::QuotaPaused {
                task: call.task_id.clone(),
                role: call.role,
                backend: pause.backend.clone(),
                window: pause.window.clone(),
                used: pause.used,
                until: pause.until,
            })
            .await?;
        let message = format!(
            "[{}] the {} waits: {}; no new call starts on {} until the window resets at {}, then the run goes on by itself (no attempt is spent)",
            call.task_id,
            call.role.as_str(),
            pause.why(self.roles.quotas.pause_at()),
            pause.backend,
            moment(pause.until),
        );
        tracing::info!("{message}");
        self.book.report(ProgressEvent::Notice { message });
        Ok(())
    }

    /// Saves the windows in `run.json` and the journal when the call's report moved them.
    async fn save_windows(&self, reply: &RoleReply) -> Result<(), EngineError> {
        let Some(backend) = reply.windows.first().map(|window| window.backend.clone()) else {
            return Ok(());
        };
        let windows = self.roles.quotas.windows();
        let moved = self.book.read(|snapshot| snapshot.windows != windows);
        if !moved {
            return Ok(());
        }
        self.book.update(|snapshot| snapshot.windows = windows).await?;
        self.book.journal(EventKind::UsageWindows { backend, windows: reply.windows.clone() }).await
    }
}

/// `2026-12-06 12:40:00 UTC`: a reset may be days ahead (a weekly window).
fn moment(unix: u64) -> String {
    format!("{} {} UTC", breeze_protocol::date_of(unix), breeze_protocol::clock_of(unix))
}
