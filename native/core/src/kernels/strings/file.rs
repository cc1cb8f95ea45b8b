//! ReadFile: a file's contents as a scalar string, read only where the run's file-access policy
//! allows (a model's own assets, by default), and only from a regular file (a FIFO in place of
//! an asset would block).

use std::path::Path;

use super::{scalar_bytes, Made};
use crate::engine::context::RunContext;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec, Registry};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add_stateful("ReadFile", read_file);
}

/// The contents of the file named by scalar string `filename`, for op `op`.
pub(super) fn read_named(ctx: &RunContext, filename: &Tensor, op: &str) -> KResult<Vec<u8>> {
    let name = scalar_bytes(filename, "filename")?;
    let name = String::from_utf8_lossy(name);
    let path = ctx.files.readable(&name, op)?;
    crate::file::read_file(Path::new(&path)).map_err(|e| fail(format!("{op}: {e}")))
}

fn read_file(_: &NodeSpec) -> Made {
    Ok(boxed(|ctx, inputs| {
        let contents = read_named(ctx, &*tensor_input(inputs, 0)?, "ReadFile")?;
        one(Tensor::strings(Vec::new(), vec![contents]))
    }))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::engine::attrs::Attrs;
    use crate::engine::context::FileAccess;
    use crate::engine::library::Library;
    use crate::engine::Value;

    fn reader() -> Box<dyn crate::engine::Kernel> {
        let map = HashMap::new();
        let spec = NodeSpec {
            name: "read",
            op: "ReadFile",
            attrs: Attrs::new(&map),
            num_inputs: 1,
        };
        read_file(&spec).unwrap()
    }

    fn path(p: &std::path::Path) -> Value {
        let name = p.to_string_lossy().into_owned().into_bytes();
        Value::tensor(Tensor::strings(Vec::new(), vec![name]))
    }

    #[test]
    fn files_inside_the_roots_are_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), b"1.5 -2\n").unwrap();
        let files = FileAccess {
            read_roots: vec![dir.path().to_path_buf()],
            ..FileAccess::default()
        };
        let library = Library::new(None, &[], crate::kernels::registry(), files);
        let ctx = library.context();
        let out = reader()
            .run(&ctx, &[path(&dir.path().join("a.txt"))])
            .unwrap();
        let Value::Tensor(t) = &out[0] else { panic!() };
        assert_eq!(t.string_values().unwrap(), [b"1.5 -2\n".to_vec()]);
        let missing = dir.path().join("b.txt");
        let err = reader()
            .run(&ctx, &[path(&missing)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("b.txt"), "{err}");
    }

    #[test]
    fn files_outside_the_model_are_refused_by_name() {
        let library = Library::new(None, &[], crate::kernels::registry(), FileAccess::default());
        let ctx = library.context();
        let read = reader();
        let name = Value::tensor(Tensor::strings(Vec::new(), vec![b"/etc/hostname".to_vec()]));
        let err = read.run(&ctx, &[name]).unwrap_err().to_string();
        assert!(err.contains("/etc/hostname"), "{err}");
        let vector = Value::tensor(Tensor::strings(vec![1], vec![b"x".to_vec()]));
        assert!(read.run(&ctx, &[vector]).is_err());
    }
}
