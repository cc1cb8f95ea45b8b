//! Reader for TensorFlow's tensor bundle: a checkpoint's `.index` table plus its data shards.
//!
//! The index maps each key to a BundleEntryProto (dtype, shape, shard, offset, size, masked
//! CRC32C); the empty key holds the BundleHeaderProto. Shards
//! (`<prefix>.data-0000i-of-0000n`) hold raw little-endian tensor bytes; a string tensor is its
//! varint lengths, a masked CRC32C of those lengths (as little-endian u32s), then the bytes.
//! A partitioned tensor's entry lists slices; each slice is a record of its own under a key in
//! TensorFlow's order-preserving code (see [`slice_key`]).
//!
//! Shapes and extents are checked against each other and against the shard files before
//! anything is allocated, and every checksum is verified, so a damaged file is an error naming
//! file and key. Shards are memory-mapped once per reader and each tensor is copied out once.

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::checksum::{crc32c, crc32c_append, mask};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::file::decode_message;
use crate::mmap::Mapped;
use crate::protos::{bundle_header_proto::Endianness, BundleEntryProto, BundleHeaderProto};
use crate::protos::{tensor_slice_proto::extent::HasLengthHack, TensorSliceProto};
use crate::table::{read_table, Record};
use crate::tensor::{element_count, Storage, Tensor};
use crate::tensor_proto::defined_shape;
use crate::wire::{le_array, read_varint, split_by_lengths};

/// The key under which TensorFlow stores a checkpoint's object graph.
pub const OBJECT_GRAPH_KEY: &str = "_CHECKPOINTABLE_OBJECT_GRAPH";

/// Random access to the tensors of one checkpoint, given its prefix (path minus `.index`).
pub struct BundleReader {
    prefix: PathBuf,
    index: PathBuf,
    header: BundleHeaderProto,
    names: Vec<String>,
    entries: HashMap<String, (Vec<u8>, BundleEntryProto)>,
    slices: HashMap<Vec<u8>, BundleEntryProto>,
    num_shards: usize,
    /// The shards mapped so far, by id; filled on first use, so a header's shard count costs
    /// nothing until entries use the shards.
    shards: Mutex<HashMap<usize, Arc<Mapped>>>,
}

/// One stored extent of a tensor: where it goes (start, length per dimension) and its entry.
struct Part<'a> {
    region: Vec<(usize, usize)>,
    entry: &'a BundleEntryProto,
    what: String,
}

/// Where the bytes of one part are: its shard's map and a range checked to lie inside it.
struct Extent {
    shard: PathBuf,
    map: Arc<Mapped>,
    range: Range<usize>,
}

impl Extent {
    fn bytes(&self) -> &[u8] {
        self.map.bytes().get(self.range.clone()).unwrap_or_default()
    }
}

/// An extent is read once (checksummed, then decoded into a tensor of its own), so its pages
/// are released when it goes: loading holds one copy of the weights, not two.
impl Drop for Extent {
    fn drop(&mut self) {
        self.map.release(self.range.clone());
    }
}

impl Part<'_> {
    fn count(&self) -> usize {
        self.region.iter().map(|&(_, n)| n).product()
    }
}

pub fn index_path(prefix: &Path) -> PathBuf {
    with_suffix(prefix, ".index")
}

pub fn shard_path(prefix: &Path, shard: usize, num_shards: usize) -> PathBuf {
    with_suffix(prefix, &format!(".data-{shard:05}-of-{num_shards:05}"))
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut path = prefix.as_os_str().to_owned();
    path.push(suffix);
    path.into()
}

