//! End-to-end tests: the real `breeze` binary against real files and git repositories,
//! checked with the `git` CLI. One test binary for the whole project; each area is a
//! module. Library-level behaviour is tested in the crates; these tests cover what only
//! the whole program shows.

mod agents;
mod approval;
mod attach;
mod budgets;
mod checkout;
mod containment;
mod demo;
mod ecosystems;
mod init;
mod integrity;
mod landing_kills;
mod live;
mod mcp_clients;
mod own_tools;
mod plan;
mod preflight;
mod protocol_roles;
mod real_agents;
mod real_budgets;
mod real_quotas;
mod recovery;
mod remote_landing;
mod replay;
mod report;
mod review_diff;
mod reviewer_isolation;
mod role_homes;
mod scaffold;
mod sealed_git;
mod secrets;
mod support;
mod validate;
mod verdicts;

/// Every `*.rs` file in this folder is a module of this binary (jj's forgotten-file guard).
#[test]
fn no_forgotten_test_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/e2e");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(module) = name.strip_suffix(".rs")
            && module != "main"
        {
            assert!(
                main.contains(&format!("mod {module};")),
                "tests/e2e/{name} is not declared in main.rs"
            );
        }
    }
}
