//! Readers for TensorFlow's deployment formats with no Python and no TensorFlow: SavedModel
//! (`saved_model.pb`), frozen GraphDef files and tensor bundles (checkpoints), decoded into the
//! generated protobuf types of the project's `protos/` and into [`Tensor`]s.
//!
//! Every reader checks what a file claims against the file before it allocates, and reports
//! damage as an [`Error`] naming the file and the key, block or node at fault; nothing a file
//! controls can make it panic.

pub mod bundle;
pub mod checksum;
pub mod dtype;
pub mod engine;
pub mod error;
pub mod file;
pub mod kernels;
mod mmap;
pub mod saved_model;
pub mod table;
pub mod tensor;
pub mod tensor_proto;
mod wire;

/// The message types of `protos/*.proto` (package `savedmodel`), generated at build time.
/// Lints are for code we write; generated code is checked by its generator.
#[allow(clippy::all)]
pub mod protos {
    include!(concat!(env!("OUT_DIR"), "/savedmodel.rs"));
}

pub use bundle::BundleReader;
pub use dtype::DType;
pub use engine::{LoadOptions, Model, Profile, RunOptions};
pub use error::{Error, MissingOp, Result};
pub use tensor::{Storage, Tensor};