impl BundleReader {
    pub fn open(prefix: impl AsRef<Path>) -> Result<Self> {
        let prefix = prefix.as_ref().to_path_buf();
        let index = index_path(&prefix);
        let mut records = read_table(&index)?.into_iter();
        let header: BundleHeaderProto = match records.next() {
            Some((key, value)) if key.is_empty() => {
                decode_message(&index, &value, "BundleHeaderProto", Some(""))?
            }
            _ => {
                return Err(corrupt(
                    &index,
                    "bundle header",
                    "no header under the empty key",
                ))
            }
        };
        let num_shards = usize::try_from(header.num_shards)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| {
                corrupt(
                    &index,
                    "bundle header",
                    &format!("claims {} shards", header.num_shards),
                )
            })?;
        if header.endianness != Endianness::Little as i32 {
            return Err(Error::Unsupported {
                path: index,
                what: "bundle header".into(),
                detail: "big-endian bundles are not supported".into(),
            });
        }
        let mut reader = Self {
            prefix,
            header,
            names: Vec::new(),
            entries: HashMap::new(),
            slices: HashMap::new(),
            num_shards,
            shards: Mutex::new(HashMap::new()),
            index,
        };
        for record in records {
            reader.add(record)?;
        }
        Ok(reader)
    }

    fn add(&mut self, (key, value): Record) -> Result<()> {
        let name = String::from_utf8_lossy(&key).into_owned();
        let entry = decode_message(&self.index, &value, "BundleEntryProto", Some(&name))?;
        if key.first() == Some(&0) {
            self.slices.insert(key, entry);
        } else {
            self.names.push(name.clone());
            self.entries.insert(name, (key, entry));
        }
        Ok(())
    }

    pub fn header(&self) -> &BundleHeaderProto {
        &self.header
    }

    /// The tensor keys in index order (slice records are internal and not listed).
    pub fn keys(&self) -> &[String] {
        &self.names
    }

    pub fn entry(&self, key: &str) -> Result<&BundleEntryProto> {
        self.entries
            .get(key)
            .map(|(_, entry)| entry)
            .ok_or_else(|| self.unknown(key))
    }

    fn unknown(&self, key: &str) -> Error {
        Error::UnknownKey {
            path: self.index.clone(),
            key: key.into(),
        }
    }

    /// The tensor stored under `key`, every checksum verified.
    pub fn read(&self, key: &str) -> Result<Tensor> {
        let (raw_key, entry) = self.entries.get(key).ok_or_else(|| self.unknown(key))?;
        let what = format!("tensor {key:?}");
        let dtype = DType::from_proto(entry.dtype).ok_or_else(|| Error::Unsupported {
            path: self.index.clone(),
            what: what.clone(),
            detail: format!("DataType {} cannot be read as a tensor", entry.dtype),
        })?;
        let shape = defined_shape(entry.shape.as_ref())
            .map_err(|detail| corrupt(&self.index, &what, &format!("stored shape: {detail}")))?;
        let count = element_count(&shape)
            .filter(|n| n.checked_mul(dtype.item_size().unwrap_or(1)).is_some())
            .ok_or_else(|| corrupt(&self.index, &what, &format!("shape {shape:?} overflows")))?;
        if entry.slices.is_empty() {
            let part = Part {
                region: shape.iter().map(|&n| (0, n)).collect(),
                entry,
                what,
            };
            let storage = self.read_part(&part, dtype)?;
            return Tensor::new(shape, storage)
                .ok_or_else(|| corrupt(&self.index, &part.what, "element count mismatch"));
        }
        self.read_sliced(key, raw_key, entry, dtype, shape, count)
    }

    /// The decoded elements of one extent, its size and checksums checked.
    fn read_part(&self, part: &Part, dtype: DType) -> Result<Storage> {
        let Some(item) = dtype.item_size() else {
            let extent = self.extent(part)?;
            let (bytes, shard) = (extent.bytes(), &extent.shard);
            return decode_strings(bytes, part.count(), part.entry.crc32c, shard, &part.what)
                .map(Storage::String);
        };
        let extent = self.checked_extent(part, dtype, item)?;
        Storage::from_le_bytes(dtype, extent.bytes())
            .ok_or_else(|| corrupt(&self.index, &part.what, "not a fixed-width dtype"))
    }

    /// The extent of a fixed-width part, once its size fits the region and its checksum
    /// matches.
    fn checked_extent(&self, part: &Part, dtype: DType, item: usize) -> Result<Extent> {
        let extent = self.extent(part)?;
        let bytes = extent.bytes();
        if Some(bytes.len()) != part.count().checked_mul(item) {
            let lengths: Vec<usize> = part.region.iter().map(|&(_, n)| n).collect();
            let detail = format!(
                "holds {} bytes, but shape {lengths:?} of {dtype} needs {} x {item}",
                bytes.len(),
                part.count()
            );
            return Err(corrupt(&self.index, &part.what, &detail));
        }
        if mask(crc32c(bytes)) != part.entry.crc32c {
            return Err(Error::Checksum {
                path: extent.shard.clone(),
                what: part.what.clone(),
            });
        }
        Ok(extent)
    }

    /// The bytes of `part` in its shard, once they are known to lie inside it.
    fn extent(&self, part: &Part) -> Result<Extent> {
        let entry = part.entry;
        let num_shards = self.num_shards;
        let id = usize::try_from(entry.shard_id)
            .ok()
            .filter(|&id| id < num_shards)
            .ok_or_else(|| {
                let detail = format!(
                    "shard id {} is outside the {num_shards} shards of the header",
                    entry.shard_id
                );
                corrupt(&self.index, &part.what, &detail)
            })?;
        let path = shard_path(&self.prefix, id, num_shards);
        let map = self.shard(id, &path, part)?;
        let data = map.bytes();
        let span = usize::try_from(entry.offset)
            .ok()
            .zip(usize::try_from(entry.size).ok())
            .and_then(|(start, size)| Some(start..start.checked_add(size)?))
            .filter(|range| range.end <= data.len());
        let range = span.ok_or_else(|| {
            let detail = format!(
                "extent (offset {}, size {}) lies outside the {}-byte shard",
                entry.offset,
                entry.size,
                data.len()
            );
            Error::Truncated {
                path: path.clone(),
                what: part.what.clone(),
                detail,
            }
        })?;
        Ok(Extent {
            shard: path,
            map,
            range,
        })
    }

    /// Unmaps the shards read so far (a later read maps its shard again): a loaded model
    /// keeps its reader to read variables again, and should not keep files mapped meanwhile.
    pub fn release_shards(&self) {
        self.shards
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn shard(&self, id: usize, path: &Path, part: &Part) -> Result<Arc<Mapped>> {
        // A panic elsewhere cannot leave the map half-updated, so a poisoned lock is still sound.
        let mut shards = self.shards.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(mapped) = shards.get(&id) {
            return Ok(Arc::clone(mapped));
        }
        let mapped = Mapped::map(path).map_err(|err| match err {
            Error::Missing { path: shard } => Error::MissingShard {
                path: self.index.clone(),
                what: part.what.clone(),
                shard,
            },
            other => other,
        })?;
        Ok(Arc::clone(shards.entry(id).or_insert(Arc::new(mapped))))
    }
}

