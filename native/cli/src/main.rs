//! `savedmodel-run`: run one signature of a SavedModel directory or a frozen GraphDef file on
//! the native engine, with no Python. Flags, inputs and outputs are `savedmodel run`'s: outputs
//! print as arrays, or go to `OUTDIR/<key>.npy`; `--bench N` also times N further calls and
//! `--profile` says where their time goes.
//! Errors print as one `Error: ...` line with exit status 1 (usage errors: status 2).

mod inputs;
mod literal;
mod print;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use savedmodel_core::{LoadOptions, Model, Profile, RunOptions, Tensor};

/// Run one signature of a SavedModel (a directory) or a frozen GraphDef (a .pb file) on the
/// native engine, with no Python.
#[derive(Parser)]
#[command(name = "savedmodel-run", version)]
struct Args {
    /// A SavedModel directory, or a frozen GraphDef file (.pb): its signature is
    /// serving_default, its inputs the placeholders and its outputs the nodes nothing reads.
    model: PathBuf,
    /// The SignatureDef to run.
    #[arg(
        long = "signature-def",
        visible_alias = "signature_def",
        default_value = "serving_default"
    )]
    signature: String,
    /// Comma-separated tag-set of the MetaGraphDef.
    #[arg(long = "tag-set", visible_alias = "tag_set", default_value = "serve")]
    tags: String,
    /// NAME=file.npy or NAME=file.npz[key], separated by ';'.
    #[arg(long, value_name = "SPEC")]
    inputs: Option<String>,
    /// NAME=<Python literal>, separated by ';' (parsed as a literal, never evaluated).
    #[arg(
        long = "input-exprs",
        visible_alias = "input_exprs",
        value_name = "SPEC"
    )]
    input_exprs: Option<String>,
    /// Write each output to OUTDIR/<key>.npy instead of printing it.
    #[arg(long)]
    outdir: Option<PathBuf>,
    /// Replace existing .npy files in --outdir.
    #[arg(long)]
    overwrite: bool,
    /// Let the model's file-system ops and assets use files outside its directory; by default
    /// they may only read inside it.
    #[arg(long = "allow-file-access", visible_alias = "allow_file_access")]
    allow_file_access: bool,
    /// Stop with an error when running the signature takes longer than SECONDS.
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    timeout: Option<f64>,
    /// After the first call, time N more and print latency percentiles (to stderr).
    #[arg(long, value_name = "N")]
    bench: Option<usize>,
    /// Print where the time of the calls after the first goes, per op type and for the
    /// slowest nodes (to stderr); with --bench N over those N calls, else over one more call.
    #[arg(long)]
    profile: bool,
    /// How many of the slowest nodes --profile lists (0: all).
    #[arg(long, value_name = "N", default_value_t = 20)]
    profile_nodes: usize,
}

fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

