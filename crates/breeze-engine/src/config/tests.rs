//! The configuration as a user writes it: defaults, overrides, unknown keys, bad values.

use std::path::PathBuf;
use std::time::Duration;

use super::parse::parse_over;
use super::raw::worktree_root;
use super::*;

#[test]
fn defaults_parse_and_match_the_design() {
    let config = Config::defaults();
    assert_eq!(config.max_workers, 3);
    assert_eq!(config.max_rounds, 3);
    assert_eq!(config.worker.stall_timeout, Duration::from_secs(600));
    assert_eq!(config.worker.timeout, Duration::from_secs(45 * 60));
    assert_eq!(config.retry_threshold, 2);
    assert_eq!(config.max_consults_per_task, 3);
    assert_eq!(config.max_file_bytes, 10 * 1024 * 1024);
    assert!(config.verify.is_empty());
    assert_eq!(config.land_batch, 1, "each landing verified alone unless asked");
    assert_eq!(config.land_queue_depth, 3, "three landings verified side by side");
    assert_eq!(config.on_main_failure, OnMainFailure::Stop);
}

#[test]
fn the_landing_queues_depth_is_one_to_eight_and_its_checkouts_ports_must_fit() {
    let config = Config::parse("[land]\nqueue_depth = 1\n", "q.toml").unwrap();
    assert_eq!(config.land_queue_depth, 1);
    let err = Config::parse("[land]\nqueue_depth = 9\n", "q.toml").unwrap_err().to_string();
    assert!(err.contains("`land.queue_depth` is 9; it must be between 1 and 8"), "{err}");
    // Three lanes and the integration checkout need 4 ranges; a depth of 8 adds 7 more.
    let near_top = "[run]\nport_base = 65000\nports_per_lane = 100\n";
    let shallow = format!("{near_top}[land]\nqueue_depth = 1\n");
    assert!(Config::parse(&shallow, "q.toml").is_ok());
    let deep = format!("{near_top}[land]\nqueue_depth = 8\n");
    let err = Config::parse(&deep, "q.toml").unwrap_err().to_string();
    assert!(err.contains("its 1100 ports"), "{err}");
}

#[test]
fn batches_and_main_failures_are_configured_in_land() {
    let config =
        Config::parse("[land]\nbatch = 4\non_main_failure = \"land\"\n", "b.toml").unwrap();
    assert_eq!(config.land_batch, 4);
    assert_eq!(config.on_main_failure, OnMainFailure::Land);
    let err = Config::parse("[land]\nbatch = 0\n", "b.toml").unwrap_err().to_string();
    assert!(err.contains("`land.batch` is 0; it must be between 1 and 16"), "{err}");
    let err = Config::parse("[land]\non_main_failure = \"ignore\"\n", "b.toml").unwrap_err();
    assert!(err.to_string().contains("ignore") && err.to_string().contains("stop"), "{err}");
    // Batches move the local main; a remote's own merge queue batches pull requests.
    let err = Config::parse("[land]\nbatch = 2\nto = \"pull-request\"\n", "b.toml");
    let err = err.unwrap_err().to_string();
    assert!(err.contains("`land.batch` is 2 but `land.to` is \"pull-request\""), "{err}");
}

#[test]
fn user_keys_override_defaults_one_by_one() {
    let config = Config::parse(
        r#"
        [run]
        max_workers = 2
        [roles.worker]
        backend = "command"
        command = ["bash", "w.sh"]
        stall_timeout = "30s"
        [land]
        verify = ["cargo", "test"]
        "#,
        "breeze.toml",
    )
    .unwrap();
    assert_eq!(config.max_workers, 2);
    assert_eq!(config.worker.backend, BackendKind::Command);
    assert_eq!(config.worker.command, ["bash", "w.sh"]);
    assert_eq!(config.worker.stall_timeout, Duration::from_secs(30));
    assert_eq!(
        config.worker.timeout,
        Duration::from_secs(45 * 60),
        "untouched key keeps its default"
    );
    assert_eq!(config.reviewer.backend, BackendKind::Claude);
    assert_eq!(config.verify, ["cargo", "test"]);
}

#[test]
fn unknown_keys_are_errors_naming_the_key() {
    let err = Config::parse("[run]\nmax_worker = 2\n", "breeze.toml").unwrap_err().to_string();
    assert!(err.starts_with("breeze.toml:"), "{err}");
    assert!(err.contains("max_worker"), "{err}");
    let err = Config::parse("[roles.worker]\nbakend = \"command\"\n", "breeze.toml").unwrap_err();
    assert!(err.to_string().contains("bakend"), "{err}");
    let err = Config::parse("[roles.janitor]\nbackend = \"command\"\n", "breeze.toml").unwrap_err();
    assert!(err.to_string().contains("janitor"), "{err}");
    let err = Config::parse("[colour]\n", "breeze.toml").unwrap_err();
    assert!(err.to_string().contains("colour"), "{err}");
}