fn corrupt(path: &Path, what: &str, detail: &str) -> Error {
    Error::Corrupt {
        path: path.into(),
        what: what.into(),
        detail: detail.into(),
    }
}

/// Decodes a string tensor's extent (in `shard`, for the tensor `what`) and verifies both of
/// its checksums: the lengths' own (over each length as a little-endian u32, truncated as
/// TensorFlow truncates it), and the entry's, which continues from it over the stored length
/// checksum and then the string bytes.
fn decode_strings(
    data: &[u8],
    count: usize,
    stored: u32,
    shard: &Path,
    what: &str,
) -> Result<Vec<Vec<u8>>> {
    let bad = |detail: &str| corrupt(shard, what, detail);
    let mismatch = |part: &str| Error::Checksum {
        path: shard.into(),
        what: format!("the string {part} of {what}"),
    };
    if data.len() < count.saturating_add(4) {
        let detail = format!(
            "{} bytes cannot hold {count} strings and their length checksum",
            data.len()
        );
        return Err(bad(&detail));
    }
    let mut pos = 0;
    let mut lengths = Vec::with_capacity(count);
    let mut crc = 0;
    for _ in 0..count {
        let length =
            read_varint(data, &mut pos, 64).ok_or_else(|| bad("string lengths end early"))?;
        crc = crc32c_append(crc, &(length as u32).to_le_bytes());
        lengths.push(usize::try_from(length).map_err(|_| bad("string length overflows"))?);
    }
    let lengths_crc = data
        .get(pos..pos + 4)
        .map(le_array)
        .ok_or_else(|| bad("string tensor ends before its length checksum"))?;
    if mask(crc) != u32::from_le_bytes(lengths_crc) {
        return Err(mismatch("lengths"));
    }
    // The entry's checksum covers the stored length checksum and the string bytes.
    let covered = &data[pos..];
    let body = &covered[4..];
    if lengths.iter().try_fold(0usize, |a, &n| a.checked_add(n)) != Some(body.len()) {
        let detail = format!(
            "string lengths do not add up to the {} bytes that follow them",
            body.len()
        );
        return Err(bad(&detail));
    }
    if mask(crc32c_append(crc, covered)) != stored {
        return Err(mismatch("bytes"));
    }
    Ok(split_by_lengths(body, &lengths))
}

