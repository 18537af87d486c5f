//! Budgets: what a run may spend (`[budget]`), checked before every role call.
//!
//! Spend is counted from the CLIs' own usage reports: claude's cost (`total_cost_usd`),
//! codex's tokens priced with `[budget.prices]` (an estimate), the simulator's
//! `[task.sim] cost_usd`. A call whose backend reports no cost (`command`) counts as one of
//! unknown cost (`Usage::unpriced_calls`): the USD caps cannot hold it, and the preflight
//! says so before the run (`preflight/spend.rs`, also in `breeze doctor`).
//!
//! One `Budget` per run, shared by every role call: `RoleRunner::invoke` asks it
//! (`Budget::admit`) before the backend runs and tells it what the call spent
//! (`Budget::count`). A task at its `task_usd` escalates; a run at its `run_usd` or
//! `run_tokens` starts no new role call and stops resumably once the calls already running
//! are done (a task that is landing lands: landing calls no role). What is left goes to each
//! call that can hold itself to it (claude's `--max-budget-usd`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use breeze_protocol::{BudgetCaps, Usage};

use crate::config::{Config, Price};
use crate::snapshot::{BudgetRecord, TaskRecord};

/// The price table (`[budget.prices]`): model name → US dollars per million tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices(BTreeMap<String, Price>);

impl Prices {
    /// The table of a configuration.
    pub fn of(config: &Config) -> Prices {
        Prices(config.budget.prices.clone())
    }

    /// The price of `model` (its exact name), if the table has it.
    pub fn price(&self, model: &str) -> Option<&Price> {
        self.0.get(model)
    }

    /// `usage` with its cost estimated from `model`'s price when the backend reported
    /// tokens but no cost; as it is otherwise.
    pub fn priced(&self, usage: Usage, model: Option<&str>) -> Usage {
        match (usage.cost_usd, model.and_then(|model| self.price(model))) {
            (None, Some(price)) if usage.tokens() > 0 => {
                Usage { cost_usd: Some(estimate(&usage, price)), ..usage }
            }
            _ => usage,
        }
    }
}

/// What `usage` costs at `price`: fresh input, cached input and output tokens each at their
/// rate (`input_tokens` includes the cached ones).
pub fn estimate(usage: &Usage, price: &Price) -> f64 {
    let cached = usage.cached_input_tokens.min(usage.input_tokens);
    let fresh = usage.input_tokens - cached;
    (fresh as f64 * price.input
        + cached as f64 * price.cached_input
        + usage.output_tokens as f64 * price.output)
        / 1_000_000.0
}

/// A dollar amount as breeze shows it: two decimals from a cent up, enough decimals below
/// a cent that it is not shown as nothing (`0.000816`), at most six.
pub fn amount(usd: f64) -> String {
    if usd == 0.0 || usd >= 0.01 {
        return format!("{usd:.2}");
    }
    let text = format!("{usd:.6}");
    let text = text.trim_end_matches('0');
    if text == "0." { "<0.000001".into() } else { text.to_string() }
}

/// [`amount`] with a dollar sign.
pub fn dollars(usd: f64) -> String {
    match amount(usd).strip_prefix('<') {
        Some(tiny) => format!("<${tiny}"),
        None => format!("${}", amount(usd)),
    }
}

/// Why a role call may not start.
#[derive(Debug, Clone, PartialEq)]
pub enum OverBudget {
    /// The task has spent its `task_usd`: it escalates.
    Task {
        /// Task id.
        task: String,
        /// What it spent (known cost).
        spent: f64,
        /// `task_usd`.
        cap: f64,
    },
    /// The run has spent its `run_usd`: it stops resumably.
    RunUsd {
        /// What it spent (known cost).
        spent: f64,
        /// `run_usd` in force.
        cap: f64,
        /// Calls whose cost is unknown, left out of `spent`.
        unpriced_calls: u32,
    },
    /// The run has used its `run_tokens`: it stops resumably.
    RunTokens {
        /// Input + output tokens used.
        used: u64,
        /// `run_tokens` in force.
        cap: u64,
    },
}

impl OverBudget {
    /// Whether the whole run stops (else only the task escalates).
    pub fn stops_the_run(&self) -> bool {
        !matches!(self, Self::Task { .. })
    }

    /// What the user can do about it.
    pub fn hint(&self) -> String {
        match self {
            Self::Task { task, .. } => format!(
                "raise [budget] task_usd in breeze.toml, then `breeze retry {task}` to give the task another go"
            ),
            Self::RunUsd { spent, .. } => format!(
                "no new role call was started; raise the cap to go on: `breeze resume --budget-usd X` with X above {}, or raise [budget] run_usd in breeze.toml and `breeze resume`",
                amount(*spent)
            ),
            Self::RunTokens { used, .. } => format!(
                "no new role call was started; raise the cap to go on: `breeze resume --budget-tokens N` with N above {used}, or raise [budget] run_tokens in breeze.toml and `breeze resume`"
            ),
        }
    }

