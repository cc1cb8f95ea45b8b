//! Checks of the SavedObjectGraph made at load, before anything follows its ids: a child or a
//! captured object id out of range (a negative one would otherwise count from the end in a
//! caller that indexes the node list as Python does), or a signature that is not a function.
//! The messages are the numpy engine's (runtime/object_graph.py), so both engines reject a
//! damaged graph with the same words.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

use crate::error::{Error, Result};
use crate::protos::{saved_object::Kind, structured_value, SavedObjectGraph, StructuredValue};

/// The user object whose children are a model's signatures.
const SIGNATURE_MAP: &str = "signature_map";

/// Ok when every id in `graph` names one of its nodes and the signature map holds functions
/// only; otherwise a file-format error naming `export_dir` and what is wrong.
pub fn check(graph: &SavedObjectGraph, export_dir: &Path) -> Result<()> {
    let damaged = |detail: String| Error::Corrupt {
        path: export_dir.to_path_buf(),
        what: "the object graph is damaged".to_string(),
        detail,
    };
    let count = graph.nodes.len();
    for (node_id, node) in graph.nodes.iter().enumerate() {
        let signatures = matches!(&node.kind,
            Some(Kind::UserObject(user)) if user.identifier == SIGNATURE_MAP);
        for child in &node.children {
            let name = py_str(&child.local_name);
            let target = usize::try_from(child.node_id)
                .ok()
                .and_then(|i| graph.nodes.get(i))
                .ok_or_else(|| {
                    damaged(format!(
                        "object {node_id} has child {name} = object {}, but there are {count} objects",
                        child.node_id
                    ))
                })?;
            let kind = kind_name(target.kind.as_ref());
            if signatures && !matches!(kind, "function" | "bare_concrete_function") {
                return Err(damaged(format!(
                    "signature {name} is object {}, a {kind}, not a function",
                    child.node_id
                )));
            }
        }
    }
    let mut names: Vec<&String> = graph.concrete_functions.keys().collect();
    names.sort();
    for name in names {
        for &node_id in &graph.concrete_functions[name].bound_inputs {
            if usize::try_from(node_id).map_or(true, |i| i >= count) {
                return Err(damaged(format!(
                    "concrete function {} captures object {node_id}, but there are {count} objects",
                    py_str(name)
                )));
            }
        }
    }
    check_functions(graph, export_dir)
}

/// Every concrete function of a reachable function object must exist, and its input signature
/// be an (args, kwargs) pair: what binding the object graph's methods relies on. The rest of
/// the saved structures is read when a method is first bound.
fn check_functions(graph: &SavedObjectGraph, export_dir: &Path) -> Result<()> {
    let mut reached: Vec<usize> = object_paths(graph).into_keys().collect();
    reached.sort_unstable();
    for id in reached {
        let Some(Kind::Function(function)) = graph.nodes.get(id).and_then(|n| n.kind.as_ref())
        else {
            continue;
        };
        for name in &function.concrete_functions {
            let corrupt = |detail: &str| Error::Corrupt {
                path: export_dir.to_path_buf(),
                what: format!("concrete function {}", py_str(name)),
                detail: detail.to_string(),
            };
            let concrete = graph
                .concrete_functions
                .get(name)
                .ok_or_else(|| corrupt("the object graph has no such concrete function"))?;
            if !is_args_kwargs(concrete.canonicalized_input_signature.as_ref()) {
                return Err(corrupt(
                    "canonicalized_input_signature is not an (args, kwargs) pair",
                ));
            }
        }
    }
    Ok(())
}

/// Whether `value` is a tuple of a sequence (the positional arguments) and a dict.
fn is_args_kwargs(value: Option<&StructuredValue>) -> bool {
    use structured_value::Kind as S;
    let Some(S::TupleValue(pair)) = value.and_then(|v| v.kind.as_ref()) else {
        return false;
    };
    matches!(
        pair.values
            .iter()
            .map(|v| v.kind.as_ref())
            .collect::<Vec<_>>()
            .as_slice(),
        [
            Some(S::TupleValue(_) | S::ListValue(_)),
            Some(S::DictValue(_))
        ]
    )
}

