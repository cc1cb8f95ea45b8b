//! The lookup table a table handle points at: keys (int32, int64 or string) mapped to one
//! scalar value each, kept as a key index into a value column so a lookup is one hash probe
//! per key and an export is a copy of the columns.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::dtype::DType;
use crate::engine::kernel::{fail, KResult};
use crate::tensor::{Storage, Tensor};

/// How a table may be filled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `HashTableV2`: once, by an initializer; unreadable before.
    Static,
    /// `MutableHashTableV2`: inserts, removes and imports at any time.
    Mutable,
}

/// A fast hash for table keys (lookups are the hot loop of Keras' lookup layers): multiply
/// and rotate per word, as rustc's FxHash. Keys come from the model and its inputs; a caller
/// who crafts colliding keys only slows their own lookups.
#[derive(Default, Clone, Copy)]
struct KeyHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl KeyHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let mut last = [0u8; 8];
        let rest = chunks.remainder();
        last[..rest.len()].copy_from_slice(rest);
        self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 56));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Map<K> = HashMap<K, usize, BuildHasherDefault<KeyHasher>>;

/// Keys by slot: integer keys (int32 widened) or byte strings.
enum Index {
    Int(Map<i64>),
    Bytes(Map<Vec<u8>>),
}

/// The keys an op passes, in the form the index probes.
pub enum Keys<'a> {
    Int32(&'a [i32]),
    Int64(&'a [i64]),
    Bytes(&'a [Vec<u8>]),
}

impl Keys<'_> {
    pub fn len(&self) -> usize {
        match self {
            Keys::Int32(v) => v.len(),
            Keys::Int64(v) => v.len(),
            Keys::Bytes(v) => v.len(),
        }
    }

    /// Integer key `i` (int32 widened); None for string keys.
    fn int(&self, i: usize) -> Option<i64> {
        match self {
            Keys::Int32(v) => Some(i64::from(v[i])),
            Keys::Int64(v) => Some(v[i]),
            Keys::Bytes(_) => None,
        }
    }
}

pub struct Table {
    pub name: String,
    pub kind: Kind,
    pub key_dtype: DType,
    pub value_dtype: DType,
    /// Static tables only: whether an initializer has filled it.
    pub initialized: bool,
    index: Index,
    /// The key and value of each slot.
    keys: Storage,
    values: Storage,
}

/// An empty column of `dtype`.
fn column(dtype: DType) -> Storage {
    match dtype {
        DType::String => Storage::String(Vec::new()),
        DType::Int32 => Storage::Int32(Vec::new()),
        DType::Int64 => Storage::Int64(Vec::new()),
        DType::Float32 => Storage::Float32(Vec::new()),
        DType::Float64 => Storage::Float64(Vec::new()),
        _ => Storage::Bool(Vec::new()),
    }
}

/// Applies `$body` to the same-typed buffers `$a` (of the table) and `$b` (of an op's input),
/// or fails naming the dtypes; `$wrap` rebuilds a storage of the result where one is wanted.
macro_rules! paired {
    ($a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            (Storage::String($x), Storage::String($y)) => $body,
            (Storage::Int32($x), Storage::Int32($y)) => $body,
            (Storage::Int64($x), Storage::Int64($y)) => $body,
            (Storage::Float32($x), Storage::Float32($y)) => $body,
            (Storage::Float64($x), Storage::Float64($y)) => $body,
            (Storage::Bool($x), Storage::Bool($y)) => $body,
            (a, b) => {
                return Err(fail(format!(
                    "table values are {}, got {}",
                    a.dtype(),
                    b.dtype()
                )))
            }
        }
    };
}

impl Table {
    pub fn new(name: String, kind: Kind, key_dtype: DType, value_dtype: DType) -> Self {
        Self {
            name,
            kind,
            key_dtype,
            value_dtype,
            initialized: kind == Kind::Mutable,
            index: match key_dtype {
                DType::String => Index::Bytes(Map::default()),
                _ => Index::Int(Map::default()),
            },
            keys: column(key_dtype),
            values: column(value_dtype),
        }
    }

    /// The number of entries (0 for a static table not yet initialized).
    pub fn size(&self) -> usize {
        if self.initialized {
            self.values.len()
        } else {
            0
        }
    }

