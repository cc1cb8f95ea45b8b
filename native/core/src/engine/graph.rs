//! A graph or function body as the compiler sees it: nodes by name, each input resolved to a
//! function argument or a node's flat output index.
//!
//! In a GraphDef an input is `node` or `node:index`. Inside a function body it is an argument
//! name or `node:output_arg:index`, where the output argument is one of the op's (from the
//! SavedModel's stripped op list) or of the called library function's signature; this module
//! turns both into flat output indices.

use std::collections::HashMap;

use crate::engine::attrs::Attrs;
use crate::protos::{AttrValue, FunctionDef, NodeDef, OpDef};

/// Where a node input comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Src {
    /// Argument `i` of the function (or feed `i` of a graph plan).
    Arg(usize),
    /// Flat output `index` of the node named.
    Node(String, usize),
}

pub struct Node<'a> {
    pub def: &'a NodeDef,
    /// The node's attrs with its op's defaults filled in (exports strip default-valued attrs).
    pub attrs: HashMap<String, AttrValue>,
    pub inputs: Vec<Src>,
    pub control: Vec<String>,
}

/// The nodes of a graph or function body by name, in file order.
pub struct Body<'a> {
    /// `function "f"` or `the graph`, for errors.
    pub place: String,
    pub nodes: HashMap<&'a str, Node<'a>>,
    pub order: Vec<&'a str>,
    /// Argument names of a function (empty for a graph).
    pub args: Vec<String>,
    pub rets: Vec<Src>,
    pub control_rets: Vec<String>,
}

/// Op definitions by name: the stripped op list's, then the library functions' signatures.
pub type OpDefs = HashMap<String, OpDef>;

type R<T> = std::result::Result<T, String>;

/// The nodes of a top-level GraphDef.
pub fn graph_body<'a>(nodes: &'a [NodeDef], op_defs: &OpDefs) -> R<Body<'a>> {
    let mut body = Body {
        place: "the graph".into(),
        nodes: HashMap::new(),
        order: Vec::new(),
        args: Vec::new(),
        rets: Vec::new(),
        control_rets: Vec::new(),
    };
    for def in nodes {
        let mut inputs = Vec::new();
        let mut control = Vec::new();
        for text in &def.input {
            if let Some(name) = text.strip_prefix('^') {
                control.push(name.to_string());
            } else {
                inputs.push(parse_graph_ref(text).map_err(|e| node_place(&body, def, &e))?);
            }
        }
        insert(&mut body, def, inputs, control, op_defs)?;
    }
    Ok(body)
}

/// `node` or `node:index`.
pub fn parse_graph_ref(text: &str) -> R<Src> {
    match text.rsplit_once(':') {
        Some((name, index)) => index
            .parse()
            .map(|i| Src::Node(name.to_string(), i))
            .map_err(|_| format!("malformed tensor name {text:?}")),
        None => Ok(Src::Node(text.to_string(), 0)),
    }
}

/// The nodes of a function body with every input resolved to a flat index.
pub fn function_body<'a>(function: &'a FunctionDef, op_defs: &OpDefs) -> R<Body<'a>> {
    let signature = function
        .signature
        .as_ref()
        .ok_or("function without a signature")?;
    let mut body = Body {
        place: format!("function {:?}", signature.name),
        nodes: HashMap::new(),
        order: Vec::new(),
        args: signature.input_arg.iter().map(|a| a.name.clone()).collect(),
        rets: Vec::new(),
        control_rets: Vec::new(),
    };
    let by_name: HashMap<&str, &NodeDef> = function
        .node_def
        .iter()
        .map(|n| (n.name.as_str(), n))
        .collect();
    let resolve = |text: &str| resolve_body_ref(text, &body.args, &by_name, op_defs);
    let mut parsed = Vec::new();
    for def in &function.node_def {
        let mut inputs = Vec::new();
        let mut control = Vec::new();
        for text in &def.input {
            if let Some(name) = text.strip_prefix('^') {
                control.push(name.to_string());
            } else {
                inputs.push(resolve(text).map_err(|e| node_place(&body, def, &e))?);
            }
        }
        parsed.push((def, inputs, control));
    }
    let mut rets = Vec::new();
    for arg in &signature.output_arg {
        let text = function
            .ret
            .get(&arg.name)
            .ok_or_else(|| format!("{}: output {:?} has no ret", body.place, arg.name))?;
        rets.push(
            resolve(text).map_err(|e| format!("{}: output {:?}: {e}", body.place, arg.name))?,
        );
    }
    let mut control_rets: Vec<_> = function.control_ret.values().cloned().collect();
    control_rets.sort();
    for (def, inputs, control) in parsed {
        insert(&mut body, def, inputs, control, op_defs)?;
    }
    body.rets = rets;
    body.control_rets = control_rets;
    Ok(body)
}

