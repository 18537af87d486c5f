//! The preflight's budget check: with a `[budget]` cap set, a role whose backend reports
//! no cost (or no tokens) where the cap needs it is a warning — the cap cannot hold its
//! calls, which are counted as of unknown cost (`Usage::unpriced_calls`). What each backend
//! reports: claude its cost and tokens, codex tokens (priced with `[budget.prices]` when
//! its model has a price), the simulator what `[task.sim]` sets, `command` nothing.

use std::collections::BTreeMap;
use std::path::Path;

use breeze_plan::Plan;
use breeze_protocol::{BudgetCaps, CheckOutcome, Role};

use super::found::{Preflight, PreflightOptions, Stage, join_and};
use crate::backend::Spend;
use crate::config::Config;
use crate::roles::scripted::{SimSpec, sims_of};
use crate::run_dir::{RunDir, latest_run};
use crate::snapshot::RunSnapshot;

/// A warning for each role whose spend a cap of the run cannot hold. `plan`: the plan a
/// new run would take (its `[task.sim]` tables say what the simulator reports).
pub(super) fn spend_checks(
    found: &mut Preflight,
    root: &Path,
    config: &Config,
    plan: Option<&Plan>,
    options: &PreflightOptions,
) {
    let Some((caps, sims)) = budget_of_run(root, config, plan, options) else { return };
    for (role, notice, hint) in unknown_spend(config, &caps, &sims, root) {
        let subject = format!("roles.{}", role.as_str());
        found.push("budget", subject, CheckOutcome::Warning, notice, Some(hint));
    }
}

/// The caps and `[task.sim]` tables the run will go with: a new run's (`[budget]`, the
/// plan given), or the resumed run's (its caps in force with what `--budget-usd` /
/// `--budget-tokens` asks, its own copy of the plan). `None`: no run to resume.
fn budget_of_run(
    root: &Path,
    config: &Config,
    plan: Option<&Plan>,
    options: &PreflightOptions,
) -> Option<(BudgetCaps, BTreeMap<String, SimSpec>)> {
    // A `[task.sim]` table that does not read is the run's own error, after the preflight.
    let sims = |plan: &Plan| sims_of(plan).unwrap_or_default();
    if options.stage != Stage::Resume {
        return Some((config.budget.caps, plan.map(sims).unwrap_or_default()));
    }
    let run_dir = RunDir::new(root, &latest_run(root)?);
    let snapshot = RunSnapshot::load(&run_dir.snapshot()).ok()?;
    if !snapshot.state.is_resumable() {
        return None;
    }
    let mut record = snapshot.budget;
    // So is a raise it refuses (not above what was spent).
    let _ = options.budget_raise.resume(&config.budget.caps, &mut record, &snapshot.spent());
    let caps = record.caps;
    let plan = run_dir.plan_of_run(Path::new(&snapshot.plan)).ok();
    Some((caps, plan.as_ref().map(sims).unwrap_or_default()))
}

/// What a role's backend reports of what it spends.
#[derive(Debug, Clone, PartialEq)]
enum Reports {
    /// Its cost and tokens (claude).
    Both,
    /// Tokens, and a cost only through the price table (codex), which has no price for
    /// this model (`None`: the CLI's default model).
    TokensUnpriced(Option<String>),
    /// Tokens and a cost for the tasks that set them in `[task.sim]` only (the simulator);
    /// the ids of those that set no cost, and of those that set no tokens.
    Partly { no_cost: Vec<String>, no_tokens: Vec<String> },
    /// Nothing (`command`).
    Nothing,
}

/// One line per role whose backend reports no cost (or no tokens) where a cap needs it:
/// "the worker's backend `command` reports no cost: run_usd cannot cap it", with what to do.
fn unknown_spend(
    config: &Config,
    caps: &BudgetCaps,
    sims: &BTreeMap<String, SimSpec>,
    repo_root: &Path,
) -> Vec<(Role, String, String)> {
    let capped = Capped::of(caps);
    config
        .run_roles()
        .into_iter()
        .filter_map(|role| {
            let reports = reports_of(config, role, sims, repo_root);
            let (notice, hint) = capped.notice(config, role, reports)?;
            Some((role, notice, hint))
        })
        .collect()
}

/// What a role's backend reports, as its description says (the simulator: for the tasks
/// whose `[task.sim]` sets it).
fn reports_of(
    config: &Config,
    role: Role,
    sims: &BTreeMap<String, SimSpec>,
    repo_root: &Path,
) -> Reports {
    let settings = config.role(role);
    match settings.backend.describe().spend {
        Spend::CostAndTokens => Reports::Both,
        Spend::TokensPricedByModel => {
            let model = crate::roles::definition::model_of(repo_root, role, settings);
            match model {
                Some(model) if config.budget.prices.contains_key(&model) => Reports::Both,
                model => Reports::TokensUnpriced(model),
            }
        }
        Spend::Simulated => {
            let lacking = |has: fn(&SimSpec) -> bool| -> Vec<String> {
                sims.iter().filter(|(_, sim)| !has(sim)).map(|(id, _)| id.clone()).collect()
            };
            Reports::Partly {
                no_cost: lacking(|sim| sim.cost_usd.is_some()),
                no_tokens: lacking(|sim| sim.input_tokens + sim.output_tokens > 0),
            }
        }
        Spend::Nothing => Reports::Nothing,
    }
}

