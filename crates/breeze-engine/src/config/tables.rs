//! The TOML tables a configuration is read from: the embedded defaults, in which the
//! other roles take the worker's keys, and the user's file laid over them.

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The defaults, documented key by key.
pub const DEFAULT_CONFIG: &str = include_str!("../../default-config.toml");

/// Lays `over` onto `base`: tables merge key by key, any other value replaces.
pub(super) fn merge<'i>(base: &mut DeTable<'i>, over: DeTable<'i>) {
    for (key, value) in over {
        if let (Some(DeValue::Table(base_table)), DeValue::Table(_)) =
            (base.get_mut(key.get_ref().as_ref()).map(Spanned::get_mut), value.get_ref())
        {
            if let DeValue::Table(over_table) = value.into_inner() {
                merge(base_table, over_table);
            }
            continue;
        }
        // The user's key replaces the default's, so that messages point at the user's.
        base.remove(key.get_ref().as_ref());
        base.insert(key, value);
    }
}

/// In the defaults, `[roles.advisor]`, `[roles.reviewer]` and `[roles.scaffolder]` take
/// the keys of `[roles.worker]` they do not set (`command`, `env`, `model`, ...). This
/// happens before the user's file is laid over: a user's `[roles.worker]` changes the
/// worker only.
pub(super) fn inherit_worker_keys(defaults: &mut DeTable<'_>) {
    let Some(DeValue::Table(roles)) = defaults.get_mut("roles").map(Spanned::get_mut) else {
        return;
    };
    let Some(DeValue::Table(worker)) = roles.get("worker").map(Spanned::get_ref) else {
        return;
    };
    let worker = worker.clone();
    for name in ["advisor", "reviewer", "scaffolder"] {
        if let Some(DeValue::Table(role)) = roles.get_mut(name).map(Spanned::get_mut) {
            for (key, value) in &worker {
                if !role.contains_key(key.get_ref().as_ref()) {
                    role.insert(key.clone(), value.clone());
                }
            }
        }
    }
}
