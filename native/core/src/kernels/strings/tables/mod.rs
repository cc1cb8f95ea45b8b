//! Lookup-table ops: the tables behind `tf.lookup.StaticHashTable`, `MutableHashTable` and
//! Keras' StringLookup, IntegerLookup and TextVectorization layers.
//!
//! A table op finds or makes its table in the run's resources by (container, shared name),
//! so every function and signature naming the same table shares it and it outlives a call;
//! without a shared name a table belongs to its node (TensorFlow's kernel-private tables). A
//! table's key and value dtypes are fixed when it is made and every op is checked against them.

mod table;
mod text_file;

use std::sync::Arc;

use table::{Keys, Kind, Table};

use super::Made;
use crate::dtype::DType;
use crate::engine::kernel::{
    boxed, fail, one, resource_input, tensor_input, KResult, NodeSpec, Registry,
};
use crate::engine::value::{Resource, ResourceKind};
use crate::engine::Value;
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add_stateful("HashTableV2", |n| make_table(n, Kind::Static));
    r.add_stateful("MutableHashTableV2", |n| make_table(n, Kind::Mutable));
    r.add_stateful("LookupTableFindV2", find);
    r.add_stateful("LookupTableSizeV2", size);
    r.add_stateful("LookupTableExportV2", export);
    r.add_stateful("LookupTableImportV2", import);
    r.add_stateful("InitializeTableV2", initialize);
    r.add_stateful("LookupTableInsertV2", insert);
    r.add_stateful("LookupTableRemoveV2", remove);
    r.add_stateful("InitializeTableFromTextFileV2", text_file::initialize);
}

/// Whether TensorFlow has a table kernel of `kind` for these key and value dtypes.
fn supported(kind: Kind, key: DType, value: DType) -> bool {
    use DType::*;
    let hash = match key {
        String => matches!(value, String | Int32 | Int64 | Float32 | Float64 | Bool),
        Int32 => matches!(value, String | Int32 | Float32 | Float64),
        Int64 => matches!(value, String | Int32 | Int64 | Float32 | Float64),
        _ => false,
    };
    hash && !(kind == Kind::Mutable && value == String && matches!(key, String | Int32))
}

fn make_table(node: &NodeSpec, kind: Kind) -> Made {
    let a = &node.attrs;
    let key_dtype = a.dtype("key_dtype")?;
    let value_dtype = a.dtype("value_dtype")?;
    if !supported(kind, key_dtype, value_dtype) {
        return Err(format!(
            "no {} table of {key_dtype} keys and {value_dtype} values",
            if kind == Kind::Static {
                "hash"
            } else {
                "mutable hash"
            }
        ));
    }
    let container = a.string_or("container", "")?.to_string();
    let shared = a.string_or("shared_name", "")?;
    let shared = match (shared, a.bool_or("use_node_name_sharing", false)?) {
        ("", true) => node.name.to_string(),
        ("", false) => format!("{} (unshared)", node.name),
        (name, _) => name.to_string(),
    };
    Ok(boxed(move |ctx, _| {
        let handle = ctx.resources.get_or_insert(&container, &shared, || {
            let name = if container.is_empty() {
                shared.clone()
            } else {
                format!("{container}/{shared}")
            };
            let table = Table::new(name.clone(), kind, key_dtype, value_dtype);
            Resource::other(name, Box::new(table))
        });
        with_table(&handle, "table op", |t| {
            if (t.kind, t.key_dtype, t.value_dtype) == (kind, key_dtype, value_dtype) {
                Ok(())
            } else {
                Err(fail(format!(
                    "resource {:?} is a table of {} to {}, not the {key_dtype} to {value_dtype} \
                     table this op makes",
                    t.name, t.key_dtype, t.value_dtype
                )))
            }
        })?;
        Ok(vec![Value::Resource(handle)])
    }))
}

/// Runs `f` on the table behind `handle`, locked for the call.
fn with_table<R>(
    handle: &Resource,
    op: &str,
    f: impl FnOnce(&mut Table) -> KResult<R>,
) -> KResult<R> {
    let ResourceKind::Other(state) = &handle.0.kind else {
        return Err(fail(format!(
            "{op}: resource {} is a variable, not a lookup table",
            handle.name()
        )));
    };
    let mut state = match state.lock() {
        Ok(state) => state,
        Err(poisoned) => poisoned.into_inner(),
    };
    let table = state.downcast_mut::<Table>().ok_or_else(|| {
        fail(format!(
            "{op}: resource {} is not a lookup table",
            handle.name()
        ))
    })?;
    f(table)
}