    /// The keys of tensor `t`, which must have the table's key dtype.
    pub fn keys_of<'a>(&self, t: &'a Tensor, op: &str) -> KResult<Keys<'a>> {
        if t.dtype() != self.key_dtype {
            return Err(self.mismatch(op, "keys", t.dtype()));
        }
        Ok(match t.storage() {
            Storage::String(v) => Keys::Bytes(v),
            Storage::Int32(v) => Keys::Int32(v),
            Storage::Int64(v) => Keys::Int64(v),
            _ => return Err(self.mismatch(op, "keys", t.dtype())),
        })
    }

    /// An error: `role` of an op on this table have the wrong dtype.
    pub fn mismatch(&self, op: &str, role: &str, found: DType) -> crate::error::Error {
        fail(format!(
            "{op}: table {:?} maps {} to {}, but the {role} are {found}",
            self.name, self.key_dtype, self.value_dtype
        ))
    }

    fn slot(&self, keys: &Keys, i: usize) -> Option<usize> {
        match (&self.index, keys) {
            (Index::Int(map), _) => map.get(&keys.int(i)?).copied(),
            (Index::Bytes(map), Keys::Bytes(k)) => map.get(k[i].as_slice()).copied(),
            (Index::Bytes(_), _) => None,
        }
    }

    fn slots(&self, keys: &Keys) -> Vec<Option<usize>> {
        (0..keys.len()).map(|i| self.slot(keys, i)).collect()
    }

    /// The value of every key, or the default (one value, or one per key) where it has none.
    pub fn find(&self, keys: &Keys, default: &Storage) -> KResult<Storage> {
        if !self.initialized {
            return Err(fail(format!("table {:?} is not initialized", self.name)));
        }
        let slots = self.slots(keys);
        let storage = paired!(&self.values, default, |have, fallback| gather(
            have, &slots, fallback
        )
        .into_storage());
        Ok(storage)
    }

    /// Adds key `i` of `keys` as the key of `slot` (the caller checked it is absent).
    fn push_key(&mut self, keys: &Keys, i: usize, slot: usize) {
        match (&mut self.index, keys, &mut self.keys) {
            (Index::Int(map), Keys::Int32(k), Storage::Int32(column)) => {
                map.insert(i64::from(k[i]), slot);
                column.push(k[i]);
            }
            (Index::Int(map), Keys::Int64(k), Storage::Int64(column)) => {
                map.insert(k[i], slot);
                column.push(k[i]);
            }
            (Index::Bytes(map), Keys::Bytes(k), Storage::String(column)) => {
                map.insert(k[i].clone(), slot);
                column.push(k[i].clone());
            }
            _ => {}
        }
    }

    /// Sets every key's value: overwriting (`overwrite`), or, for initializers, failing on a
    /// key met again with another value (the entries added so far are kept, as TensorFlow does).
    pub fn insert(&mut self, keys: &Keys, values: &Storage, overwrite: bool) -> KResult<()> {
        for i in 0..keys.len() {
            match self.slot(keys, i) {
                Some(slot) => {
                    let same = paired!(&mut self.values, values, |have, new| set(
                        have, slot, &new[i], overwrite
                    ));
                    if !same && !overwrite {
                        return Err(fail(format!(
                            "table {:?} has different values for the same key (key {})",
                            self.name,
                            self.describe_key(keys, i)
                        )));
                    }
                }
                None => {
                    let slot = self.values.len();
                    paired!(&mut self.values, values, |have, new| have
                        .push(new[i].to_owned()));
                    self.push_key(keys, i, slot);
                }
            }
        }
        Ok(())
    }

    fn describe_key(&self, keys: &Keys, i: usize) -> String {
        match keys {
            Keys::Bytes(k) => format!("{:?}", String::from_utf8_lossy(&k[i])),
            _ => keys.int(i).unwrap_or_default().to_string(),
        }
    }

    /// Removes the keys present (the last slot moves into each freed one).
    pub fn remove(&mut self, keys: &Keys) {
        for i in 0..keys.len() {
            let Some(slot) = self.slot(keys, i) else {
                continue;
            };
            match (&mut self.index, keys) {
                (Index::Int(map), _) => drop(keys.int(i).and_then(|k| map.remove(&k))),
                (Index::Bytes(map), Keys::Bytes(k)) => drop(map.remove(k[i].as_slice())),
                _ => {}
            }
            swap_remove(&mut self.values, slot);
            swap_remove(&mut self.keys, slot);
            if slot < self.values.len() {
                self.reindex(slot);
            }
        }
    }

    /// Points the key now in `slot` at it.
    fn reindex(&mut self, slot: usize) {
        match (&mut self.index, &self.keys) {
            (Index::Int(map), Storage::Int32(k)) => drop(map.insert(i64::from(k[slot]), slot)),
            (Index::Int(map), Storage::Int64(k)) => drop(map.insert(k[slot], slot)),
            (Index::Bytes(map), Storage::String(k)) => drop(map.insert(k[slot].clone(), slot)),
            _ => {}
        }
    }

    /// Empties the table.
    pub fn clear(&mut self) {
        *self = Self::new(
            std::mem::take(&mut self.name),
            self.kind,
            self.key_dtype,
            self.value_dtype,
        );
    }

    /// The keys and values, in slot order.
    pub fn export(&self) -> KResult<(Tensor, Tensor)> {
        if !self.initialized {
            return Err(fail(format!("table {:?} is not initialized", self.name)));
        }
        let n = self.values.len();
        let keys = Tensor::new(vec![n], self.keys.clone());
        let values = Tensor::new(vec![n], self.values.clone());
        keys.zip(values)
            .ok_or_else(|| fail(format!("table {:?} is inconsistent", self.name)))
    }
}

