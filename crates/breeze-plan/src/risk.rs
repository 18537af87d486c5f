//! Risk flags: explicit tags and whole-word keyword detection.

use std::fmt;

use serde::{Serialize, Serializer};

/// A high-risk flag. A task with any of them consults the Advisor before its first
/// attempt. The order of the variants is the order flags are listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RiskFlag {
    /// The approach is unknown; explore first (`[needs-spike]`).
    NeedsSpike,
    /// Touches authentication, permissions, secrets or security.
    SecuritySensitive,
    /// Changes persisted state: migrations, schemas.
    StateMigration,
}

impl RiskFlag {
    /// Every flag, in listing order.
    pub const ALL: [RiskFlag; 3] =
        [RiskFlag::NeedsSpike, RiskFlag::SecuritySensitive, RiskFlag::StateMigration];

    /// The flag's name: `needs-spike`, `security-sensitive`, `state-migration`.
    pub fn as_str(self) -> &'static str {
        match self {
            RiskFlag::NeedsSpike => "needs-spike",
            RiskFlag::SecuritySensitive => "security-sensitive",
            RiskFlag::StateMigration => "state-migration",
        }
    }

    /// Parses a flag name as [`RiskFlag::as_str`] writes it.
    pub fn from_name(name: &str) -> Option<RiskFlag> {
        RiskFlag::ALL.into_iter().find(|f| f.as_str() == name)
    }
}

impl fmt::Display for RiskFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RiskFlag {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Whole words (after lower-casing and splitting on anything that is not a letter
/// or digit) that mark a task security-sensitive. "author" is not "auth".
const SECURITY_WORDS: &[&str] = &[
    "auth",
    "authn",
    "authz",
    "oauth",
    "authentication",
    "authorization",
    "security",
    "secret",
    "secrets",
    "permission",
    "permissions",
    "credential",
    "credentials",
];

/// Whole words that mark a task as changing persisted state.
const MIGRATION_WORDS: &[&str] = &["migration", "migrations", "migrate", "schema", "schemas"];

/// Terms in scripts without spaces between words (Japanese, Chinese, Korean) are
/// matched as substrings: there is no word boundary to look for.
const SECURITY_CJK: &[&str] =
    &["セキュリティ", "権限", "認証", "認可", "权限", "认证", "보안", "권한", "인증"];
const MIGRATION_CJK: &[&str] = &["マイグレーション", "スキーマ", "迁移", "마이그레이션", "스키마"];

/// Flags named by explicit tags (`[needs-spike]`, `[security-sensitive]`,
/// `[state-migration]`) and by whole-word keywords in `text` (title and DoD).
/// Deduplicated, in [`RiskFlag::ALL`] order.
pub fn detect(text: &str) -> Vec<RiskFlag> {
    let lower = text.to_lowercase();
    let mut found = [false; 3];
    for flag in RiskFlag::ALL {
        if lower.contains(&format!("[{}]", flag.as_str())) {
            found[flag as usize] = true;
        }
    }
    for word in lower.split(|c: char| !c.is_alphanumeric()) {
        if SECURITY_WORDS.contains(&word) {
            found[RiskFlag::SecuritySensitive as usize] = true;
        }
        if MIGRATION_WORDS.contains(&word) {
            found[RiskFlag::StateMigration as usize] = true;
        }
    }
    if SECURITY_CJK.iter().any(|t| lower.contains(t)) {
        found[RiskFlag::SecuritySensitive as usize] = true;
    }
    if MIGRATION_CJK.iter().any(|t| lower.contains(t)) {
        found[RiskFlag::StateMigration as usize] = true;
    }
    RiskFlag::ALL.into_iter().filter(|f| found[*f as usize]).collect()
}

/// Merges flag lists, keeping each flag once, in [`RiskFlag::ALL`] order.
pub(crate) fn merge(a: &[RiskFlag], b: &[RiskFlag]) -> Vec<RiskFlag> {
    RiskFlag::ALL.into_iter().filter(|f| a.contains(f) || b.contains(f)).collect()
}

/// Whether the text carries `<!-- advisor:required -->` (spacing inside the comment
/// is free, case is not significant).
pub fn advisor_required(text: &str) -> bool {
    let lower = text.to_lowercase();
    let mut rest = lower.as_str();
    while let Some(start) = rest.find("<!--") {
        let after = &rest[start + 4..];
        let Some(end) = after.find("-->") else { return false };
        if after[..end].trim() == "advisor:required" {
            return true;
        }
        rest = &after[end + 3..];
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use RiskFlag::*;

    #[test]
    fn whole_words_only() {
        assert_eq!(detect("Add auth middleware"), [SecuritySensitive]);
        assert_eq!(detect("Show the author of each post"), []);
        assert_eq!(detect("Fix the statement parser"), []);
        assert_eq!(detect("OAuth login; rotate secrets"), [SecuritySensitive]);
        assert_eq!(detect("DB migration for the users schema"), [StateMigration]);
        assert_eq!(detect("schematic drawing of a migrating bird"), []);
        assert_eq!(detect("auth/token refresh"), [SecuritySensitive]);
    }

    #[test]
    fn explicit_tags_and_order() {
        assert_eq!(
            detect("[needs-spike] security migration"),
            [NeedsSpike, SecuritySensitive, StateMigration]
        );
        assert_eq!(detect("[STATE-MIGRATION] rename column"), [StateMigration]);
    }

    #[test]
    fn cjk_terms_match_inside_text() {
        assert_eq!(detect("権限チェックを追加"), [SecuritySensitive]);
        assert_eq!(detect("DB 마이그레이션 적용"), [StateMigration]);
    }

    #[test]
    fn advisor_marker() {
        assert!(advisor_required("x <!-- advisor:required --> y"));
        assert!(advisor_required("x <!--advisor:required--> y"));
        assert!(!advisor_required("<!-- advisor: optional --> <!-- note"));
        assert!(!advisor_required("advisor:required"));
    }
}
