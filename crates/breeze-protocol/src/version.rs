//! Marker types for the `schema_version` field of every message.
//!
//! Each message carries a fixed version string. Modelling it as a zero-sized type
//! means a wrong version is a deserialization error naming the expected value, and
//! the generated JSON Schema pins the field with `const`.

/// Declares a zero-sized type that (de)serializes as exactly one string.
macro_rules! schema_version {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The version string this type stands for.
            pub const VALUE: &'static str = $value;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let found = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                if found == $value {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(format_args!(
                        "expected schema_version \"{}\", found \"{}\"",
                        $value, found
                    )))
                }
            }
        }

        impl schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string", "const": $value })
            }
        }
    };
}

schema_version!(
    /// `advisor-request.v1`
    AdvisorRequestV1 = "advisor-request.v1"
);
schema_version!(
    /// `advisor-response.v1`
    AdvisorResponseV1 = "advisor-response.v1"
);
schema_version!(
    /// `review-result.v1`
    ReviewResultV1 = "review-result.v1"
);
schema_version!(
    /// `review-input.v1`
    ReviewInputV1 = "review-input.v1"
);
schema_version!(
    /// `sprint-contract.v1`
    SprintContractV1 = "sprint-contract.v1"
);
schema_version!(
    /// `worker-report.v1`
    WorkerReportV1 = "worker-report.v1"
);
schema_version!(
    /// `worker-input.v1`
    WorkerInputV1 = "worker-input.v1"
);
schema_version!(
    /// `breeze-status.v1`
    BreezeStatusV1 = "breeze-status.v1"
);
schema_version!(
    /// `breeze-event.v1`
    BreezeEventV1 = "breeze-event.v1"
);
schema_version!(
    /// `breeze-plan.v1`
    BreezePlanV1 = "breeze-plan.v1"
);
schema_version!(
    /// `scaffold-input.v1`
    ScaffoldInputV1 = "scaffold-input.v1"
);
schema_version!(
    /// `plan-draft.v1`
    PlanDraftV1 = "plan-draft.v1"
);
schema_version!(
    /// `breeze-doctor.v1`
    BreezeDoctorV1 = "breeze-doctor.v1"
);
