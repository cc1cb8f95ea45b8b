//! Typed access to a node's attributes, with errors that name the attribute and what it held.
//! Kernels read their attrs once, when a plan is compiled, never per call.

use std::collections::HashMap;

use crate::dtype::DType;
use crate::protos::attr_value::Value as A;
use crate::protos::{AttrValue, NameAttrList, TensorShapeProto};
use crate::tensor::Tensor;
use crate::tensor_proto::tensor_from_proto;

/// The attrs of one node; errors are plain messages, which the compiler prefixes with the node.
pub struct Attrs<'a> {
    map: &'a HashMap<String, AttrValue>,
}

type R<T> = std::result::Result<T, String>;

impl<'a> Attrs<'a> {
    pub fn new(map: &'a HashMap<String, AttrValue>) -> Self {
        Self { map }
    }

    /// The underlying map (to build the attrs of a derived node).
    pub fn map(&self) -> &'a HashMap<String, AttrValue> {
        self.map
    }

    pub fn has(&self, name: &str) -> bool {
        self.map.get(name).and_then(|a| a.value.as_ref()).is_some()
    }

    fn value(&self, name: &str) -> R<&'a A> {
        self.map
            .get(name)
            .and_then(|a| a.value.as_ref())
            .ok_or_else(|| format!("attr {name:?} is missing"))
    }

    fn wrong<T>(name: &str, want: &str, found: &A) -> R<T> {
        Err(format!(
            "attr {name:?} should be {want}, found {}",
            kind(found)
        ))
    }

    pub fn int(&self, name: &str) -> R<i64> {
        match self.value(name)? {
            A::I(i) => Ok(*i),
            other => Self::wrong(name, "an int", other),
        }
    }

    pub fn int_or(&self, name: &str, default: i64) -> R<i64> {
        if self.has(name) {
            self.int(name)
        } else {
            Ok(default)
        }
    }

    pub fn float(&self, name: &str) -> R<f32> {
        match self.value(name)? {
            A::F(f) => Ok(*f),
            other => Self::wrong(name, "a float", other),
        }
    }

    pub fn float_or(&self, name: &str, default: f32) -> R<f32> {
        if self.has(name) {
            self.float(name)
        } else {
            Ok(default)
        }
    }

    pub fn bool(&self, name: &str) -> R<bool> {
        match self.value(name)? {
            A::B(b) => Ok(*b),
            other => Self::wrong(name, "a bool", other),
        }
    }

    pub fn bool_or(&self, name: &str, default: bool) -> R<bool> {
        if self.has(name) {
            self.bool(name)
        } else {
            Ok(default)
        }
    }

    pub fn bytes(&self, name: &str) -> R<&'a [u8]> {
        match self.value(name)? {
            A::S(s) => Ok(s),
            other => Self::wrong(name, "a string", other),
        }
    }

    /// A string attr as text (names, padding, data formats); invalid UTF-8 is an error.
    pub fn string(&self, name: &str) -> R<&'a str> {
        std::str::from_utf8(self.bytes(name)?).map_err(|_| format!("attr {name:?} is not UTF-8"))
    }

    pub fn string_or(&self, name: &str, default: &'a str) -> R<&'a str> {
        if self.has(name) {
            self.string(name)
        } else {
            Ok(default)
        }
    }

    /// A dtype attr; a DataType this engine has no tensors of is an error.
    pub fn dtype(&self, name: &str) -> R<DType> {
        match self.value(name)? {
            A::Type(t) => DType::from_proto(*t)
                .ok_or_else(|| format!("attr {name:?}: DataType {t} is not supported")),
            other => Self::wrong(name, "a type", other),
        }
    }

    /// A dtype attr's raw DataType number (resource and variant types included).
    pub fn dtype_number(&self, name: &str) -> R<i32> {
        match self.value(name)? {
            A::Type(t) => Ok(*t),
            other => Self::wrong(name, "a type", other),
        }
    }

    pub fn ints(&self, name: &str) -> R<Vec<i64>> {
        match self.value(name)? {
            A::List(l) => Ok(l.i.clone()),
            other => Self::wrong(name, "a list of ints", other),
        }
    }

    pub fn ints_or(&self, name: &str, default: &[i64]) -> R<Vec<i64>> {
        if self.has(name) {
            self.ints(name)
        } else {
            Ok(default.to_vec())
        }
    }

    /// A list-of-strings attr as text.
    pub fn strings(&self, name: &str) -> R<Vec<String>> {
        match self.value(name)? {
            A::List(l) => l
                .s
                .iter()
                .map(|b| {
                    String::from_utf8(b.clone()).map_err(|_| format!("attr {name:?} is not UTF-8"))
                })
                .collect(),
            other => Self::wrong(name, "a list of strings", other),
        }
    }

    pub fn floats(&self, name: &str) -> R<Vec<f32>> {
        match self.value(name)? {
            A::List(l) => Ok(l.f.clone()),
            other => Self::wrong(name, "a list of floats", other),
        }
    }

    /// A list-of-types attr as raw DataType numbers (resource and variant types included).
    pub fn dtype_numbers(&self, name: &str) -> R<Vec<i32>> {
        match self.value(name)? {
            A::List(l) => Ok(l.r#type.clone()),
            other => Self::wrong(name, "a list of types", other),
        }
    }

    pub fn shape(&self, name: &str) -> R<&'a TensorShapeProto> {
        match self.value(name)? {
            A::Shape(s) => Ok(s),
            other => Self::wrong(name, "a shape", other),
        }
    }

    /// A shape attr as dims (-1 unknown), None for an unknown rank.
    pub fn partial_shape(&self, name: &str) -> R<Option<Vec<i64>>> {
        let shape = self.shape(name)?;
        Ok((!shape.unknown_rank).then(|| shape.dim.iter().map(|d| d.size).collect()))
    }

    pub fn tensor(&self, name: &str) -> R<Tensor> {
        match self.value(name)? {
            A::Tensor(t) => {
                tensor_from_proto(t, &format!("attr {name:?}")).map_err(|e| e.to_string())
            }
            other => Self::wrong(name, "a tensor", other),
        }
    }

    pub fn func(&self, name: &str) -> R<&'a NameAttrList> {
        match self.value(name)? {
            A::Func(f) => Ok(f),
            other => Self::wrong(name, "a function", other),
        }
    }

    pub fn funcs(&self, name: &str) -> R<&'a [NameAttrList]> {
        match self.value(name)? {
            A::List(l) => Ok(&l.func),
            other => Self::wrong(name, "a list of functions", other),
        }
    }

    /// Every function an attr names (func and list-of-func attrs), for walking the call graph.
    pub fn all_functions(&self) -> Vec<&'a str> {
        let mut names: Vec<&str> = Vec::new();
        for attr in self.map.values() {
            match &attr.value {
                Some(A::Func(f)) => names.push(&f.name),
                Some(A::List(l)) => names.extend(l.func.iter().map(|f| f.name.as_str())),
                _ => {}
            }
        }
        names
    }
}

fn kind(value: &A) -> &'static str {
    match value {
        A::S(_) => "a string",
        A::I(_) => "an int",
        A::F(_) => "a float",
        A::B(_) => "a bool",
        A::Type(_) => "a type",
        A::Shape(_) => "a shape",
        A::Tensor(_) => "a tensor",
        A::List(_) => "a list",
        A::Func(_) => "a function",
        A::Placeholder(_) => "a placeholder",
    }
}
