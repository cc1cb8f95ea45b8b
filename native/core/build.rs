//! Generates the Rust types of the project's `protos/*.proto`, the one schema both languages
//! share. protox is a pure-Rust protobuf compiler, so no `protoc` binary is needed.
//!
//! The .proto files import each other as `savedmodel/protos/<name>.proto` (the Python package
//! path), so they are copied under that path in OUT_DIR, which then serves as the include root.

use std::error::Error;
use std::fs;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let protos = manifest.join("../../protos");
    println!("cargo:rerun-if-changed={}", protos.display());

    let include = PathBuf::from(std::env::var("OUT_DIR")?).join("include");
    let package_dir = include.join("savedmodel/protos");
    fs::create_dir_all(&package_dir)?;
    let mut files = Vec::new();
    for name in proto_names(&protos)? {
        fs::copy(protos.join(&name), package_dir.join(&name))?;
        files.push(format!("savedmodel/protos/{name}"));
    }

    let descriptors = protox::compile(&files, [&include])?;
    // An AttrValue holds one of a scalar, a list or a tensor; unboxed, each one is as large as
    // a TensorProto (400 bytes), and a model's nodes hold tens of thousands of them.
    prost_build::Config::new()
        .boxed(".savedmodel.AttrValue.value.list")
        .boxed(".savedmodel.AttrValue.value.tensor")
        .compile_fds(descriptors)?;
    Ok(())
}

/// The `.proto` file names in `dir`, sorted so the build does not depend on directory order.
fn proto_names(dir: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".proto") {
            println!("cargo:rerun-if-changed={}", dir.join(&name).display());
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}
