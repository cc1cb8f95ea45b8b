//! The one error type of the readers. Every variant names the file it is about and, where there
//! is one, the key, block or message inside it, so a caller can report it as is.

use std::path::PathBuf;

/// What went wrong reading a model or checkpoint file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: no such file", path = .path.display())]
    Missing { path: PathBuf },

    #[error("{path}: cannot read ({source})", path = .path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

    #[error("{path}: not a regular file", path = .path.display())]
    NotRegularFile { path: PathBuf },

    /// The file ends before a structure it claims to hold.
    #[error("{path}: {what}: {detail}", path = .path.display())]
    Truncated {
        path: PathBuf,
        what: String,
        detail: String,
    },

    #[error("{path}: bad table magic number {found:#x}; not a checkpoint index, or truncated",
            path = .path.display())]
    BadMagic { path: PathBuf, found: u64 },

    #[error("{path}: checksum mismatch in {what}; the file is corrupt", path = .path.display())]
    Checksum { path: PathBuf, what: String },

    /// A structure whose fields contradict each other or the file.
    #[error("{path}: {what}: {detail}", path = .path.display())]
    Corrupt {
        path: PathBuf,
        what: String,
        detail: String,
    },

    /// `key` is the index key whose value it is, None when the message is the whole file.
    #[error("{path}: cannot parse {message}{key}: {source}", path = .path.display(),
            key = .key.as_ref().map(|k| format!(" under key {k:?}")).unwrap_or_default())]
    Decode {
        path: PathBuf,
        message: &'static str,
        key: Option<String>,
        source: prost::DecodeError,
    },

    /// Valid data this reader does not handle (compression, big-endian bundles, a dtype).
    #[error("{path}: {what}: {detail}", path = .path.display())]
    Unsupported {
        path: PathBuf,
        what: String,
        detail: String,
    },

    /// `path` is the index that lists the shard; `what` names the tensor that needs it.
    #[error("{path}: {what}: data shard {shard} is missing",
            path = .path.display(), shard = .shard.display())]
    MissingShard {
        path: PathBuf,
        what: String,
        shard: PathBuf,
    },

    #[error("{path}: no tensor named {key:?}", path = .path.display())]
    UnknownKey { path: PathBuf, key: String },

    #[error("{path}: no MetaGraphDef with tag-set '{tags}' (tag-sets present: {present})",
            path = .path.display())]
    NoMetaGraph {
        path: PathBuf,
        tags: String,
        present: String,
    },

    /// A TensorProto whose dtype, shape and values do not make a tensor; `place` names the
    /// node, attribute or file it came from.
    #[error("{place}: {detail}")]
    TensorProto { place: String, detail: String },

    /// A graph or function that cannot be compiled (dangling input, cycle, bad attr); `detail`
    /// names the graph or function and the node.
    #[error("{detail}")]
    Graph { detail: String },

    /// Ops the native engine has no kernel for, each with the node and function that use it.
    #[error("the native engine has no kernel for {}", describe_missing(.missing))]
    UnsupportedOps { missing: Vec<MissingOp> },

    /// A kernel failed while running; `detail` reads as a path from the outermost call inward.
    #[error("{detail}")]
    Run { detail: String },

    /// A caller's input that does not fit (unknown or missing key, dtype, shape).
    #[error("{detail}")]
    Feed { detail: String },

    /// A model's file-system op or file reached outside what the caller allows; `detail` names
    /// the op or file and the path.
    #[error("{detail}")]
    FileAccess { detail: String },

    /// The caller's time limit ran out; `detail` says where the engine noticed.
    #[error("{detail}")]
    DeadlineExceeded { detail: String },

    #[error("no signature {name:?}; available: {available}")]
    UnknownSignature { name: String, available: String },
}

/// One op the native engine cannot run, where a model uses it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MissingOp {
    pub op: String,
    pub node: String,
    /// The function whose body holds the node; empty for the top-level graph.
    pub function: String,
}

fn describe_missing(missing: &[MissingOp]) -> String {
    let shown: Vec<String> = missing
        .iter()
        .take(10)
        .map(|m| {
            let place = if m.function.is_empty() {
                "the graph".to_string()
            } else {
                format!("function {:?}", m.function)
            };
            format!("op {} (node {:?} in {place})", m.op, m.node)
        })
        .collect();
    let more = missing.len().saturating_sub(shown.len());
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("{}{tail}", shown.join(", "))
}

pub type Result<T> = std::result::Result<T, Error>;