#[test]
fn unknown_keys_are_all_named_with_their_line_and_the_key_meant() {
    let text = "[run]\nmax_worker = 2\n\n[roles.reviewer]\nbakend = \"codex\"\n[land]\nverify = []\nzzz = 1\n";
    let keys: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
    assert_eq!(
        keys,
        [
            "unknown key run.max_worker at line 2 (did you mean max_workers?)",
            "unknown key roles.reviewer.bakend at line 5 (did you mean backend?)",
            "unknown key land.zzz at line 8",
        ]
    );
    // The advisor's table knows the keys it inherits from the worker's.
    assert!(unknown_keys("[roles.advisor]\ncommand = [\"x\"]\n").is_empty());
    let err = Config::parse(text, "breeze.toml").unwrap_err().to_string();
    assert_eq!(
        err,
        format!("breeze.toml: {}", keys.join("; ")),
        "every unknown key at once, in one line"
    );
}

#[test]
fn a_model_of_the_users_own_in_budget_prices_is_no_unknown_key() {
    let text = "[budget.prices]\n\"my-model\" = { input = 1, cached_input = 0.1, output = 4 }\n[budget]\nrun_usd = 3\nrun_dolars = 4\n";
    let keys: Vec<String> = unknown_keys(text).iter().map(ToString::to_string).collect();
    // The open table is not looked into; the table around it still is.
    assert_eq!(keys, ["unknown key budget.run_dolars at line 5"]);
    let text = text.replace("run_dolars = 4\n", "");
    assert!(unknown_keys(&text).is_empty(), "{:?}", unknown_keys(&text));
    let config = Config::parse(&text, "breeze.toml").unwrap();
    assert_eq!(config.budget.prices["my-model"].output, 4.0);
    // A misspelled price field is still an error: the price's own fields are closed.
    let err = Config::parse(
        "[budget.prices]\nm = { input = 1, cached_input = 0, outptu = 2 }\n",
        "b.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("outptu"), "{err}");
}

#[test]
fn bad_values_say_what_to_write() {
    let err = Config::parse("[run]\nmax_workers = 5\n", "b.toml").unwrap_err().to_string();
    assert!(err.contains("`run.max_workers` is 5; it must be between 1 and 3"), "{err}");
    let err =
        Config::parse("[roles.worker]\ntimeout = \"5 minutes please\"\n", "b.toml").unwrap_err();
    assert!(err.to_string().contains("`roles.worker.timeout`: invalid duration"), "{err}");
    let err = Config::parse("[roles.reviewer]\nbackend = \"command\"\n", "b.toml").unwrap_err();
    assert!(err.to_string().contains("`roles.reviewer.command` is empty"), "{err}");
    let err = Config::parse("[roles.worker]\nbackend = \"gpt\"\n", "b.toml").unwrap_err();
    assert!(err.to_string().contains("gpt"), "{err}");
    let err = Config::parse("[gates]\nmax_file_size = \"10 parsecs\"\n", "b.toml").unwrap_err();
    assert!(err.to_string().contains("`gates.max_file_size`"), "{err}");
}

#[test]
fn the_worktree_folder_is_absolute_with_home_expanded_and_never_relative() {
    assert_eq!(Config::defaults().worktree_root, None, "breeze's data folder by default");
    let parsed = |root: &str| Config::parse(&format!("[worktree]\nroot = {root:?}\n"), "b.toml");
    assert_eq!(parsed("/srv/lanes").unwrap().worktree_root, Some(PathBuf::from("/srv/lanes")));
    match std::env::var_os("HOME") {
        Some(home) => assert_eq!(
            parsed("~/lanes").unwrap().worktree_root,
            Some(PathBuf::from(home).join("lanes"))
        ),
        None => assert!(parsed("~/lanes").unwrap_err().message.contains("HOME")),
    }
    let expand = |text: &str| worktree_root(text, Some("/home/me".into()));
    assert_eq!(expand("~/w").unwrap(), Some(PathBuf::from("/home/me/w")));
    assert_eq!(expand("~").unwrap(), Some(PathBuf::from("/home/me")));
    assert_eq!(expand("  ").unwrap(), None);
    assert!(worktree_root("~/w", None).unwrap_err().to_string().contains("HOME is not set"));
    for relative in ["lanes", "./lanes", "../lanes", "~user/lanes"] {
        let err = parsed(relative).unwrap_err();
        assert!(err.message.contains("`worktree.root`"), "{relative}: {}", err.message);
        assert!(err.message.contains("relative one is refused"), "{relative}: {}", err.message);
    }
}

#[test]
fn worktree_include_outside_the_repository_is_a_config_error() {
    for bad in ["../secrets/*", "/etc/passwd", "config/../../x", "~/.ssh/id_rsa"] {
        let text = format!("[worktree]\ninclude = [{bad:?}]\n");
        let err = Config::parse(&text, "breeze.toml").unwrap_err().to_string();
        assert!(err.contains("points outside the repository"), "{bad}: {err}");
    }
    let ok = Config::parse("[worktree]\ninclude = [\".env\", \"config/*.local\"]\n", "b.toml");
    assert_eq!(ok.unwrap().worktree_include, [".env", "config/*.local"]);
}

#[test]
fn errors_show_the_line_of_the_users_file() {
    let err =
        Config::parse("[land]\nverify_timeout = \"30m\"\n\n[run]\nmax_worker = 2\n", "b.toml")
            .unwrap_err()
            .to_string();
    assert!(err.contains("unknown key run.max_worker at line 5"), "{err}");
    let err = Config::parse("[roles]\nworker = \"x\"\n", "b.toml").unwrap_err().to_string();
    assert!(err.contains("line 2") && err.contains("invalid type"), "{err}");
}

#[test]
fn tables_merge_and_other_values_replace() {
    let config = Config::parse(
        "[roles.advisor]\nenv = [\"A\"]\n[worktree]\ninclude = [\".env\"]\n",
        "b.toml",
    )
    .unwrap();
    assert_eq!(config.advisor.env, ["A"]);
    assert_eq!(config.advisor.timeout, Duration::from_secs(600), "the advisor's default");
    assert_eq!(config.worktree_include, [".env"]);
    assert_eq!(config.setup_timeout, Duration::from_secs(600));
}

#[test]
fn roles_take_the_default_workers_keys_but_not_the_users() {
    let defaults = DEFAULT_CONFIG.replace("env = []", "env = [\"FROM_DEFAULTS\"]");
    let config = parse_over(&defaults, "[roles.worker]\nenv = [\"USER\"]\n", "b.toml").unwrap();
    assert_eq!(config.worker.env, ["USER"]);
    for role in [&config.advisor, &config.reviewer, &config.scaffolder] {
        assert_eq!(role.env, ["FROM_DEFAULTS"], "{role:?}");
    }
    assert_eq!(config.reviewer.timeout, Duration::from_secs(20 * 60), "its own default");
}

#[test]
fn a_key_missing_from_the_defaults_is_named() {
    let defaults = DEFAULT_CONFIG.replace("verify_timeout = \"30m\"\n", "");
    assert_ne!(defaults, DEFAULT_CONFIG);
    let err = parse_over(&defaults, "", "b.toml").unwrap_err().to_string();
    assert!(err.starts_with("default-config.toml:"), "{err}");
    assert!(err.contains("missing field `verify_timeout`"), "{err}");
}

#[test]
fn budget_caps_are_optional_and_prices_add_to_breezes_table() {
    let defaults = Config::defaults();
    assert!(!defaults.budget.caps.any(), "no cap by default");
    assert_eq!(defaults.independent, Independence::Warn);
    assert_eq!(
        defaults.budget.prices.get("gpt-5"),
        Some(&Price { input: 1.25, cached_input: 0.125, output: 10.0 })
    );
    let config = Config::parse(
        "[budget]\nrun_usd = 20\nrun_tokens = 5000000\n[budget.prices]\n\"my-model\" = { input = 1, cached_input = 0.1, output = 4 }\n\"gpt-5\" = { input = 2.0, cached_input = 0.2, output = 20.0 }\n[review]\nindependent = \"require\"\n",
        "b.toml",
    )
    .unwrap();
    let caps = config.budget.caps;
    assert_eq!((caps.run_usd, caps.task_usd, caps.run_tokens), (Some(20.0), None, Some(5_000_000)));
    assert_eq!(config.budget.prices["my-model"].output, 4.0, "a model of the user's own");
    assert_eq!(config.budget.prices["gpt-5"].input, 2.0, "a corrected price");
    assert!(config.budget.prices.contains_key("gpt-5-mini"), "the rest of the table stays");
    assert_eq!(config.independent, Independence::Require);
    for (bad, key) in [
        ("[budget]\nrun_usd = -1\n", "`budget.run_usd` is -1"),
        ("[budget]\ntask_usd = nan\n", "`budget.task_usd` is NaN"),
        ("[budget]\nrun_tokens = -5\n", "`budget.run_tokens` is -5"),
        (
            "[budget.prices]\nm = { input = -1.0, cached_input = 0.0, output = 0.0 }\n",
            "`budget.prices.\"m\".input`",
        ),
        ("[budget.prices]\nm = { input = 1.0 }\n", "missing field `cached_input`"),
        ("[budget]\nrun_dollars = 5\n", "run_dollars"),
        ("[review]\nindependent = \"maybe\"\n", "maybe"),
    ] {
        let err = Config::parse(bad, "b.toml").unwrap_err().to_string();
        assert!(err.contains(key), "{bad}: {err}");
    }
}

#[test]
fn sizes_and_durations_parse() {
    assert_eq!(parse_size("10MiB").unwrap(), 10 << 20);
    assert_eq!(parse_size("512 KiB").unwrap(), 512 << 10);
    assert_eq!(parse_size("2GB").unwrap(), 2_000_000_000);
    assert_eq!(parse_size("100").unwrap(), 100);
    assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
    assert_eq!(parse_duration("1h 30m").unwrap(), Duration::from_secs(5400));
    assert!(parse_duration("0s").is_err());
}

#[test]
fn the_network_is_allow_listed_by_default_and_takes_hosts_or_open() {
    assert_eq!(Config::defaults().network, NetworkPolicy::AllowList(Vec::new()));
    let open = Config::parse("[sandbox]\nnetwork = \"open\"\n", "n.toml").unwrap();
    assert_eq!(open.network, NetworkPolicy::Open);
    let hosts =
        Config::parse("[sandbox]\nnetwork = [\"pypi.org\", \"127.0.0.1:4873\"]\n", "n.toml");
    let NetworkPolicy::AllowList(rules) = hosts.unwrap().network else { panic!("a list") };
    assert_eq!(rules.len(), 2);
    assert!(rules[1].allows("127.0.0.1", 4873));
    for (bad, says) in [
        ("\"closed\"", "`closed` is neither \"open\" nor a list of hosts"),
        ("[\"ftp://mirror\"]", "a URL must be http or https"),
        ("[\"evil host\"]", "is not a host name or address"),
    ] {
        let err = Config::parse(&format!("[sandbox]\nnetwork = {bad}\n"), "n.toml").unwrap_err();
        assert!(err.to_string().contains(says), "{bad}: {err}");
    }
}

#[test]
fn quotas_pause_at_a_share_of_a_window_and_a_role_may_fall_back_to_another_cli() {
    let config = Config::defaults();
    assert_eq!(config.pause_at, 0.9);
    assert_eq!(config.reviewer.fallback, None, "no fallback unless asked");
    let written = "[quota]\npause_at = 0.75\n\n[roles.reviewer]\nbackend = \"claude\"\nfallback = { backend = \"codex\", model = \"gpt-5\" }\n\n[budget]\nsession_usd = 2.5\n";
    let config = Config::parse(written, "q.toml").unwrap();
    assert_eq!(config.pause_at, 0.75);
    assert_eq!(config.budget.session_usd, Some(2.5));
    let on_fallback = config.reviewer.on_fallback().unwrap();
    assert_eq!((on_fallback.backend, on_fallback.model.as_str()), (BackendKind::Codex, "gpt-5"));
    assert_eq!(on_fallback.timeout, config.reviewer.timeout, "the role's own timeouts hold");
    assert_eq!(config.worker.fallback, None, "the reviewer's fallback is the reviewer's only");
    for share in ["0", "1.5", "-0.2"] {
        let err = Config::parse(&format!("[quota]\npause_at = {share}\n"), "q.toml").unwrap_err();
        assert!(err.to_string().contains("`quota.pause_at` is"), "{err}");
    }
    for backend in ["claude", "command", "gemini"] {
        let written = format!("[roles.reviewer]\nfallback = {{ backend = \"{backend}\" }}\n");
        let err = Config::parse(&written, "q.toml").unwrap_err().to_string();
        assert!(err.contains("`roles.reviewer.fallback.backend` is"), "{backend}: {err}");
    }
    let typo = "[roles.reviewer]\nfallback = { backend = \"codex\", modle = \"gpt-5\" }\n";
    assert!(Config::parse(typo, "q.toml").unwrap_err().to_string().contains("modle"));
}

#[test]
fn a_fallback_is_not_handed_what_reaches_the_remotes_either() {
    let written = "[land]\nto = \"remote\"\n[roles.reviewer]\nfallback = { backend = \"codex\", env = [\"SSH_AUTH_SOCK\"] }\n";
    let err = Config::parse(written, "breeze.toml").unwrap_err().to_string();
    assert!(err.contains("`roles.reviewer.fallback.env` names SSH_AUTH_SOCK"), "{err}");
}