    /// The figure as a task's cause, with the setting to raise as its hint.
    pub fn cause(&self) -> breeze_protocol::Cause {
        breeze_protocol::Cause {
            hint: Some(self.hint()),
            ..breeze_protocol::Cause::new(breeze_protocol::CauseKind::Budget, self.to_string())
        }
    }
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Task { task, spent, cap } => {
                write!(
                    f,
                    "task {task} spent {} of its task_usd = {}",
                    dollars(*spent),
                    amount(*cap)
                )
            }
            Self::RunUsd { spent, cap, unpriced_calls } => {
                write!(f, "the run spent {} of its run_usd = {}", dollars(*spent), amount(*cap))?;
                match unpriced_calls {
                    0 => {}
                    1 => write!(f, " (and 1 role call whose cost is unknown)")?,
                    n => write!(f, " (and {n} role calls whose cost is unknown)")?,
                }
                Ok(())
            }
            Self::RunTokens { used, cap } => {
                write!(f, "the run used {used} tokens of its run_tokens = {cap}")
            }
        }
    }
}

/// What a call that may start may spend: the least of what its task and the run have left
/// of their USD caps (`None`: no USD cap).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allowance {
    /// US dollars.
    pub max_usd: Option<f64>,
}

/// The least a call is allowed, so a cap that is almost reached is not passed on as zero.
const LEAST_ALLOWANCE: f64 = 0.000_001;

/// What is spent, per task and for the run.
#[derive(Debug, Default)]
struct Ledger {
    tasks: BTreeMap<String, Usage>,
    run: Usage,
}

/// The run's budget: its caps, its prices and what it has spent.
#[derive(Debug)]
pub(crate) struct Budget {
    caps: BudgetCaps,
    prices: Prices,
    spent: Mutex<Ledger>,
}

impl Budget {
    /// A budget with `caps`, having spent what the task records say (a resumed run goes on
    /// from there).
    pub fn new(caps: BudgetCaps, prices: Prices, records: &[TaskRecord]) -> Budget {
        let mut ledger = Ledger::default();
        for record in records {
            ledger.run.add(&record.usage);
            ledger.tasks.insert(record.id.clone(), record.usage);
        }
        Budget { caps, prices, spent: Mutex::new(ledger) }
    }

    /// No caps (planning with the scaffolder).
    pub fn unlimited(prices: Prices) -> Budget {
        Budget::new(BudgetCaps::default(), prices, &[])
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The price table.
    pub fn prices(&self) -> &Prices {
        &self.prices
    }

    /// Whether a role call for `task` may start, and what it may spend.
    pub fn admit(&self, task: &str) -> Result<Allowance, OverBudget> {
        let ledger = self.ledger();
        if let Some(over) = self.run_over(&ledger) {
            return Err(over);
        }
        let task_spent = ledger.tasks.get(task).and_then(|usage| usage.cost_usd).unwrap_or(0.0);
        if let Some(cap) = self.caps.task_usd
            && task_spent >= cap
        {
            return Err(OverBudget::Task { task: task.to_string(), spent: task_spent, cap });
        }
        let run_spent = ledger.run.cost_usd.unwrap_or(0.0);
        let left = [
            self.caps.task_usd.map(|cap| cap - task_spent),
            self.caps.run_usd.map(|cap| cap - run_spent),
        ];
        let max_usd =
            left.into_iter().flatten().reduce(f64::min).map(|usd| usd.max(LEAST_ALLOWANCE));
        Ok(Allowance { max_usd })
    }

    /// The run's cap, when the run has reached it.
    pub fn run_reached(&self) -> Option<OverBudget> {
        self.run_over(&self.ledger())
    }

    fn run_over(&self, ledger: &Ledger) -> Option<OverBudget> {
        let used = ledger.run.tokens();
        if let Some(cap) = self.caps.run_tokens
            && used >= cap
        {
            return Some(OverBudget::RunTokens { used, cap });
        }
        let spent = ledger.run.cost_usd.unwrap_or(0.0);
        match self.caps.run_usd {
            Some(cap) if spent >= cap => {
                Some(OverBudget::RunUsd { spent, cap, unpriced_calls: ledger.run.unpriced_calls })
            }
            _ => None,
        }
    }

    /// Counts what a call of `task` spent.
    pub fn count(&self, task: &str, usage: &Usage) {
        let mut ledger = self.ledger();
        ledger.run.add(usage);
        ledger.tasks.entry(task.to_string()).or_default().add(usage);
    }
}

/// The caps in force: the configuration's, raised by what `breeze resume --budget-usd` /
/// `--budget-tokens` recorded (the larger wins when both are set).
pub fn caps_in_force(config: &BudgetCaps, record: &BudgetRecord) -> BudgetCaps {
    BudgetCaps {
        run_usd: larger(config.run_usd, record.raised_usd, f64::max),
        task_usd: config.task_usd,
        run_tokens: larger(config.run_tokens, record.raised_tokens, u64::max),
    }
}

fn larger<T>(a: Option<T>, b: Option<T>, max: impl Fn(T, T) -> T) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(max(a, b)),
        (a, b) => a.or(b),
    }
}

