//! `plan.toml` text for tests.

/// One `[[task]]` table; `extra` holds further keys (and `[task.sim]`).
pub fn toml_task(id: &str, title: &str, writes: &[&str], extra: &str) -> String {
    let writes = writes.iter().map(|w| format!("{w:?}")).collect::<Vec<_>>().join(", ");
    format!(
        "[[task]]\nid = {id:?}\ntitle = {title:?}\ndod = \"done\"\nwrites = [{writes}]\n{extra}\n"
    )
}

/// A plan of one task, `1`, that may write `src/one.txt`, steered by `sim` (the body of
/// its `[task.sim]` table; empty for the simulator's defaults).
pub fn one_task(sim: &str) -> String {
    toml_task("1", "Only task", &["src/one.txt"], &format!("[task.sim]\n{sim}"))
}
