//! Opening model files (regular files only) and decoding the protobuf messages they hold.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::path::Path;

use prost::Message;

use crate::error::{Error, Result};

/// Opens `path` for reading, refusing anything but a regular file.
///
/// The file is opened non-blocking, so a FIFO (or a device) given as a model file is refused
/// instead of waiting forever for a writer; the flag changes nothing for a regular file.
pub fn open_regular(path: &Path) -> Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|err| io_error(path, err))?;
    let meta = file.metadata().map_err(|err| io_error(path, err))?;
    if !meta.is_file() {
        return Err(Error::NotRegularFile { path: path.into() });
    }
    Ok(file)
}

/// The whole content of the regular file at `path`.
pub fn read_file(path: &Path) -> Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let mut data = Vec::new();
    file.read_to_end(&mut data)
        .map_err(|err| io_error(path, err))?;
    Ok(data)
}

/// Maps a missing file to [`Error::Missing`] and every other failure to [`Error::Io`].
pub fn io_error(path: &Path, err: std::io::Error) -> Error {
    if err.kind() == ErrorKind::NotFound {
        Error::Missing { path: path.into() }
    } else {
        Error::Io {
            path: path.into(),
            source: err,
        }
    }
}

/// Decodes a `message` (its proto name, for errors) from `bytes` of the file at `path`, stored
/// under `key` of an index, or making up the whole file when `key` is None.
pub fn decode_message<M: Message + Default>(
    path: &Path,
    bytes: &[u8],
    message: &'static str,
    key: Option<&str>,
) -> Result<M> {
    M::decode(bytes).map_err(|source| Error::Decode {
        path: path.into(),
        message,
        key: key.map(String::from),
        source,
    })
}