/// What `breeze resume --budget-usd` / `--budget-tokens` asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetRaise {
    /// The run's new `run_usd`.
    pub usd: Option<f64>,
    /// The run's new `run_tokens`.
    pub tokens: Option<u64>,
}

impl BudgetRaise {
    /// A resumed run's caps: the raise recorded in `record` ([`BudgetRaise::apply`]), then
    /// the caps in force with `[budget]`'s `config` kept in `record.caps` — also when the
    /// raise is refused (the error says why).
    pub fn resume(
        &self,
        config: &BudgetCaps,
        record: &mut BudgetRecord,
        spent: &Usage,
    ) -> Result<(), RaiseRefused> {
        let applied = self.apply(record, spent);
        record.caps = caps_in_force(config, record);
        applied
    }

    /// Records the raise in the run's budget, refusing one that is not above what the run
    /// has already spent (it would stop at once).
    pub fn apply(&self, record: &mut BudgetRecord, spent: &Usage) -> Result<(), RaiseRefused> {
        let refuse = |message: String, flag: &str| RaiseRefused {
            message,
            hint: format!("give {flag} a larger amount, or leave it out to keep the run's cap"),
        };
        if let Some(usd) = self.usd {
            let spent_usd = spent.cost_usd.unwrap_or(0.0);
            if !(usd.is_finite() && usd > spent_usd) {
                return Err(refuse(
                    format!(
                        "--budget-usd {usd} is not above what the run has spent ({})",
                        dollars(spent_usd)
                    ),
                    "--budget-usd",
                ));
            }
            record.raised_usd = Some(usd);
        }
        if let Some(tokens) = self.tokens {
            if tokens <= spent.tokens() {
                return Err(refuse(
                    format!(
                        "--budget-tokens {tokens} is not above what the run has used ({} tokens)",
                        spent.tokens()
                    ),
                    "--budget-tokens",
                ));
            }
            record.raised_tokens = Some(tokens);
        }
        Ok(())
    }
}

/// A raise of a resumed run's caps refused (not above what the run has spent), with what
/// to do: a usage error to the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaiseRefused {
    /// What is wrong with the raise.
    pub message: String,
    /// What to do.
    pub hint: String,
}