/// The dotted path of every object reachable from the root, first path found wins.
pub fn object_paths(objects: &SavedObjectGraph) -> HashMap<usize, String> {
    let mut paths = HashMap::new();
    let mut queue = VecDeque::from([(0usize, String::new())]);
    let mut seen = HashSet::from([0usize]);
    while let Some((id, path)) = queue.pop_front() {
        let Some(node) = objects.nodes.get(id) else {
            continue;
        };
        if !path.is_empty() {
            paths.insert(id, path.clone());
        }
        for child in &node.children {
            let Ok(child_id) = usize::try_from(child.node_id) else {
                continue;
            };
            if seen.insert(child_id) {
                let child_path = if path.is_empty() {
                    child.local_name.clone()
                } else {
                    format!("{path}.{}", child.local_name)
                };
                queue.push_back((child_id, child_path));
            }
        }
    }
    paths
}

/// The name of the `kind` field set on an object, as protobuf's WhichOneof gives it.
fn kind_name(kind: Option<&Kind>) -> &'static str {
    match kind {
        None => "None",
        Some(Kind::UserObject(_)) => "user_object",
        Some(Kind::Asset(_)) => "asset",
        Some(Kind::Function(_)) => "function",
        Some(Kind::Variable(_)) => "variable",
        Some(Kind::BareConcreteFunction(_)) => "bare_concrete_function",
        Some(Kind::Constant(_)) => "constant",
        Some(Kind::Resource(_)) => "resource",
        Some(Kind::CapturedTensor(_)) => "captured_tensor",
    }
}

/// `text` quoted as Python's repr quotes a string (single quotes unless it holds one and no
/// double quote), so that names read as in the numpy engine's messages.
fn py_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protos::{saved_object::Kind, SavedObject, SavedUserObject};

    fn graph(children: &[(i32, &str)], signature_map: bool) -> SavedObjectGraph {
        use crate::protos::trackable_object_graph::trackable_object::ObjectReference;
        let root = SavedObject {
            children: children
                .iter()
                .map(|&(node_id, name)| ObjectReference {
                    node_id,
                    local_name: name.to_string(),
                })
                .collect(),
            kind: Some(Kind::UserObject(SavedUserObject {
                identifier: if signature_map {
                    SIGNATURE_MAP
                } else {
                    "_generic_user_object"
                }
                .to_string(),
                ..Default::default()
            })),
            ..Default::default()
        };
        SavedObjectGraph {
            nodes: vec![root, SavedObject::default()],
            ..Default::default()
        }
    }

    fn message(graph: &SavedObjectGraph) -> String {
        match check(graph, Path::new("/m")) {
            Err(e) => e.to_string(),
            Ok(()) => String::new(),
        }
    }

    #[test]
    fn ids_out_of_range_are_named() {
        assert_eq!(message(&graph(&[(1, "w")], false)), "");
        for id in [2, -1] {
            assert_eq!(
                message(&graph(&[(id, "ghost")], false)),
                format!("/m: the object graph is damaged: object 0 has child 'ghost' = object {id}, but there are 2 objects")
            );
        }
    }

    #[test]
    fn a_signature_must_be_a_function() {
        assert_eq!(
            message(&graph(&[(1, "serving_default")], true)),
            "/m: the object graph is damaged: signature 'serving_default' is object 1, a None, not a function"
        );
    }

    #[test]
    fn names_are_quoted_as_python_does() {
        assert_eq!(py_str("a'b"), "\"a'b\"");
        assert_eq!(py_str("a\"'b"), "'a\"\\'b'");
        assert_eq!(py_str("x\ny"), "'x\\ny'");
    }
}
