//! Prints what `breeze plan` prints, straight from the library:
//! `cargo run -p breeze-plan --example show_plan -- PLAN [--json|--dot] [--max-workers N]`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut path = None;
    let mut mode = "table";
    let mut max_workers = 3;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => mode = "json",
            "--dot" => mode = "dot",
            "--max-workers" => {
                max_workers = args.next().and_then(|v| v.parse().ok()).unwrap_or(3);
            }
            other => path = Some(PathBuf::from(other)),
        }
    }
    let path = path.unwrap_or_else(|| PathBuf::from("Plans.md"));
    let result = breeze_plan::load(&path).and_then(|plan| {
        let analysis = breeze_plan::analyze(&plan, max_workers)?;
        Ok((plan, analysis))
    });
    match result {
        Ok((plan, analysis)) => {
            match mode {
                "json" => println!(
                    "{}",
                    serde_json::to_string_pretty(&breeze_plan::render::json(&plan, &analysis))
                        .expect("a JSON value serializes")
                ),
                "dot" => print!("{}", breeze_plan::render::dot(&plan, &analysis)),
                _ => print!("{}", breeze_plan::render::table(&plan, &analysis)),
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("{err}");
            ExitCode::from(2)
        }
    }
}
