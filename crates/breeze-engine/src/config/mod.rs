//! `breeze.toml`: parsed once into a validated [`Config`].
//!
//! Every key has a default in `default-config.toml` (embedded, `tables.rs`). The user's
//! file is laid over the defaults as TOML tables (tables merge key by key, any other value
//! replaces the default; `parse.rs`), the result is deserialized once into `RawConfig` and
//! then validated (`raw.rs`), a value refused with a [`BadValue`] that says what to write.
//! Unknown keys are an error naming the key (`keys.rs`). A new key is a field in
//! `RawConfig`'s tables, a line in `default-config.toml` and its place in [`Config`]
//! (`settings.rs`). `breeze doctor` names every unknown key ([`unknown_keys`]) and every
//! value it cannot take ([`value_problems`], `values.rs`), not only the first.

mod bad_value;
mod keys;
mod parse;
mod raw;
mod settings;
mod tables;
mod units;
mod values;

pub use bad_value::BadValue;
pub use keys::{OPEN_TABLES, UnknownKey, unknown_keys};
pub use parse::{CONFIG_FILE, ConfigError};
pub use settings::{
    BudgetConfig, Config, FOLLOW_PLACEHOLDERS, Fallback, Independence, LandConfig, LandTo,
    MAX_LANES, NetworkPolicy, OnMainFailure, PR_PLACEHOLDERS, PrFollowConfig, Price, RoleConfig,
    SandboxMode,
};
pub use tables::DEFAULT_CONFIG;
pub use units::{DurationError, SizeError, parse_duration, parse_size};
pub use values::{MAX_VALUE_PROBLEMS, ValueProblem, value_problems};

pub use crate::backend::BackendKind;

#[cfg(test)]
mod tests;
