//! Stable wire types of breeze.
//!
//! This crate is the only one an outside tool needs to talk to breeze or to read its
//! run files: the role messages (with the original harness's field names), the status report,
//! the journal events, their JSON Schemas, validation with precise messages, and the
//! exit codes of the `breeze` command.
//!
//! | message | direction | type |
//! |---|---|---|
//! | `worker-input.v1` | Lead → Worker | [`WorkerInput`] |
//! | `worker-report.v1` | Worker → Lead | [`WorkerReport`] |
//! | `advisor-request.v1` | Worker/Lead → Advisor | [`AdvisorRequest`] |
//! | `advisor-response.v1` | Advisor → Lead | [`AdvisorResponse`] |
//! | `review-input.v1` | Lead → Reviewer | [`ReviewInput`] |
//! | `review-result.v1` | Reviewer → Lead | [`ReviewResult`] |
//! | `sprint-contract.v1` | Lead → all | [`SprintContract`] |
//! | `breeze-status.v1` | `breeze status --json` | [`BreezeStatus`] |
//! | `breeze-event.v1` | `events.jsonl` | [`BreezeEvent`] |
//! | `breeze-plan.v1` | `breeze plan --json` | [`PlanReport`] |
//! | `scaffold-input.v1` | Lead → Scaffolder | [`ScaffoldInput`] |
//! | `plan-draft.v1` | Scaffolder → Lead | [`PlanDraft`] |
//! | `breeze-doctor.v1` | `breeze doctor --json` | [`DoctorReport`] |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod advisor;
mod cause;
mod common;
mod contract;
mod doctor;
mod draft;
mod event;
mod exit;
mod forge;
mod kind;
mod outcome;
mod plan;
mod review;
mod status;
pub mod validate;
mod version;
mod worker;

pub use advisor::{
    AdvisorRequest, AdvisorResponse, Decision, ExecutionContext, PriorAdvisorResponse, ReasonCode,
    ResumeEvidence, SelectedPlan,
};
pub use cause::{Cause, CauseKind, last_line, names_a_failure, telling_line};
pub use common::{Gap, MemoryScope, MemoryUpdate, Severity, TaskBrief};
pub use contract::{
    ContractAdvisor, ContractBody, ContractCheck, ContractReview, ContractSource, ContractStatus,
    ContractTask, ModelPolicy, NonGoal, RuntimeValidation, SprintContract,
};
pub use doctor::{
    CheckOutcome, DoctorCheck, DoctorReport, DoctorTool, SetupInput, SetupPath, SetupTrial,
};
pub use draft::{DraftConflict, DraftTask, PlanDraft, RepositoryView, ScaffoldInput, ScaffoldMode};
pub use event::{BreezeEvent, EventKind, Role};
pub use exit::ExitCode;
pub use forge::{PrChecks, PrFollowUp, PrReview};
pub use kind::{DetectError, Message, MessageKind};
pub use outcome::{
    AttemptOutcome, CommandEnding, FoundBy, PersonOutcome, ProcessEnding, ScopeAnswer,
    VerifyOutcome,
};
pub use plan::{
    ConflictReason, PlanConflict, PlanGroup, PlanNote, PlanParallelism, PlanReport, PlanSource,
    PlanStats, PlannedTask,
};
pub use review::{
    Check, CheckStatus, GateResult, GateStatus, ReviewInput, ReviewResult, ReviewType,
    ReviewerProfile, Verdict,
};
pub use status::{
    BreezeStatus, BudgetCaps, ContainmentStatus, PullRequestStatus, RunState, RunWait, TaskState,
    TaskStatus, Usage, UsageWindow, WaitingFor, clock_of, date_of,
};
pub use validate::{InvalidMessage, Problem};
pub use version::*;
pub use worker::{
    AdvisorGuidance, ConflictInfo, ReviewFeedback, ScopeDecision, ScopeRequest, SelfReview,
    VerifyFailure, WorkerInput, WorkerReport, WorkerStatus,
};
