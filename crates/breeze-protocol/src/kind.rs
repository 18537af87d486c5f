//! The catalogue of message types: names, schemas, and detection by `schema_version`.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    AdvisorRequest, AdvisorResponse, BreezeEvent, BreezeStatus, DoctorReport, PlanDraft,
    PlanReport, ReviewInput, ReviewResult, ScaffoldInput, SprintContract, WorkerInput,
    WorkerReport,
};

/// Every message type breeze reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MessageKind {
    /// `advisor-request.v1`
    AdvisorRequest,
    /// `advisor-response.v1`
    AdvisorResponse,
    /// `review-result.v1`
    ReviewResult,
    /// `review-input.v1`
    ReviewInput,
    /// `sprint-contract.v1`
    SprintContract,
    /// `worker-report.v1`
    WorkerReport,
    /// `worker-input.v1`
    WorkerInput,
    /// `breeze-status.v1`
    BreezeStatus,
    /// `breeze-event.v1`
    BreezeEvent,
    /// `breeze-plan.v1`
    BreezePlan,
    /// `scaffold-input.v1`
    ScaffoldInput,
    /// `plan-draft.v1`
    PlanDraft,
    /// `breeze-doctor.v1`
    BreezeDoctor,
}

impl MessageKind {
    /// All kinds, in a stable order.
    pub const ALL: [MessageKind; 13] = [
        Self::AdvisorRequest,
        Self::AdvisorResponse,
        Self::ReviewResult,
        Self::ReviewInput,
        Self::SprintContract,
        Self::WorkerReport,
        Self::WorkerInput,
        Self::BreezeStatus,
        Self::BreezeEvent,
        Self::BreezePlan,
        Self::ScaffoldInput,
        Self::PlanDraft,
        Self::BreezeDoctor,
    ];

    /// The `schema_version` value, e.g. `advisor-request.v1`.
    pub fn schema_version(self) -> &'static str {
        match self {
            Self::AdvisorRequest => "advisor-request.v1",
            Self::AdvisorResponse => "advisor-response.v1",
            Self::ReviewResult => "review-result.v1",
            Self::ReviewInput => "review-input.v1",
            Self::SprintContract => "sprint-contract.v1",
            Self::WorkerReport => "worker-report.v1",
            Self::WorkerInput => "worker-input.v1",
            Self::BreezeStatus => "breeze-status.v1",
            Self::BreezeEvent => "breeze-event.v1",
            Self::BreezePlan => "breeze-plan.v1",
            Self::ScaffoldInput => "scaffold-input.v1",
            Self::PlanDraft => "plan-draft.v1",
            Self::BreezeDoctor => "breeze-doctor.v1",
        }
    }

    /// Looks a kind up by `schema_version`, with or without the `.v1` suffix.
    pub fn from_name(name: &str) -> Option<Self> {
        let name = name.trim();
        Self::ALL.into_iter().find(|kind| {
            let full = kind.schema_version();
            name == full || Some(name) == full.strip_suffix(".v1")
        })
    }

    /// The file name of the committed schema, e.g. `advisor-request.v1.schema.json`.
    pub fn schema_file_name(self) -> String {
        format!("{}.schema.json", self.schema_version())
    }

    /// The JSON Schema (draft 2020-12) generated from the Rust type.
    pub fn schema(self) -> &'static Value {
        static CACHE: [OnceLock<Value>; 13] = [const { OnceLock::new() }; 13];
        let index = Self::ALL.iter().position(|kind| *kind == self).unwrap_or(0);
        CACHE[index].get_or_init(|| match self {
            Self::AdvisorRequest => schema_value::<AdvisorRequest>(self),
            Self::AdvisorResponse => schema_value::<AdvisorResponse>(self),
            Self::ReviewResult => schema_value::<ReviewResult>(self),
            Self::ReviewInput => schema_value::<ReviewInput>(self),
            Self::SprintContract => schema_value::<SprintContract>(self),
            Self::WorkerReport => schema_value::<WorkerReport>(self),
            Self::WorkerInput => schema_value::<WorkerInput>(self),
            Self::BreezeStatus => schema_value::<BreezeStatus>(self),
            Self::BreezeEvent => schema_value::<BreezeEvent>(self),
            Self::BreezePlan => schema_value::<PlanReport>(self),
            Self::ScaffoldInput => schema_value::<ScaffoldInput>(self),
            Self::PlanDraft => schema_value::<PlanDraft>(self),
            Self::BreezeDoctor => schema_value::<DoctorReport>(self),
        })
    }

    /// The schema as pretty JSON with a trailing newline, as committed under `schemas/`.
    pub fn schema_text(self) -> String {
        let mut text = serde_json::to_string_pretty(self.schema()).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads `schema_version` from a JSON value.
    pub fn detect(value: &Value) -> Result<Self, DetectError> {
        let Some(object) = value.as_object() else {
            return Err(DetectError::NotAnObject);
        };
        match object.get("schema_version") {
            None => Err(DetectError::MissingVersion),
            Some(Value::String(version)) => Self::ALL
                .into_iter()
                .find(|kind| kind.schema_version() == version)
                .ok_or_else(|| DetectError::UnknownVersion(version.clone())),
            Some(other) => Err(DetectError::UnknownVersion(other.to_string())),
        }
    }
}

impl std::fmt::Display for MessageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.schema_version())
    }
}

/// Why the message type of a JSON value could not be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectError {
    /// The document is an array, string or number.
    #[error("the document is not a JSON object")]
    NotAnObject,
    /// No `schema_version` field.
    #[error("missing field `schema_version`; expected one of: {}", known_versions())]
    MissingVersion,
    /// A `schema_version` breeze does not know.
    #[error("unknown schema_version {0:?}; expected one of: {known}", known = known_versions())]
    UnknownVersion(String),
}

fn known_versions() -> String {
    MessageKind::ALL.map(MessageKind::schema_version).join(", ")
}

fn schema_value<T: JsonSchema>(kind: MessageKind) -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.insert(
            "$id".into(),
            Value::String(format!("https://breeze.dev/schemas/{}", kind.schema_file_name())),
        );
    }
    schema
}

/// A typed message with a known kind.
pub trait Message: DeserializeOwned + JsonSchema {
    /// The kind of this message.
    const KIND: MessageKind;
}

macro_rules! impl_message {
    ($($ty:ident),*) => {$(
        impl Message for $ty {
            const KIND: MessageKind = MessageKind::$ty;
        }
    )*};
}

impl_message!(
    AdvisorRequest,
    AdvisorResponse,
    ReviewResult,
    ReviewInput,
    SprintContract,
    WorkerReport,
    WorkerInput,
    BreezeStatus,
    BreezeEvent,
    ScaffoldInput,
    PlanDraft
);

impl Message for PlanReport {
    const KIND: MessageKind = MessageKind::BreezePlan;
}

impl Message for DoctorReport {
    const KIND: MessageKind = MessageKind::BreezeDoctor;
}