impl BundleReader {
    /// A partitioned tensor: each slice is found, checked against the shape, and the slices
    /// must tile the tensor exactly before the output is allocated.
    fn read_sliced(
        &self,
        key: &str,
        raw_key: &[u8],
        entry: &BundleEntryProto,
        dtype: DType,
        shape: Vec<usize>,
        count: usize,
    ) -> Result<Tensor> {
        let what = format!("tensor {key:?}");
        let Some(item) = dtype.item_size() else {
            return Err(Error::Unsupported {
                path: self.index.clone(),
                what,
                detail: "partitioned string tensors are not supported".into(),
            });
        };
        let parts = entry
            .slices
            .iter()
            .map(|spec| self.slice_part(&what, raw_key, spec, entry, &shape))
            .collect::<Result<Vec<_>>>()?;
        check_cover(&parts, &shape, count)
            .map_err(|detail| corrupt(&self.index, &what, &detail))?;
        let extents = parts
            .iter()
            .map(|part| self.checked_extent(part, dtype, item))
            .collect::<Result<Vec<_>>>()?;
        // The parts tile the tensor and each one's bytes are in a shard, so the files back
        // this allocation.
        let mut out = vec![0u8; count * item];
        for (part, extent) in parts.iter().zip(&extents) {
            place(&mut out, &shape, &part.region, extent.bytes(), item);
        }
        let storage = Storage::from_le_bytes(dtype, &out)
            .ok_or_else(|| corrupt(&self.index, &what, "not a fixed-width dtype"))?;
        Tensor::new(shape, storage)
            .ok_or_else(|| corrupt(&self.index, &what, "element count mismatch"))
    }

    fn slice_part<'a>(
        &'a self,
        what: &str,
        raw_key: &[u8],
        spec: &TensorSliceProto,
        entry: &BundleEntryProto,
        shape: &[usize],
    ) -> Result<Part<'a>> {
        let label = spec_text(spec);
        let what = format!("{what}, slice {label}");
        let region = slice_region(spec, shape).map_err(|d| corrupt(&self.index, &what, &d))?;
        let stored = self.slices.get(&slice_key(raw_key, spec)).ok_or_else(|| {
            corrupt(
                &self.index,
                &what,
                "the index has no record for this slice (missing tensor data)",
            )
        })?;
        let lengths: Vec<usize> = region.iter().map(|&(_, n)| n).collect();
        let stored_shape = defined_shape(stored.shape.as_ref()).ok();
        if !stored.slices.is_empty()
            || stored.dtype != entry.dtype
            || stored_shape.as_ref() != Some(&lengths)
        {
            let detail = format!(
                "slice record has dtype {}, shape {stored_shape:?} and {} slices; expected dtype {} and shape {lengths:?}",
                stored.dtype,
                stored.slices.len(),
                entry.dtype
            );
            return Err(corrupt(&self.index, &what, &detail));
        }
        Ok(Part {
            region,
            entry: stored,
            what,
        })
    }
}

/// (start, length) per dimension of one slice, checked against the full shape.
fn slice_region(
    spec: &TensorSliceProto,
    shape: &[usize],
) -> std::result::Result<Vec<(usize, usize)>, String> {
    if spec.extent.len() != shape.len() {
        return Err(format!(
            "the slice has {} dimensions, the tensor has {}",
            spec.extent.len(),
            shape.len()
        ));
    }
    spec.extent
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(dim, (extent, &size))| {
            let Some(HasLengthHack::Length(length)) = extent.has_length_hack else {
                return Ok((0, size));
            };
            let start = usize::try_from(extent.start);
            let length = usize::try_from(length);
            match (start, length) {
                (Ok(start), Ok(length))
                    if start.checked_add(length).is_some_and(|end| end <= size) =>
                {
                    Ok((start, length))
                }
                _ => Err(format!(
                    "the slice extends past dimension {dim} of size {size}, or is negative"
                )),
            }
        })
        .collect()
}

