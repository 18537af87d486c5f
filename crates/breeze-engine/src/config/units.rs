//! Durations (`600s`, `10m`, `1h 30m`) and sizes (`10MiB`, `512KiB`, `2GB`) as written in
//! `breeze.toml`, each refused with what to write instead.

use std::time::Duration;

/// Why a duration does not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration.
    #[error("invalid duration {text:?} ({reason}); write it like \"600s\", \"10m\" or \"1h\"")]
    Invalid {
        /// As written.
        text: String,
        /// What does not read.
        reason: humantime::DurationError,
    },
    /// Zero: nothing could run.
    #[error("invalid duration {text:?}: it must be longer than zero")]
    Zero {
        /// As written.
        text: String,
    },
}

/// Why a size does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// It does not start with a whole number.
    #[error("invalid size {text:?}; write it like \"10MiB\", \"512KiB\" or \"1048576\"")]
    NotANumber {
        /// As written.
        text: String,
    },
    /// An unknown unit.
    #[error("invalid size unit {unit:?} in {text:?}; use B, KiB, MiB or GiB")]
    Unit {
        /// The unit as written.
        unit: String,
        /// As written.
        text: String,
    },
    /// More bytes than breeze counts.
    #[error("size {text:?} is too large")]
    TooLarge {
        /// As written.
        text: String,
    },
}

/// Parses durations like `600s`, `10m`, `1h 30m`.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let duration = humantime::parse_duration(text.trim())
        .map_err(|reason| DurationError::Invalid { text: text.to_string(), reason })?;
    if duration.is_zero() {
        return Err(DurationError::Zero { text: text.to_string() });
    }
    Ok(duration)
}

/// Parses sizes like `10MiB`, `512KiB`, `2GB`, `1048576`.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: u64 =
        number.parse().map_err(|_| SizeError::NotANumber { text: text.to_string() })?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        other => {
            return Err(SizeError::Unit { unit: other.to_string(), text: text.to_string() });
        }
    };
    number.checked_mul(factor).ok_or_else(|| SizeError::TooLarge { text: text.to_string() })
}