/// Runs `f` on the table of input 0.
fn on_table<R>(inputs: &[Value], op: &str, f: impl FnOnce(&mut Table) -> KResult<R>) -> KResult<R> {
    with_table(resource_input(inputs, 0)?, op, f)
}

fn mutable_only(t: &Table, op: &str) -> KResult<()> {
    match t.kind {
        Kind::Mutable => Ok(()),
        Kind::Static => Err(fail(format!(
            "{op}: table {:?} is a HashTable, which only its initializer fills",
            t.name
        ))),
    }
}

/// Values for `keys`: the table's value dtype and the keys' shape.
fn check_values(t: &Table, op: &str, keys: &Tensor, values: &Tensor) -> KResult<()> {
    if values.dtype() != t.value_dtype {
        return Err(t.mismatch(op, "values", values.dtype()));
    }
    if values.shape() != keys.shape() {
        return Err(fail(format!(
            "{op}: expected shape {:?} for the values of {} keys, got {:?}",
            keys.shape(),
            keys.len(),
            values.shape()
        )));
    }
    Ok(())
}

fn find(_: &NodeSpec) -> Made {
    const OP: &str = "LookupTableFindV2";
    Ok(boxed(|_, inputs| {
        let keys = tensor_input(inputs, 1)?;
        let default = tensor_input(inputs, 2)?;
        let values = on_table(inputs, OP, |t| {
            let k = t.keys_of(&keys, OP)?;
            if default.dtype() != t.value_dtype {
                return Err(t.mismatch(OP, "default value", default.dtype()));
            }
            if default.rank() != 0 && default.shape() != keys.shape() {
                return Err(fail(format!(
                    "{OP}: expected shape [] or {:?} for the default value, got {:?}",
                    keys.shape(),
                    default.shape()
                )));
            }
            t.find(&k, default.storage())
        })?;
        one(crate::kernels::util::make(keys.shape().to_vec(), values)?)
    }))
}

fn size(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let n = on_table(inputs, "LookupTableSizeV2", |t| Ok(t.size()))?;
        one(Tensor::scalar(n as i64))
    }))
}

fn export(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let (keys, values) = on_table(inputs, "LookupTableExportV2", |t| t.export())?;
        Ok(vec![Value::tensor(keys), Value::tensor(values)])
    }))
}

/// Fills a static table once: later initializations with as many entries are accepted (and
/// change nothing), others fail, as TensorFlow compares only sizes.
fn initialize_static(t: &mut Table, op: &str, keys: &Keys, values: &Tensor) -> KResult<()> {
    if t.initialized {
        return if keys.len() == t.size() {
            Ok(())
        } else {
            Err(fail(format!(
                "{op}: table {:?} was already initialized with different data",
                t.name
            )))
        };
    }
    if keys.len() == 0 {
        return Err(fail(format!(
            "{op}: keys and values cannot be empty tensors"
        )));
    }
    t.insert(keys, values.storage(), false)?;
    t.initialized = true;
    Ok(())
}

/// An initializer for a HashTable; for a mutable table, its new contents.
fn import(_: &NodeSpec) -> Made {
    const OP: &str = "LookupTableImportV2";
    Ok(boxed(|_, inputs| {
        let keys = tensor_input(inputs, 1)?;
        let values = tensor_input(inputs, 2)?;
        on_table(inputs, OP, |t| {
            let k = t.keys_of(&keys, OP)?;
            check_values(t, OP, &keys, &values)?;
            match t.kind {
                Kind::Static => initialize_static(t, OP, &k, &values),
                Kind::Mutable => {
                    t.clear();
                    t.insert(&k, values.storage(), true)
                }
            }
        })?;
        Ok(Vec::new())
    }))
}

fn initialize(_: &NodeSpec) -> Made {
    const OP: &str = "InitializeTableV2";
    Ok(boxed(|_, inputs| {
        let keys = tensor_input(inputs, 1)?;
        let values = tensor_input(inputs, 2)?;
        if keys.rank() != 1 {
            return Err(fail(format!(
                "{OP}: keys must be a vector, got shape {:?}",
                keys.shape()
            )));
        }
        on_table(inputs, OP, |t| {
            if t.kind != Kind::Static {
                return Err(fail(format!(
                    "{OP}: table {:?} is not initializable",
                    t.name
                )));
            }
            let k = t.keys_of(&keys, OP)?;
            check_values(t, OP, &keys, &values)?;
            initialize_static(t, OP, &k, &values)
        })?;
        Ok(Vec::new())
    }))
}