fn main() -> ExitCode {
    savedmodel_alloc::keep_freed();
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("Error: {message}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let given = inputs::given(args.inputs.as_deref(), args.input_exprs.as_deref())?;
    let model = load(args)?;
    let signature = model
        .signature(&args.signature)
        .map_err(|e| e.to_string())?;
    let mut feeds = Vec::new();
    let mut given = given;
    for spec in &signature.inputs {
        if let Some(value) = given.remove(&spec.key) {
            let where_ = format!("input {:?} of signature {:?}", spec.key, signature.name);
            feeds.push((
                spec.key.clone(),
                inputs::convert(value, spec.dtype, &where_)?,
            ));
        }
    }
    // Unknown names are left in the feeds so that the engine's error lists the inputs.
    feeds.extend(given.into_iter().map(|(k, v)| (k, v.tensor)));
    let deadline = args
        .timeout
        .map(|s| Instant::now() + Duration::from_secs_f64(s));
    let profile = Profile::new();
    let call = |feeds: Vec<(String, Tensor)>, profile: Option<&Profile>| {
        let options = RunOptions { deadline, profile };
        model
            .run_with(&args.signature, feeds, &options)
            .map_err(|e| e.to_string())
    };
    let outputs = call(feeds.clone(), None)?;
    let profiled = args.profile.then_some(&profile);
    match args.bench {
        Some(n) => bench(n, || feeds.clone(), |f| call(f, profiled).map(drop))?,
        None if args.profile => call(feeds.clone(), profiled).map(drop)?,
        None => {}
    }
    if args.profile {
        report(&profile, args.profile_nodes);
    }
    match &args.outdir {
        None => {
            for (key, value) in &outputs {
                println!("Result for output key {key}:\n{}", print::repr(value));
            }
            Ok(())
        }
        Some(dir) => write_outputs(&outputs, dir, args.overwrite),
    }
}

fn load(args: &Args) -> Result<Model, String> {
    let options = LoadOptions {
        tags: args
            .tags
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(String::from)
            .collect(),
        allow_file_access: args.allow_file_access,
        output_dir: args.outdir.clone(),
    };
    let loaded = if args.model.is_file() {
        Model::load_graph_def(&args.model, &options)
    } else {
        Model::load(&args.model, &options)
    };
    savedmodel_alloc::release_freed();
    loaded.map_err(|e| e.to_string())
}

/// Times `n` calls, each on feeds from `prepare` (copied outside the timed span: copying a
/// batch of images took a few percent of a call), and prints min, percentiles and mean to
/// stderr.
fn bench<F>(
    n: usize,
    mut prepare: impl FnMut() -> F,
    mut call: impl FnMut(F) -> Result<(), String>,
) -> Result<(), String> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let feeds = prepare();
        let start = Instant::now();
        call(feeds)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    if times.is_empty() {
        return Ok(());
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    eprintln!(
        "latency over {n} calls (ms): min {:.3}  p50 {:.3}  p90 {:.3}  p99 {:.3}  max {:.3}  mean {:.3}",
        at(0.0),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0),
        mean
    );
    Ok(())
}

/// Prints the profile's time per op type, then its `nodes` slowest nodes (all when 0) with
/// each one's median run, to stderr.
fn report(profile: &Profile, nodes: usize) {
    let summary = profile.summary();
    let total = summary.total.as_secs_f64();
    let share = |seconds: f64| {
        if total > 0.0 {
            100.0 * seconds / total
        } else {
            0.0
        }
    };
    eprintln!(
        "time per op type (own time, over the profiled calls; total {:.3} ms):",
        total * 1e3
    );
    eprintln!("{:>10} {:>6} {:>8}  op", "ms", "%", "runs");
    for e in summary.ops {
        let s = e.own.as_secs_f64();
        eprintln!(
            "{:>10.3} {:>6.1} {:>8}  {}",
            s * 1e3,
            share(s),
            e.runs,
            e.op
        );
    }
    eprintln!("slowest nodes:");
    eprintln!(
        "{:>10} {:>6} {:>8} {:>10}  node (op)",
        "ms", "%", "runs", "median us"
    );
    let listed = if nodes == 0 { usize::MAX } else { nodes };
    for e in summary.nodes.into_iter().take(listed) {
        let s = e.own.as_secs_f64();
        eprintln!(
            "{:>10.3} {:>6.1} {:>8} {:>10.1}  {} ({})",
            s * 1e3,
            share(s),
            e.runs,
            e.median.as_secs_f64() * 1e6,
            e.node,
            e.op
        );
    }
}

/// Writes each output to `dir/<key>.npy` ('/' in a key becomes '_'), refusing to replace files
/// unless `overwrite`; each file is written whole (temporary file, then rename).
fn write_outputs(
    outputs: &[(String, std::sync::Arc<Tensor>)],
    dir: &Path,
    overwrite: bool,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let targets: Vec<PathBuf> = outputs
        .iter()
        .map(|(key, _)| dir.join(format!("{}.npy", key.replace('/', "_"))))
        .collect();
    let existing: Vec<String> = targets
        .iter()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !existing.is_empty() && !overwrite {
        return Err(format!(
            "output files exist (use --overwrite): {}",
            existing.join(", ")
        ));
    }
    for ((key, value), path) in outputs.iter().zip(&targets) {
        let partial = path.with_extension("npy.partial");
        std::fs::write(&partial, savedmodel_npy::encode(value))
            .and_then(|()| std::fs::rename(&partial, path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&partial);
                format!("{}: {e}", path.display())
            })?;
        println!("{key}: {}", path.display());
    }
    Ok(())
}