/// The caps a run has: those in dollars by name, and whether tokens are capped.
struct Capped {
    usd: Vec<&'static str>,
    tokens: bool,
}

impl Capped {
    fn of(caps: &BudgetCaps) -> Capped {
        let usd = [("run_usd", caps.run_usd.is_some()), ("task_usd", caps.task_usd.is_some())]
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect();
        Capped { usd, tokens: caps.run_tokens.is_some() }
    }

    /// What to say of `role`, whose backend `reports` this, and what to do: `None` when
    /// the caps can hold its calls.
    fn notice(&self, config: &Config, role: Role, reports: Reports) -> Option<(String, String)> {
        let backend = config.role(role).backend.as_str();
        let who = format!("the {}'s backend `{backend}`", role.as_str());
        let cannot = |caps: &[&str]| format!("{} cannot cap it", join_and(caps));
        match reports {
            Reports::Both => None,
            Reports::TokensUnpriced(model) if !self.usd.is_empty() => {
                let (model, hint) = unpriced(role, model);
                let notice = format!(
                    "{who} reports tokens but no cost, and {model}: {} (its tokens still count)",
                    cannot(&self.usd)
                );
                Some((notice, hint))
            }
            Reports::TokensUnpriced(_) => None,
            Reports::Partly { no_cost, no_tokens } => {
                let mut lacking: Vec<&str> = Vec::new();
                let mut tasks: Vec<String> = Vec::new();
                if !self.usd.is_empty() && !no_cost.is_empty() {
                    lacking.extend(&self.usd);
                    tasks.extend(no_cost);
                }
                if self.tokens && !no_tokens.is_empty() {
                    lacking.push("run_tokens");
                    tasks.extend(no_tokens);
                }
                tasks.sort();
                tasks.dedup();
                (!lacking.is_empty()).then(|| (format!(
                    "{who} reports no cost or tokens for task(s) {} (their [task.sim] sets no cost_usd / tokens): {}",
                    tasks.join(", "),
                    cannot(&lacking)
                ), "give those tasks cost_usd and input_tokens / output_tokens in [task.sim]".to_string()))
            }
            Reports::Nothing => {
                let mut lacking = self.usd.clone();
                if self.tokens {
                    lacking.push("run_tokens");
                }
                let what = if self.tokens { "no cost or tokens" } else { "no cost" };
                let hint = format!(
                    "give roles.{} a backend that reports its spend (claude, or codex with its model priced), or leave the cap out",
                    role.as_str()
                );
                (!lacking.is_empty())
                    .then(|| (format!("{who} reports {what}: {}", cannot(&lacking)), hint))
            }
        }
    }
}

/// Why a backend's tokens have no price (`model`: its model, `None` the CLI's default), and
/// what to do.
fn unpriced(role: Role, model: Option<String>) -> (String, String) {
    match model {
        Some(model) => (
            format!("its model `{model}` has no price in [budget.prices]"),
            format!(
                "add [budget.prices.\"{model}\"] with input, cached_input and output (dollars per million tokens), or cap tokens with run_tokens"
            ),
        ),
        None => (
            "it runs the CLI's default model, which breeze cannot price".into(),
            format!(
                "set roles.{}.model to a model priced in [budget.prices], or cap tokens with run_tokens",
                role.as_str()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;

    #[test]
    fn backends_that_cannot_be_held_to_a_cap_are_named() {
        let mut config = Config::defaults();
        config.worker.backend = BackendKind::Command;
        config.worker.command = vec!["sh".into(), "w.sh".into()];
        config.reviewer.backend = BackendKind::Codex;
        config.advisor.backend = BackendKind::Codex;
        config.advisor.model = "gpt-5".into();
        let caps = BudgetCaps { run_usd: Some(1.0), ..BudgetCaps::default() };
        let root = tempfile::tempdir().unwrap();
        let notices = unknown_spend(&config, &caps, &BTreeMap::new(), root.path());
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert_eq!(
            notices[0],
            (
                Role::Worker,
                "the worker's backend `command` reports no cost: run_usd cannot cap it".to_string(),
                "give roles.worker a backend that reports its spend (claude, or codex with its model priced), or leave the cap out".to_string()
            )
        );
        assert_eq!(notices[1].0, Role::Reviewer);
        assert!(notices[1].1.starts_with("the reviewer's backend `codex` reports tokens but no cost, and it runs the CLI's default model"), "{}", notices[1].1);
        assert!(
            notices[1].2.starts_with("set roles.reviewer.model to a model priced"),
            "{}",
            notices[1].2
        );
        // Without a cap there is nothing to say.
        assert!(
            unknown_spend(&config, &BudgetCaps::default(), &BTreeMap::new(), root.path())
                .is_empty()
        );
    }
}