fn insert(_: &NodeSpec) -> Made {
    const OP: &str = "LookupTableInsertV2";
    Ok(boxed(|_, inputs| {
        let keys = tensor_input(inputs, 1)?;
        let values = tensor_input(inputs, 2)?;
        on_table(inputs, OP, |t| {
            mutable_only(t, OP)?;
            let k = t.keys_of(&keys, OP)?;
            check_values(t, OP, &keys, &values)?;
            t.insert(&k, values.storage(), true)
        })?;
        Ok(Vec::new())
    }))
}

fn remove(_: &NodeSpec) -> Made {
    const OP: &str = "LookupTableRemoveV2";
    Ok(boxed(|_, inputs| {
        let keys: Arc<Tensor> = tensor_input(inputs, 1)?;
        on_table(inputs, OP, |t| {
            mutable_only(t, OP)?;
            let k = t.keys_of(&keys, OP)?;
            t.remove(&k);
            Ok(())
        })?;
        Ok(Vec::new())
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::engine::attrs::Attrs;
    use crate::engine::context::FileAccess;
    use crate::engine::library::Library;
    use crate::protos::attr_value::Value as A;
    use crate::protos::AttrValue;

    fn attrs(pairs: &[(&str, A)]) -> HashMap<String, AttrValue> {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    AttrValue {
                        value: Some(v.clone()),
                    },
                )
            })
            .collect()
    }

    fn kernel(
        name: &str,
        op: &str,
        map: &HashMap<String, AttrValue>,
    ) -> Box<dyn crate::engine::Kernel> {
        let spec = NodeSpec {
            name,
            op,
            attrs: Attrs::new(map),
            num_inputs: 0,
        };
        let info = crate::kernels::registry();
        (info.get(op).unwrap().factory)(&spec).unwrap_or_else(|e| panic!("{e}"))
    }

    fn strings(items: &[&str]) -> Value {
        Value::tensor(Tensor::strings(
            vec![items.len()],
            items.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ))
    }

    #[test]
    fn tables_are_shared_by_name_and_checked_by_dtype() {
        let library = Library::new(None, &[], crate::kernels::registry(), FileAccess::default());
        let ctx = library.context();
        let table_attrs = |shared: &str| {
            attrs(&[
                ("key_dtype", A::Type(DType::String.to_proto())),
                ("value_dtype", A::Type(DType::Int64.to_proto())),
                ("shared_name", A::S(shared.as_bytes().to_vec())),
            ])
        };
        let shared = table_attrs("words");
        let unshared = table_attrs("");
        let first = kernel("a", "HashTableV2", &shared).run(&ctx, &[]).unwrap();
        let second = kernel("b", "HashTableV2", &shared).run(&ctx, &[]).unwrap();
        let own = kernel("c", "HashTableV2", &unshared)
            .run(&ctx, &[])
            .unwrap();
        let empty = attrs(&[]);
        let init = kernel("init", "LookupTableImportV2", &empty);
        let keys = strings(&["x", "y"]);
        let values = Value::tensor(Tensor::from_vec(vec![2], vec![5i64, 6]));
        init.run(&ctx, &[first[0].clone(), keys, values]).unwrap();

        let find = kernel("find", "LookupTableFindV2", &empty);
        let default = Value::tensor(Tensor::scalar(-1i64));
        let probe = strings(&["y", "q"]);
        let found = find
            .run(&ctx, &[second[0].clone(), probe.clone(), default.clone()])
            .unwrap();
        let Value::Tensor(found) = &found[0] else {
            panic!()
        };
        assert_eq!(found.values::<i64>().unwrap(), [6, -1]);
        // The unshared table is another, not yet initialized.
        assert!(find
            .run(&ctx, &[own[0].clone(), probe.clone(), default])
            .is_err());
        // A default of the wrong dtype is an error, not a panic.
        let wrong = Value::tensor(Tensor::scalar(0.5f32));
        assert!(find.run(&ctx, &[first[0].clone(), probe, wrong]).is_err());
        let size = kernel("size", "LookupTableSizeV2", &empty)
            .run(&ctx, &[first[0].clone()])
            .unwrap();
        let Value::Tensor(size) = &size[0] else {
            panic!()
        };
        assert_eq!(size.values::<i64>().unwrap(), [2]);
        // A static table refuses inserts.
        let insert = kernel("insert", "LookupTableInsertV2", &empty);
        let more = Value::tensor(Tensor::from_vec(vec![1], vec![7i64]));
        assert!(insert
            .run(&ctx, &[first[0].clone(), strings(&["z"]), more])
            .is_err());
    }
}
