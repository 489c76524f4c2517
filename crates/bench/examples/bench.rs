//! Standalone `lode bench` for development: `cargo run -p lode-bench --example bench -- search ...`.
//! The `lode` binary exposes the same commands as `lode bench ...`.

fn main() -> anyhow::Result<()> {
    let args = match lode_bench::parse_args(std::env::args_os().skip(1)) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    lode_bench::run(args)
}
