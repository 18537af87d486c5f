//! Test-only: a binary that starts roles the way `breeze` does (its `main` calls
//! [`breeze_supervise::start_roles_through_this_binary`] first), for this crate's tests.

fn main() {
    breeze_supervise::start_roles_through_this_binary();
    eprintln!(
        "breeze-role-launcher: started by the supervisor with {} only",
        breeze_supervise::LAUNCHER_ARG
    );
    std::process::exit(2);
}