/// The slices must tile the tensor exactly: no element missing, none stored twice.
fn check_cover(parts: &[Part], shape: &[usize], count: usize) -> std::result::Result<(), String> {
    let held = parts
        .iter()
        .map(Part::count)
        .try_fold(0usize, |a, n| a.checked_add(n));
    if held != Some(count) {
        return Err(format!(
            "its slices hold {held:?} elements, the shape {shape:?} has {count}"
        ));
    }
    for (i, first) in parts.iter().enumerate() {
        for second in &parts[i + 1..] {
            let overlap = first
                .region
                .iter()
                .zip(&second.region)
                .all(|(&(s1, n1), &(s2, n2))| s1 < s2 + n2 && s2 < s1 + n1);
            if overlap && first.count() > 0 && second.count() > 0 {
                return Err(format!("{} and {} overlap", first.what, second.what));
            }
        }
    }
    Ok(())
}

/// Copies the row-major bytes of a region into its place in `out`, one innermost row at a time.
fn place(out: &mut [u8], shape: &[usize], region: &[(usize, usize)], bytes: &[u8], item: usize) {
    let row = region.last().map_or(1, |&(_, n)| n) * item;
    if row == 0 {
        return;
    }
    let mut strides = vec![item; shape.len()];
    for d in (1..shape.len()).rev() {
        strides[d - 1] = strides[d] * shape[d];
    }
    // The position of the current row inside the region, over all but the last dimension.
    let mut index = vec![0usize; region.len().saturating_sub(1)];
    for src in bytes.chunks_exact(row) {
        let dst: usize = region
            .iter()
            .zip(&strides)
            .enumerate()
            .map(|(d, (&(start, _), stride))| (start + index.get(d).copied().unwrap_or(0)) * stride)
            .sum();
        if let Some(slot) = out.get_mut(dst..dst + row) {
            slot.copy_from_slice(src);
        }
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < region[d].1 {
                break;
            }
            index[d] = 0;
        }
    }
}

/// A slice as TensorFlow spells it: `start,length` per dimension, `-` for a full one.
fn spec_text(spec: &TensorSliceProto) -> String {
    let dims: Vec<String> = spec
        .extent
        .iter()
        .map(|e| match e.has_length_hack {
            Some(HasLengthHack::Length(n)) => format!("{},{n}", e.start),
            None => "-".into(),
        })
        .collect();
    dims.join(":")
}

/// The index key of one slice of tensor `name`: TensorFlow's ordered code of (0, name, rank,
/// start and length per dimension), a full dimension being (0, -1).
pub fn slice_key(name: &[u8], spec: &TensorSliceProto) -> Vec<u8> {
    let mut key = ordered_uint(0);
    for &byte in name {
        match byte {
            0x00 => key.extend([0x00, 0xFF]),
            0xFF => key.extend([0xFF, 0x00]),
            b => key.push(b),
        }
    }
    key.extend([0x00, 0x01]);
    key.extend(ordered_uint(spec.extent.len() as u64));
    for extent in &spec.extent {
        let (start, length) = match extent.has_length_hack {
            Some(HasLengthHack::Length(n)) => (extent.start, n),
            None => (0, -1),
        };
        key.extend(ordered_int(start));
        key.extend(ordered_int(length));
    }
    key
}

/// Unsigned: a length byte, then the value's big-endian bytes without leading zeros.
fn ordered_uint(value: u64) -> Vec<u8> {
    let body: Vec<u8> = value
        .to_be_bytes()
        .into_iter()
        .skip_while(|&b| b == 0)
        .collect();
    let mut out = vec![body.len() as u8];
    out.extend(body);
    out
}

/// Signed: n bytes whose top n bits are ones then a zero, the magnitude in the remaining
/// 7n - 1 bits; a negative number is the bitwise complement of the encoding of !value.
fn ordered_int(value: i64) -> Vec<u8> {
    let magnitude = if value >= 0 {
        value as u64
    } else {
        !value as u64
    };
    let mut width = 1u32;
    while width < 10 && magnitude >> (7 * width - 1) != 0 {
        width += 1;
    }
    let encoded = (((1u128 << width) - 1) << (7 * width)) | u128::from(magnitude);
    let bytes = &encoded.to_be_bytes()[16 - width as usize..];
    bytes
        .iter()
        .map(|&b| if value >= 0 { b } else { !b })
        .collect()
}