fn resolve_body_ref(
    text: &str,
    args: &[String],
    nodes: &HashMap<&str, &NodeDef>,
    op_defs: &OpDefs,
) -> R<Src> {
    let mut parts = text.split(':');
    let name = parts.next().unwrap_or_default();
    match (parts.next(), parts.next(), parts.next()) {
        (None, _, _) => match args.iter().position(|a| a == name) {
            Some(i) => Ok(Src::Arg(i)),
            None if nodes.contains_key(name) => Ok(Src::Node(name.to_string(), 0)),
            None => Err(format!("input {text:?} is neither an argument nor a node")),
        },
        (Some(index), None, _) => index
            .parse()
            .map(|i| Src::Node(name.to_string(), i))
            .map_err(|_| format!("malformed input {text:?}")),
        (Some(arg), Some(index), None) => {
            let index: usize = index
                .parse()
                .map_err(|_| format!("malformed input {text:?}"))?;
            let def = nodes
                .get(name)
                .ok_or_else(|| format!("input {text:?} names no node of the function"))?;
            let offset =
                output_offset(def, arg, op_defs).map_err(|e| format!("input {text:?}: {e}"))?;
            Ok(Src::Node(name.to_string(), offset + index))
        }
        _ => Err(format!("malformed input {text:?}")),
    }
}

/// The flat index of output argument `arg`'s first tensor on node `def`. An op missing from
/// the model's op list (TensorFlow leaves some out of `stripped_op_list`) is taken to have its
/// outputs in one argument, as single-output ops, nearly all of them, do.
fn output_offset(def: &NodeDef, arg: &str, op_defs: &OpDefs) -> R<usize> {
    let Some(op) = op_defs.get(&def.op) else {
        return Ok(0);
    };
    let attrs = with_defaults(def, Some(op));
    let attrs = Attrs::new(&attrs);
    let mut offset = 0;
    for out in &op.output_arg {
        if out.name == arg {
            return Ok(offset);
        }
        offset += arg_length(out, &attrs)?;
    }
    Err(format!("op {} has no output {arg:?}", def.op))
}

/// How many outputs node `def` has, from its op definition and attrs; None when the model's
/// op list does not define the op.
pub fn output_count(def: &NodeDef, op_defs: &OpDefs) -> Option<R<usize>> {
    let op = op_defs.get(&def.op)?;
    let attrs = with_defaults(def, Some(op));
    let attrs = Attrs::new(&attrs);
    Some(
        op.output_arg
            .iter()
            .map(|arg| arg_length(arg, &attrs))
            .sum(),
    )
}

/// How many tensors an op argument stands for, given the node's attrs.
pub fn arg_length(arg: &crate::protos::op_def::ArgDef, attrs: &Attrs) -> R<usize> {
    if !arg.number_attr.is_empty() {
        let n = attrs.int(&arg.number_attr)?;
        usize::try_from(n).map_err(|_| format!("attr {:?} is negative", arg.number_attr))
    } else if !arg.type_list_attr.is_empty() {
        Ok(attrs.dtype_numbers(&arg.type_list_attr)?.len())
    } else {
        Ok(1)
    }
}

/// A node's attrs with the defaults of its op definition filled in where absent.
pub fn with_defaults(def: &NodeDef, op: Option<&OpDef>) -> HashMap<String, AttrValue> {
    let mut attrs = def.attr.clone();
    for attr in op.map(|o| o.attr.as_slice()).unwrap_or_default() {
        if let Some(default) = &attr.default_value {
            attrs
                .entry(attr.name.clone())
                .or_insert_with(|| default.clone());
        }
    }
    attrs
}

fn insert<'a>(
    body: &mut Body<'a>,
    def: &'a NodeDef,
    inputs: Vec<Src>,
    control: Vec<String>,
    op_defs: &OpDefs,
) -> R<()> {
    let attrs = with_defaults(def, op_defs.get(&def.op));
    if body.nodes.contains_key(def.name.as_str()) {
        return Err(format!(
            "{}: two nodes are named {:?}",
            body.place, def.name
        ));
    }
    body.order.push(&def.name);
    body.nodes.insert(
        &def.name,
        Node {
            def,
            attrs,
            inputs,
            control,
        },
    );
    Ok(())
}

fn node_place(body: &Body, def: &NodeDef, detail: &str) -> String {
    format!(
        "{}: node {:?} (op {}): {detail}",
        body.place, def.name, def.op
    )
}
