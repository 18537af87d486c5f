//! Reading `breeze.toml`: the user's file laid over the defaults, every unknown key named
//! at once, the result deserialized once and validated; a [`ConfigError`] names the file.

use std::path::Path;

use serde::Deserialize;
use toml::Spanned;
use toml::de::DeTable;

use super::bad_value::BadValue;
use super::keys::unknown_in;
use super::raw::RawConfig;
use super::settings::Config;
use super::tables::{DEFAULT_CONFIG, inherit_worker_keys, merge};

/// The name of the configuration file at the repository root.
pub const CONFIG_FILE: &str = "breeze.toml";

/// A configuration problem, naming the file and key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    /// The config file.
    pub file: String,
    /// What is wrong (toml's messages name the key, line and column).
    pub message: String,
}

impl Config {
    /// The defaults alone.
    pub fn defaults() -> Config {
        // The embedded defaults are tested to parse; failing here is a build defect.
        Self::parse("", "(defaults)").expect("embedded default-config.toml is valid")
    }

    /// Reads `breeze.toml` in `repo_root` if present, else the defaults.
    pub fn load(repo_root: &Path) -> Result<Config, ConfigError> {
        let path = repo_root.join(CONFIG_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&text, &path.display().to_string()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::defaults()),
            Err(err) => {
                Err(ConfigError { file: path.display().to_string(), message: err.to_string() })
            }
        }
    }

    /// Parses user TOML over the defaults.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        parse_over(DEFAULT_CONFIG, text, file)
    }
}

/// Parses `text` (the contents of `file`) laid over the defaults `defaults_text`.
pub(super) fn parse_over(
    defaults_text: &str,
    text: &str,
    file: &str,
) -> Result<Config, ConfigError> {
    let in_defaults = |message: String| ConfigError { file: "default-config.toml".into(), message };
    let in_file = |message: String| ConfigError { file: file.to_string(), message };
    let mut tables = DeTable::parse(defaults_text).map_err(|err| in_defaults(err.to_string()))?;
    inherit_worker_keys(tables.get_mut());
    // The defaults alone are complete and valid, so every error after the merge is about
    // a key or value of the user's file, and its position is one in `text`.
    typed(tables.clone(), defaults_text).map_err(|bad| in_defaults(bad.to_string()))?;
    let user = DeTable::parse(text).map_err(|err| in_file(err.to_string()))?;
    // Every unknown key at once, each with its line and the key probably meant.
    let unknown = unknown_in(tables.get_ref(), user.get_ref(), "", text);
    if !unknown.is_empty() {
        let keys: Vec<String> = unknown.iter().map(ToString::to_string).collect();
        return Err(in_file(keys.join("; ")));
    }
    merge(tables.get_mut(), user.into_inner());
    typed(tables, text).map_err(|bad| in_file(bad.to_string()))
}

/// Deserializes and validates merged tables; toml's messages show the line in `source`.
fn typed(tables: Spanned<DeTable<'_>>, source: &str) -> Result<Config, BadValue> {
    let raw = RawConfig::deserialize(toml::de::Deserializer::from(tables)).map_err(|mut err| {
        err.set_input(Some(source));
        BadValue::Toml(Box::new(err))
    })?;
    raw.validate()
}
