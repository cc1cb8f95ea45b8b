//! What running kernels share: the function library (calls, branches, loop bodies), the
//! model's resources (variables and tables by container and shared name), and how deep the
//! current call chain is.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult};
use crate::engine::library::Library;
use crate::engine::plan::Plan;
use crate::engine::profile::Profile;
use crate::engine::value::{Resource, Value};
use crate::error::Error;

/// Calls nested deeper than this are an error naming the chain (a recursive model, or one
/// built to exhaust the stack), as the numpy engine's `max_function_depth` default.
pub const MAX_CALL_DEPTH: usize = 64;

pub struct RunContext<'a> {
    pub library: &'a Library,
    pub resources: &'a ResourceManager,
    /// The innermost function being called (None at the top level); the chain leads outwards.
    pub calls: Option<&'a CallLink<'a>>,
    pub files: &'a FileAccess,
    /// When the caller's time limit runs out; checked per function call and loop iteration.
    pub deadline: Option<Instant>,
    /// Where each step's time is charged, when the caller profiles.
    pub profile: Option<&'a Profile>,
}

/// One function call in progress, linked to the call it was made from. The links live on the
/// stack of the calls themselves, so entering a call (once per loop iteration in a While)
/// allocates nothing.
pub struct CallLink<'a> {
    pub function: &'a str,
    pub outer: Option<&'a CallLink<'a>>,
    /// How many calls deep this one is (1 for a call from the top level).
    pub depth: usize,
}

impl<'a> RunContext<'a> {
    /// Runs library function `name` on `inputs` in a context one call deeper.
    pub fn call(&self, name: &str, inputs: &[Value]) -> KResult {
        self.call_plan(name, || self.library.plan(name), inputs)
    }

    /// Runs function `name`, whose plan `plan` supplies (a kernel's cached one, or the
    /// library's), on `inputs` in a context one call deeper. The time limit and the depth are
    /// checked before the plan is asked for, as for any call.
    pub fn call_plan(
        &self,
        name: &str,
        plan: impl FnOnce() -> KResult<Arc<Plan>>,
        inputs: &[Value],
    ) -> KResult {
        self.check_deadline(|| format!("call of function {name:?}"))?;
        let depth = self.calls.map_or(0, |c| c.depth);
        if depth >= MAX_CALL_DEPTH {
            let chain = self.call_chain().join(" -> ");
            return Err(fail(format!(
                "function calls nest more than {MAX_CALL_DEPTH} deep ({chain} -> {name})"
            )));
        }
        let plan = plan()?;
        let link = CallLink {
            function: plan.name(),
            outer: self.calls,
            depth: depth + 1,
        };
        let inner = RunContext {
            library: self.library,
            resources: self.resources,
            calls: Some(&link),
            files: self.files,
            deadline: self.deadline,
            profile: self.profile,
        };
        plan.run(&inner, inputs)
    }

    /// The functions being called, outermost first.
    pub fn call_chain(&self) -> Vec<&str> {
        let mut chain = Vec::new();
        let mut link = self.calls;
        while let Some(l) = link {
            chain.push(l.function);
            link = l.outer;
        }
        chain.reverse();
        chain
    }

    /// An error if the caller's time limit has passed; `what` names where it was noticed (only
    /// written out then: this runs on every call and loop iteration).
    pub fn check_deadline(&self, what: impl FnOnce() -> String) -> KResult<()> {
        match self.deadline {
            Some(deadline) if Instant::now() >= deadline => Err(Error::DeadlineExceeded {
                detail: format!("time limit exceeded at {}", what()),
            }),
            _ => Ok(()),
        }
    }
}

/// Where file-system ops (RestoreV2, ReadFile, table initializers from text files) may read
/// and write: inside the model's directory and the caller's output directory, unless the
/// caller allowed any file.
#[derive(Clone, Debug, Default)]
pub struct FileAccess {
    pub read_roots: Vec<PathBuf>,
    pub write_roots: Vec<PathBuf>,
    pub unrestricted: bool,
}

impl FileAccess {
    /// `path` if a file-system op may read it, else an error naming it.
    pub fn readable(&self, path: &str, what: &str) -> KResult<PathBuf> {
        self.check(path, &self.read_roots, what, "read")
    }

    pub fn writable(&self, path: &str, what: &str) -> KResult<PathBuf> {
        self.check(path, &self.write_roots, what, "write")
    }

    fn check(&self, path: &str, roots: &[PathBuf], what: &str, verb: &str) -> KResult<PathBuf> {
        let given = PathBuf::from(path);
        if self.unrestricted {
            return Ok(given);
        }
        let refused = |detail: String| Error::FileAccess { detail };
        if path.contains('\0') {
            return Err(refused(format!(
                "{what} cannot resolve the path {path:?}: embedded null byte"
            )));
        }
        if let Err(err) = given.canonicalize() {
            if err.kind() != std::io::ErrorKind::NotFound {
                return Err(refused(format!(
                    "{what} cannot resolve the path {path:?}: {err}"
                )));
            }
        }
        let resolved = resolve(&given);
        if roots.iter().any(|root| resolved.starts_with(resolve(root))) {
            return Ok(given);
        }
        Err(refused(format!(
            "{what} may not {verb} {path:?}: it is outside the model's directory \
             (allow file access to let the model use any file)"
        )))
    }
}

/// `path` with symbolic links and `..` resolved as far as it exists (the rest appended).
fn resolve(path: &std::path::Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.as_os_str().is_empty() {
        if let Ok(found) = existing.canonicalize() {
            return rest.iter().rev().fold(found, |acc, part| acc.join(part));
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    path.to_path_buf()
}

/// Resources by (container, shared name): made by their handle ops on first use, or bound at
/// load to the variables restored from the checkpoint.
#[derive(Default)]
pub struct ResourceManager {
    by_name: Mutex<HashMap<(String, String), Resource>>,
}

impl ResourceManager {
    /// The variable named (container, shared_name), made uninitialized if it does not exist.
    pub fn variable(&self, container: &str, shared_name: &str, dtype: Option<DType>) -> Resource {
        self.get_or_insert(container, shared_name, || {
            Resource::variable(display_name(container, shared_name), dtype)
        })
    }

    /// The resource named (container, shared_name), made by `make` if it does not exist.
    pub fn get_or_insert(
        &self,
        container: &str,
        shared_name: &str,
        make: impl FnOnce() -> Resource,
    ) -> Resource {
        let mut map = match self.by_name.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry((container.to_string(), shared_name.to_string()))
            .or_insert_with(make)
            .clone()
    }

    /// Makes (container, shared_name) name `resource` (a variable restored at load).
    pub fn bind(&self, container: &str, shared_name: &str, resource: Resource) {
        let mut map = match self.by_name.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.insert((container.to_string(), shared_name.to_string()), resource);
    }

    /// Every variable by shared name, sorted (what a TensorFlow 1 model's variables are).
    pub fn variables(&self) -> Vec<(String, Resource)> {
        let map = match self.by_name.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut found: Vec<_> = map
            .iter()
            .filter(|(_, r)| r.as_variable().is_some())
            .map(|((_, name), r)| (name.clone(), r.clone()))
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
    }
}

fn display_name(container: &str, shared_name: &str) -> String {
    if container.is_empty() {
        shared_name.to_string()
    } else {
        format!("{container}/{shared_name}")
    }
}
