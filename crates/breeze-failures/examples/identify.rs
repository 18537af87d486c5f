//! Prints what a saved output says failed, and its headline:
//! `cargo run -p breeze-failures --example identify -- OUTPUT_FILE [COMMAND...]`.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(file) = args.next() else {
        eprintln!("usage: identify OUTPUT_FILE [COMMAND...]");
        std::process::exit(2);
    };
    let output = match std::fs::read(&file) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => {
            eprintln!("identify: {file}: {error}");
            std::process::exit(1);
        }
    };
    let argv: Vec<String> = args.collect();
    let reading = breeze_failures::read(&argv, &output);
    println!("{:#?}", reading.failure);
    println!("headline: {}", reading.headline.unwrap_or_default());
}
