//! `tests/c/run_model.c` compiled against `include/savedmodel.h` and linked both ways (with the
//! static library and with the shared one), run on a generated frozen graph and SavedModel;
//! its transcript must be exactly the expected one.
//!
//! Where the libraries are: cargo compiles this package's library once for the test build, as
//! rlib, cdylib and staticlib together, into the `deps/` directory that holds this test's own
//! executable (`target/<profile>/deps/libsavedmodel.{a,so}`); so they are found next to
//! `std::env::current_exe()` and are always the build under test. The C compiler is `$CC`,
//! else `cc`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The native libraries a Rust staticlib needs on Linux (`rustc --print native-static-libs`).
const STATIC_LIBS: [&str; 6] = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap().to_path_buf();
    assert!(
        deps.join("libsavedmodel.a").is_file() && deps.join("libsavedmodel.so").is_file(),
        "libsavedmodel.a/.so not built next to {}",
        exe.display()
    );
    deps
}

/// Compiles run_model.c into `out`, linked statically or against the shared library.
fn compile(out: &Path, shared: bool) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let libs = lib_dir();
    let exe = out.join(if shared {
        "run_model_shared"
    } else {
        "run_model_static"
    });
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-o"])
        .arg(&exe)
        .arg(manifest.join("tests/c/run_model.c"))
        .arg("-I")
        .arg(manifest.join("include"));
    if shared {
        cc.arg("-L")
            .arg(&libs)
            .arg("-lsavedmodel")
            .arg(format!("-Wl,-rpath,{}", libs.display()));
    } else {
        cc.arg(libs.join("libsavedmodel.a")).args(STATIC_LIBS);
    }
    let result = cc.output().expect("run the C compiler");
    assert!(
        result.status.success(),
        "compiling run_model.c failed:\n{}",
        String::from_utf8_lossy(&result.stderr)
    );
    exe
}

/// The program's stdout; it must exit 0.
fn run(exe: &Path, model: &Path) -> String {
    let result = Command::new(exe)
        .arg(model)
        .output()
        .expect("run run_model");
    let stdout = String::from_utf8(result.stdout).unwrap();
    assert!(
        result.status.success(),
        "run_model {} failed:\n{stdout}\n{}",
        model.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    stdout
}

const RESULTS: &str = r#"result t string [3] 29 bytes: "ab" "" "c d"
result y float32 [2,2] 16 bytes: 1.5 -2 3 4.25
"#;

fn errors(available: &str) -> String {
    format!(
        r#"error: no signature "nope"; available: {available}
error: input "x" of signature "serving_default": expected float32, got int32
error: input 0 ("x"): float32 [2, 2] takes 16 bytes, got 12
all checks passed
"#
    )
}

#[test]
fn the_c_program_runs_a_frozen_graph() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::frozen_graph(dir.path());
    let expected = format!(
        "signature serving_default
  input s string [-1]
  input x float32 [-1,2]
  output t string unknown
  output y float32 unknown
{RESULTS}{}",
        errors("serving_default")
    );
    for shared in [false, true] {
        let exe = compile(dir.path(), shared);
        assert_eq!(run(&exe, &model), expected, "shared: {shared}");
    }
}

#[test]
fn the_c_program_runs_a_saved_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::saved_model(dir.path());
    let expected = format!(
        "signature any_rank
  input a int32 unknown
  output a_out int32 unknown
signature half
  input h float16 []
  output h_out float16 []
signature serving_default
  input s string [-1]
  input x float32 [-1,2]
  output t string [-1]
  output y float32 [-1,2]
{RESULTS}{}",
        errors("any_rank, half, serving_default")
    );
    let exe = compile(dir.path(), true);
    assert_eq!(run(&exe, &model), expected);
}

#[test]
fn the_c_program_reports_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), false);
    let result = Command::new(&exe)
        .arg(dir.path().join("missing.pb"))
        .output()
        .unwrap();
    assert_eq!(result.status.code(), Some(1));
    let stdout = String::from_utf8(result.stdout).unwrap();
    assert!(
        stdout.starts_with("load failed: ") && stdout.contains("missing.pb"),
        "{stdout}"
    );
}