/// The value in each slot, or the default's (one for all, or one per key) where it is None.
fn gather<T: Clone>(have: &[T], slots: &[Option<usize>], default: &[T]) -> Vec<T> {
    slots
        .iter()
        .enumerate()
        .map(|(i, slot)| match slot {
            Some(j) => have[*j].clone(),
            None => default[if default.len() == 1 { 0 } else { i }].clone(),
        })
        .collect()
}

/// Sets `have[slot]` to `new` if `overwrite`; whether it held `new` already.
fn set<T: Clone + PartialEq>(have: &mut [T], slot: usize, new: &T, overwrite: bool) -> bool {
    let same = have[slot] == *new;
    if overwrite {
        have[slot] = new.clone();
    }
    same
}

/// A vector of a value type back into its storage.
trait IntoStorage {
    fn into_storage(self) -> Storage;
}

macro_rules! into_storage {
    ($($t:ty => $variant:ident),*) => {
        $(impl IntoStorage for Vec<$t> {
            fn into_storage(self) -> Storage {
                Storage::$variant(self)
            }
        })*
    };
}

into_storage!(Vec<u8> => String, i32 => Int32, i64 => Int64, f32 => Float32, f64 => Float64, bool => Bool);

fn swap_remove(column: &mut Storage, slot: usize) {
    match column {
        Storage::String(v) => drop(v.swap_remove(slot)),
        Storage::Int32(v) => drop(v.swap_remove(slot)),
        Storage::Int64(v) => drop(v.swap_remove(slot)),
        Storage::Float32(v) => drop(v.swap_remove(slot)),
        Storage::Float64(v) => drop(v.swap_remove(slot)),
        Storage::Bool(v) => drop(v.swap_remove(slot)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn static_tables_fill_once_and_keep_defaults() {
        let mut t = Table::new("t".into(), Kind::Static, DType::String, DType::Int64);
        let keys = words(&["a", "b"]);
        assert!(t
            .find(&Keys::Bytes(&keys), &Storage::Int64(vec![-1]))
            .is_err());
        assert_eq!(t.size(), 0);
        t.insert(&Keys::Bytes(&keys), &Storage::Int64(vec![1, 2]), false)
            .unwrap();
        t.initialized = true;
        let probe = words(&["b", "z", "a"]);
        let found = t
            .find(&Keys::Bytes(&probe), &Storage::Int64(vec![-1]))
            .unwrap();
        assert_eq!(found, Storage::Int64(vec![2, -1, 1]));
        let per_key = t
            .find(&Keys::Bytes(&probe), &Storage::Int64(vec![7, 8, 9]))
            .unwrap();
        assert_eq!(per_key, Storage::Int64(vec![2, 8, 1]));
        assert!(t
            .find(&Keys::Bytes(&probe), &Storage::Float32(vec![0.0]))
            .is_err());
    }

    #[test]
    fn initializers_refuse_conflicting_duplicates() {
        let mut t = Table::new("t".into(), Kind::Static, DType::Int64, DType::Float32);
        let same = Keys::Int64(&[3, 3]);
        assert!(t
            .insert(&same, &Storage::Float32(vec![0.5, 0.5]), false)
            .is_ok());
        assert!(t
            .insert(&same, &Storage::Float32(vec![0.5, 1.5]), false)
            .is_err());
    }

    #[test]
    fn mutable_tables_insert_remove_and_export() {
        let mut t = Table::new("m".into(), Kind::Mutable, DType::Int32, DType::Float64);
        t.insert(
            &Keys::Int32(&[1, 2, 3]),
            &Storage::Float64(vec![1.0, 2.0, 3.0]),
            true,
        )
        .unwrap();
        t.insert(&Keys::Int32(&[2]), &Storage::Float64(vec![20.0]), true)
            .unwrap();
        t.remove(&Keys::Int32(&[1, 9]));
        assert_eq!(t.size(), 2);
        let found = t
            .find(&Keys::Int32(&[1, 2, 3]), &Storage::Float64(vec![0.0]))
            .unwrap();
        assert_eq!(found, Storage::Float64(vec![0.0, 20.0, 3.0]));
        let (keys, values) = t.export().unwrap();
        assert_eq!(keys.values::<i32>().unwrap(), [3, 2]);
        assert_eq!(values.values::<f64>().unwrap(), [3.0, 20.0]);
        t.clear();
        assert_eq!(t.size(), 0);
    }
}
