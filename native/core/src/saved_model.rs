//! Reading a SavedModel directory's `saved_model.pb` and TensorFlow 1 frozen GraphDef files.

use std::collections::BTreeSet;
use std::path::Path;

use prost::Message;

use crate::error::{Error, Result};
use crate::file::{decode_message, read_file};
use crate::protos::{GraphDef, MetaGraphDef, SavedModel, SignatureDef};

pub const SAVED_MODEL_PB: &str = "saved_model.pb";
pub const SAVED_MODEL_PBTXT: &str = "saved_model.pbtxt";

/// The SavedModel message of `export_dir`'s `saved_model.pb`.
pub fn read_saved_model(export_dir: &Path) -> Result<SavedModel> {
    let path = export_dir.join(SAVED_MODEL_PB);
    if !path.exists() && export_dir.join(SAVED_MODEL_PBTXT).exists() {
        return Err(Error::Unsupported {
            path: export_dir.join(SAVED_MODEL_PBTXT),
            what: "SavedModel".into(),
            detail: "the text format is not supported; save the model as saved_model.pb".into(),
        });
    }
    read_message(&path, "SavedModel")
}

/// The GraphDef of a frozen graph file (`.pb`).
pub fn read_graph_def(path: &Path) -> Result<GraphDef> {
    read_message(path, "GraphDef")
}

fn read_message<M: Message + Default>(path: &Path, message: &'static str) -> Result<M> {
    decode_message(path, &read_file(path)?, message, None)
}

/// The MetaGraphDef of `model` whose tag-set is exactly `tags`; `path` names the file in the
/// error, which lists the tag-sets present.
pub fn find_meta_graph<'a>(
    model: &'a SavedModel,
    tags: &[&str],
    path: &Path,
) -> Result<&'a MetaGraphDef> {
    let wanted: BTreeSet<&str> = tags.iter().copied().collect();
    if let Some(found) = model.meta_graphs.iter().find(|m| tag_set(m) == wanted) {
        return Ok(found);
    }
    let present: Vec<String> = model
        .meta_graphs
        .iter()
        .map(|m| format_tags(&tag_set(m)))
        .collect();
    Err(Error::NoMetaGraph {
        path: path.into(),
        tags: format_tags(&wanted),
        present: if present.is_empty() {
            "none".into()
        } else {
            present.join("; ")
        },
    })
}

/// The tags of a MetaGraphDef as a set (order and repeats in the file do not matter).
pub fn tag_set(meta_graph: &MetaGraphDef) -> BTreeSet<&str> {
    meta_graph
        .meta_info_def
        .iter()
        .flat_map(|info| info.tags.iter().map(String::as_str))
        .collect()
}

fn format_tags(tags: &BTreeSet<&str>) -> String {
    tags.iter().copied().collect::<Vec<_>>().join(",")
}

/// The SignatureDefs of a MetaGraphDef, sorted by key.
pub fn signatures(meta_graph: &MetaGraphDef) -> Vec<(&str, &SignatureDef)> {
    let mut all: Vec<_> = meta_graph
        .signature_def
        .iter()
        .map(|(name, sig)| (name.as_str(), sig))
        .collect();
    all.sort_by_key(|&(name, _)| name);
    all
}