impl std::fmt::Display for RaiseRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The budget as the run start says it: each cap with what is spent against it.
pub fn summary(caps: &BudgetCaps, spent: &Usage) -> Option<String> {
    if !caps.any() {
        return None;
    }
    let mut parts = Vec::new();
    let spent_usd = dollars(spent.cost_usd.unwrap_or(0.0));
    if let Some(cap) = caps.run_usd {
        parts.push(format!("run_usd = {} ({spent_usd} spent)", amount(cap)));
    }
    if let Some(cap) = caps.task_usd {
        parts.push(format!("task_usd = {} per task", amount(cap)));
    }
    if let Some(cap) = caps.run_tokens {
        parts.push(format!("run_tokens = {cap} ({} used)", spent.tokens()));
    }
    Some(format!("budget: {}", parts.join(" · ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(cost: Option<f64>, input: u64, cached: u64, output: u64) -> Usage {
        Usage {
            cost_usd: cost,
            input_tokens: input,
            cached_input_tokens: cached,
            output_tokens: output,
            unpriced_calls: 0,
        }
    }

    fn record(id: &str, cost: f64) -> TaskRecord {
        let mut record = TaskRecord::new(id, "t", None);
        record.usage = usage(Some(cost), 0, 0, 0);
        record
    }

    #[test]
    fn tokens_are_priced_fresh_cached_and_output_each_at_its_rate() {
        let price = Price { input: 2.0, cached_input: 0.5, output: 8.0 };
        let cost = estimate(&usage(None, 1_000_000, 200_000, 100_000), &price);
        assert!((cost - (0.8 * 2.0 + 0.2 * 0.5 + 0.1 * 8.0)).abs() < 1e-12, "{cost}");
        let prices = Prices([("m".to_string(), price)].into());
        let priced = prices.priced(usage(None, 1000, 0, 0), Some("m"));
        assert!((priced.cost_usd.unwrap() - 0.002).abs() < 1e-12);
        // A reported cost is kept; an unknown model stays unknown.
        assert_eq!(prices.priced(usage(Some(1.0), 1000, 0, 0), Some("m")).cost_usd, Some(1.0));
        assert_eq!(prices.priced(usage(None, 1000, 0, 0), Some("other")).cost_usd, None);
        assert_eq!(prices.priced(usage(None, 1000, 0, 0), None).cost_usd, None);
    }

    #[test]
    fn a_task_at_its_cap_is_refused_with_the_figure_and_the_others_go_on() {
        let caps = BudgetCaps { task_usd: Some(2.0), ..BudgetCaps::default() };
        let budget = Budget::new(caps, Prices::default(), &[record("3", 1.5), record("4", 0.2)]);
        assert_eq!(budget.admit("3").unwrap().max_usd, Some(0.5));
        budget.count("3", &usage(Some(0.54), 10, 0, 5));
        let over = budget.admit("3").unwrap_err();
        assert_eq!(over.to_string(), "task 3 spent $2.04 of its task_usd = 2.00");
        assert!(!over.stops_the_run());
        assert!(over.cause().line().contains("breeze retry 3"), "{}", over.cause().line());
        assert!(budget.admit("4").is_ok());
        assert_eq!(budget.run_reached(), None);
    }

    #[test]
    fn a_run_at_its_cap_refuses_every_call_and_says_what_to_raise() {
        let caps = BudgetCaps { run_usd: Some(1.0), task_usd: Some(0.8), run_tokens: None };
        let budget = Budget::new(caps, Prices::default(), &[record("1", 0.5)]);
        // The least of what the task and the run have left.
        let left = |task: &str| budget.admit(task).unwrap().max_usd.unwrap();
        assert!((left("1") - 0.3).abs() < 1e-9, "{}", left("1"));
        assert!((left("2") - 0.5).abs() < 1e-9, "{}", left("2"));
        budget.count("2", &usage(Some(0.6), 0, 0, 0));
        budget.count("2", &Usage { unpriced_calls: 1, ..Usage::default() });
        let over = budget.admit("1").unwrap_err();
        assert!(over.stops_the_run());
        assert_eq!(
            over.to_string(),
            "the run spent $1.10 of its run_usd = 1.00 (and 1 role call whose cost is unknown)"
        );
        assert!(over.hint().contains("breeze resume --budget-usd X"), "{}", over.hint());
        assert_eq!(budget.run_reached(), Some(over));
    }

    #[test]
    fn a_token_cap_counts_input_and_output() {
        let caps = BudgetCaps { run_tokens: Some(100), ..BudgetCaps::default() };
        let budget = Budget::new(caps, Prices::default(), &[]);
        assert_eq!(budget.admit("1").unwrap().max_usd, None, "no USD cap: nothing to pass on");
        budget.count("1", &usage(None, 60, 50, 40));
        let over = budget.admit("1").unwrap_err();
        assert_eq!(over.to_string(), "the run used 100 tokens of its run_tokens = 100");
        assert!(over.hint().contains("--budget-tokens"), "{}", over.hint());
    }

    #[test]
    fn a_raise_is_recorded_and_wins_when_larger_but_must_exceed_the_spend() {
        let config = BudgetCaps { run_usd: Some(2.0), task_usd: None, run_tokens: Some(10) };
        let mut record = BudgetRecord::default();
        let spent = usage(Some(2.5), 10, 0, 5);
        let low = BudgetRaise { usd: Some(2.5), tokens: None }.apply(&mut record, &spent);
        assert!(low.unwrap_err().to_string().contains("not above what the run has spent ($2.50)"));
        let low = BudgetRaise { usd: None, tokens: Some(15) }.apply(&mut record, &spent);
        assert!(low.unwrap_err().to_string().contains("(15 tokens)"));
        BudgetRaise { usd: Some(4.0), tokens: Some(100) }.apply(&mut record, &spent).unwrap();
        let caps = caps_in_force(&config, &record);
        assert_eq!((caps.run_usd, caps.run_tokens), (Some(4.0), Some(100)));
        // A larger cap written into breeze.toml later still wins.
        let caps = caps_in_force(&BudgetCaps { run_usd: Some(9.0), ..config }, &record);
        assert_eq!(caps.run_usd, Some(9.0));
    }

    #[test]
    fn amounts_below_a_cent_keep_their_digits() {
        assert_eq!(dollars(2.0), "$2.00");
        assert_eq!(dollars(0.000816), "$0.000816");
        assert_eq!(dollars(0.0000001), "<$0.000001");
        assert_eq!(amount(0.0001), "0.0001");
    }
}
