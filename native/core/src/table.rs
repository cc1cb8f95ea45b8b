//! Reader for the LevelDB-format sorted table that a checkpoint's `.index` file is.
//!
//! Layout: data blocks, a metaindex block, an index block whose values are handles of the data
//! blocks, and a 48-byte footer (two block handles, padding, an 8-byte magic number). Each block
//! is followed by a 5-byte trailer: a compression byte and the masked CRC32C of the block plus
//! that byte. A block holds prefix-compressed records, then restart offsets and their count.
//! Every offset and size is checked against the file before it is used.

use std::path::{Path, PathBuf};

use crate::checksum::{crc32c, unmask};
use crate::error::{Error, Result};
use crate::file::read_file;
use crate::wire::{le_array, read_varint};

const TABLE_MAGIC: u64 = 0xDB47_7524_8B80_FB57;
const FOOTER_SIZE: usize = 48;
const BLOCK_TRAILER_SIZE: usize = 5;
const NO_COMPRESSION: u8 = 0;

/// One (key, value) record of a table.
pub type Record = (Vec<u8>, Vec<u8>);

/// All records of the table at `path`, in key order.
pub fn read_table(path: &Path) -> Result<Vec<Record>> {
    let data = read_file(path)?;
    Table { path, data: &data }.records()
}

/// All records of a table already in memory; `path` names it in errors.
pub fn parse_table(path: &Path, data: &[u8]) -> Result<Vec<Record>> {
    Table { path, data }.records()
}

struct Table<'a> {
    path: &'a Path,
    data: &'a [u8],
}

#[derive(Clone, Copy)]
struct Handle {
    offset: u64,
    size: u64,
}

impl Table<'_> {
    /// The records of every data block the index lists, in strictly increasing key order as a
    /// table holds them. The blocks must follow each other
    /// without overlap, as a table writer lays them out, so the records read never outgrow the
    /// file (an index listing one block many times would otherwise multiply it).
    fn records(&self) -> Result<Vec<Record>> {
        let index = self.block(self.index_handle()?, "index block")?;
        let mut records = Vec::new();
        let mut free_from = 0;
        for (_, value) in index {
            let handle = self.handle(&value, &mut 0, "index entry")?;
            let what = format!("data block at offset {}", handle.offset);
            if handle.offset < free_from {
                let detail =
                    format!("overlaps the data block before it, which ends at {free_from}");
                return Err(self.corrupt(&what, &detail));
            }
            records.extend(self.block(handle, &what)?);
            // The next block may start only after this one's trailer (`block` checked it fits).
            free_from = handle.offset + handle.size + BLOCK_TRAILER_SIZE as u64;
        }
        if let Some(pair) = records.windows(2).find(|pair| pair[0].0 >= pair[1].0) {
            let key = String::from_utf8_lossy(&pair[1].0);
            let detail = format!("key {key:?} does not sort after the key before it");
            return Err(self.corrupt("records", &detail));
        }
        Ok(records)
    }

    fn index_handle(&self) -> Result<Handle> {
        let len = self.data.len();
        let Some(footer) = len
            .checked_sub(FOOTER_SIZE)
            .and_then(|at| self.data.get(at..))
        else {
            return Err(Error::Truncated {
                path: self.path.into(),
                what: "table footer".into(),
                detail: format!(
                    "{len} bytes is too short for a table footer ({FOOTER_SIZE} bytes); \
                     the file is truncated or not a table"
                ),
            });
        };
        let found = u64::from_le_bytes(le_array(&footer[FOOTER_SIZE - 8..]));
        if found != TABLE_MAGIC {
            return Err(Error::BadMagic {
                path: self.path.into(),
                found,
            });
        }
        let mut pos = 0;
        self.handle(footer, &mut pos, "footer")?; // the metaindex block, unused
        self.handle(footer, &mut pos, "footer")
    }

    fn handle(&self, bytes: &[u8], pos: &mut usize, what: &str) -> Result<Handle> {
        let mut next =
            || read_varint(bytes, pos, 64).ok_or_else(|| self.corrupt(what, "bad block handle"));
        Ok(Handle {
            offset: next()?,
            size: next()?,
        })
    }

    /// The records of the block at `handle`, its checksum verified.
    fn block(&self, handle: Handle, what: &str) -> Result<Vec<Record>> {
        let limit = self.data.len().saturating_sub(FOOTER_SIZE);
        let span = usize::try_from(handle.offset)
            .ok()
            .zip(usize::try_from(handle.size).ok())
            .and_then(|(start, size)| Some((start, start.checked_add(size)?)))
            .filter(|&(_, end)| {
                end.checked_add(BLOCK_TRAILER_SIZE)
                    .is_some_and(|e| e <= limit)
            });
        let Some((start, end)) = span else {
            return Err(Error::Truncated {
                path: self.path.into(),
                what: what.into(),
                detail: format!(
                    "block (offset {}, size {}) extends past the end of the {}-byte file",
                    handle.offset,
                    handle.size,
                    self.data.len()
                ),
            });
        };
        let stored = u32::from_le_bytes(le_array(&self.data[end + 1..end + BLOCK_TRAILER_SIZE]));
        if crc32c(&self.data[start..=end]) != unmask(stored) {
            return Err(Error::Checksum {
                path: self.path.into(),
                what: what.into(),
            });
        }
        if self.data[end] != NO_COMPRESSION {
            return Err(Error::Unsupported {
                path: self.path.into(),
                what: what.into(),
                detail: format!(
                    "compression type {}; only uncompressed tables are supported",
                    self.data[end]
                ),
            });
        }
        self.block_records(&self.data[start..end], what)
    }

    fn block_records(&self, block: &[u8], what: &str) -> Result<Vec<Record>> {
        let restarts_at = block
            .len()
            .checked_sub(4)
            .ok_or_else(|| self.corrupt(what, "block too short for its restart count"))?;
        let num_restarts = u32::from_le_bytes(le_array(&block[restarts_at..]));
        let limit = usize::try_from(num_restarts)
            .ok()
            .and_then(|n| n.checked_mul(4))
            .and_then(|bytes| restarts_at.checked_sub(bytes))
            .ok_or_else(|| {
                self.corrupt(
                    what,
                    &format!("restart count {num_restarts} does not fit the block"),
                )
            })?;
        let mut records = Vec::new();
        let mut key: Vec<u8> = Vec::new();
        let mut pos = 0;
        while pos < limit {
            let at = pos;
            let bad = || self.corrupt(what, &format!("corrupt record at offset {at}"));
            let mut field = || {
                read_varint(&block[..limit], &mut pos, 32)
                    .and_then(|v| usize::try_from(v).ok())
                    .ok_or_else(bad)
            };
            let (shared, unshared, value_len) = (field()?, field()?, field()?);
            let key_end = pos.checked_add(unshared).ok_or_else(bad)?;
            let value_end = key_end.checked_add(value_len).ok_or_else(bad)?;
            if shared > key.len() || value_end > limit {
                return Err(bad());
            }
            key.truncate(shared);
            key.extend_from_slice(&block[pos..key_end]);
            records.push((key.clone(), block[key_end..value_end].to_vec()));
            pos = value_end;
        }
        Ok(records)
    }

    fn corrupt(&self, what: &str, detail: &str) -> Error {
        Error::Corrupt {
            path: PathBuf::from(self.path),
            what: what.into(),
            detail: detail.into(),
        }
    }
}
