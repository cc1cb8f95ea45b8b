//! libjpeg-turbo's JPEG codec through FFI (the `mozjpeg-sys` crate, whose decompressor is
//! libjpeg-turbo's and whose compressor, with the JCP_FASTEST profile, writes libjpeg-turbo's
//! bytes): the only way to decode and encode bit for bit as TensorFlow does, since TensorFlow
//! uses libjpeg-turbo and JPEG's IDCTs and upsamplers are defined by that code, not a spec.
//! This is the only module of the codecs with `unsafe`; the rest of the engine sees [`decode`],
//! [`encode`] and plain Rust types.
//!
//! The calls follow TensorFlow's use of the plain libjpeg API (jpeg_mem.cc): read the header,
//! set the output colour space, `dct_method`, `do_fancy_upsampling` and the 1/`ratio` scale,
//! check the output size before anything is allocated (TensorFlow's bound: fewer than 2^29
//! samples), crop with `jpeg_crop_scanline` and `jpeg_skip_scanlines`, read one scanline at a
//! time, convert CMYK to RGB as TensorFlow does; a source manager that reports a missing end as
//! an error, or with `try_recover_truncated` feeds libjpeg a fake end-of-image marker.
//!
//! Why the unsafe blocks are sound:
//! - Errors. libjpeg reports a fatal error by calling `error_exit`, which must not return. Ours
//!   unwinds (`resume_unwind`, which runs no panic hook and so prints nothing) with a
//!   [`Fatal`] payload; the C library is built with `-fexceptions` (the crate's `unwinding`
//!   feature) and its callbacks are declared `C-unwind`, so the unwind passes through the C
//!   frames. Every call into libjpeg runs inside one `catch_unwind` ([`guarded`]), and
//!   `jpeg_destroy` runs after it on every path (success, typed error, unwind): it frees every
//!   pool libjpeg allocated and is a no-op when creation itself failed (no memory manager).
//!   Rust values owned inside the closure (row buffers, the output) are dropped by the unwind.
//!   Warnings (`emit_message`) are counted, never printed.
//! - Lifetimes. The error manager, the source and destination managers and the struct itself
//!   live in the calling frame, declared before the `catch_unwind` and dropped after
//!   `jpeg_destroy`, so every pointer libjpeg holds to them is valid for every call. The source
//!   manager points into the caller's `&[u8]`, borrowed for the whole decode; libjpeg only
//!   reads it, never past `bytes_in_buffer`.
//! - Buffers. Every row passed to `jpeg_read_scanlines` has `output_width * output_components`
//!   bytes (the sizes libjpeg reports after `jpeg_start_decompress` and `jpeg_crop_scanline`),
//!   every row passed to `jpeg_write_scanlines` `image_width * input_components`; the
//!   destination manager hands libjpeg a buffer it owns, with its true length.

use std::ffi::{c_int, c_long, c_uint};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr;

use mozjpeg_sys as sys;

/// TensorFlow's message for every failed decode.
pub const INVALID_JPEG: &str = "jpeg::Uncompress failed. Invalid JPEG data or crop window.";

/// TensorFlow's bound on the decoded (or encoded) image: fewer than 2^29 samples.
const MAX_SAMPLES: u64 = 1 << 29;

/// How to decode: TensorFlow's UncompressFlags.
#[derive(Clone, Debug)]
pub struct DecodeSpec {
    /// 0 (as stored, CMYK becoming RGB), 1 or 3.
    pub components: u32,
    /// 1, 2, 4 or 8: decode at 1/ratio.
    pub ratio: u32,
    pub fancy_upscaling: bool,
    /// INTEGER_ACCURATE (JDCT_ISLOW) rather than INTEGER_FAST (JDCT_IFAST).
    pub accurate: bool,
    pub try_recover_truncated: bool,
    pub acceptable_fraction: f32,
    /// (y, x, height, width) in the scaled output.
    pub crop: Option<[i64; 4]>,
}

/// A decoded image, rows of `width * channels` bytes.
#[derive(Debug)]
pub struct Image {
    pub height: usize,
    pub width: usize,
    pub channels: usize,
    pub pixels: Vec<u8>,
}

/// How to encode: TensorFlow's CompressFlags.
#[derive(Clone, Debug)]
pub struct EncodeSpec {
    pub quality: i32,
    pub progressive: bool,
    pub optimize_size: bool,
    pub chroma_downsampling: bool,
    /// JFIF units: 1 dots per inch, 2 per centimetre.
    pub density_unit: u8,
    pub x_density: u16,
    pub y_density: u16,
    pub xmp_metadata: Vec<u8>,
}

/// The unwind payload of libjpeg's fatal errors: its message code.
struct Fatal(c_int);

/// A failure inside [`guarded`]: libjpeg's own (its message code) or one of TensorFlow's checks.
enum Failure {
    Libjpeg(c_int),
    Check(String),
}

/// Runs `body` (every libjpeg call of one decode or encode) catching libjpeg's fatal errors.
fn guarded<T>(body: impl FnOnce() -> Result<T, String>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(message)) => Err(Failure::Check(message)),
        Err(payload) => match payload.downcast::<Fatal>() {
            Ok(fatal) => Err(Failure::Libjpeg(fatal.0)),
            // A panic of our own inside the body: let it go on as it was.
            Err(other) => resume_unwind(other),
        },
    }
}

unsafe extern "C-unwind" fn error_exit(cinfo: &mut sys::jpeg_common_struct) {
    // SAFETY: `err` was set to our error manager before any libjpeg call.
    let code = unsafe { (*cinfo.err).msg_code };
    resume_unwind(Box::new(Fatal(code)));
}

unsafe extern "C-unwind" fn emit_message(cinfo: &mut sys::jpeg_common_struct, level: c_int) {
    if level < 0 {
        // SAFETY: as in error_exit.
        unsafe { (*cinfo.err).num_warnings += 1 };
    }
}

unsafe extern "C-unwind" fn output_message(_cinfo: &mut sys::jpeg_common_struct) {}

/// An error manager that unwinds on errors and keeps quiet about warnings.
fn error_manager() -> Box<sys::jpeg_error_mgr> {
    // SAFETY: jpeg_error_mgr is plain C data (integers, nullable function pointers, raw
    // pointers), for which all zeroes is valid; jpeg_std_error fills every field.
    let mut err: Box<sys::jpeg_error_mgr> = Box::new(unsafe { std::mem::zeroed() });
    // SAFETY: jpeg_std_error only writes the struct it is given.
    unsafe { sys::jpeg_std_error(&mut err) };
    err.error_exit = Some(error_exit);
    err.emit_message = Some(emit_message);
    err.output_message = Some(output_message);
    err
}

/// Calls libjpeg's error exit with `code` (from our source manager).
fn fatal(code: c_int) -> ! {
    resume_unwind(Box::new(Fatal(code)))
}

// -------------------------------------------------------------------------------------------
// Decoding

/// TensorFlow's memory source (jpeg_handle.cc): the whole input at once; running out is an
/// error, or with `recover` a warning and a fake end-of-image marker, again each time libjpeg
/// asks for more.
#[repr(C)]
struct Source {
    /// First, so that libjpeg's `src` pointer is also a pointer to the whole struct.
    manager: sys::jpeg_source_mgr,
    data: *const u8,
    len: usize,
    recover: bool,
}

static FAKE_EOI: [u8; 2] = [0xFF, 0xD9];

/// The Source behind `cinfo.src`.
///
/// # Safety
/// `cinfo.src` must point at a live [`Source`] (set in [`decode_inside`]).
unsafe fn source_of(cinfo: &mut sys::jpeg_decompress_struct) -> &mut Source {
    unsafe { &mut *cinfo.src.cast::<Source>() }
}

unsafe extern "C-unwind" fn init_source(cinfo: &mut sys::jpeg_decompress_struct) {
    // SAFETY: libjpeg calls this only with the struct whose src we set.
    let src = unsafe { source_of(cinfo) };
    src.manager.next_input_byte = src.data;
    src.manager.bytes_in_buffer = src.len;
}

unsafe extern "C-unwind" fn fill_input_buffer(
    cinfo: &mut sys::jpeg_decompress_struct,
) -> sys::boolean {
    // SAFETY: as in init_source.
    let src = unsafe { source_of(cinfo) };
    if src.manager.bytes_in_buffer == 0 && src.manager.next_input_byte == src.data {
        fatal(sys::JERR_INPUT_EMPTY as c_int);
    }
    if src.manager.bytes_in_buffer != 0 {
        // libjpeg asks only when the buffer is spent; data left means corrupt data.
        fatal(sys::JERR_FILE_READ as c_int);
    }
    if src.recover && src.manager.next_input_byte != FAKE_EOI.as_ptr() {
        src.manager.next_input_byte = FAKE_EOI.as_ptr();
        src.manager.bytes_in_buffer = FAKE_EOI.len();
        // SAFETY: err is our error manager.
        unsafe { (*cinfo.common.err).num_warnings += 1 };
        return 1;
    }
    fatal(sys::JERR_FILE_READ as c_int)
}

unsafe extern "C-unwind" fn skip_input_data(
    cinfo: &mut sys::jpeg_decompress_struct,
    count: c_long,
) {
    let Ok(count) = usize::try_from(count) else {
        return;
    };
    // SAFETY: as in init_source.
    let src = unsafe { source_of(cinfo) };
    if count > src.manager.bytes_in_buffer {
        src.manager.bytes_in_buffer = 0;
        // SAFETY: as above; TensorFlow ignores what it returns.
        let _ = unsafe { fill_input_buffer(cinfo) };
    } else {
        src.manager.bytes_in_buffer -= count;
        // SAFETY: count <= bytes left, so the pointer stays inside the input.
        src.manager.next_input_byte = unsafe { src.manager.next_input_byte.add(count) };
    }
}

unsafe extern "C-unwind" fn term_source(_cinfo: &mut sys::jpeg_decompress_struct) {}

/// Decodes `data` as TensorFlow's jpeg::Uncompress does: the pixels, or its error message.
pub fn decode(data: &[u8], spec: &DecodeSpec) -> Result<Image, String> {
    if data.is_empty() {
        return Err(INVALID_JPEG.into());
    }
    let mut err = error_manager();
    let mut source = Source {
        manager: sys::jpeg_source_mgr {
            next_input_byte: ptr::null(),
            bytes_in_buffer: 0,
            init_source: Some(init_source),
            fill_input_buffer: Some(fill_input_buffer),
            skip_input_data: Some(skip_input_data),
            resync_to_restart: Some(sys::jpeg_resync_to_restart),
            term_source: Some(term_source),
        },
        data: data.as_ptr(),
        len: data.len(),
        recover: spec.try_recover_truncated,
    };
    // SAFETY: all zeroes is the state jpeg_create_decompress expects (it keeps only `err`).
    let mut cinfo: Box<sys::jpeg_decompress_struct> = Box::new(unsafe { std::mem::zeroed() });
    cinfo.common.err = ptr::from_mut(&mut *err);
    let source_ptr = ptr::from_mut(&mut source);
    let adobe = saw_adobe_marker(data);
    let result = guarded(|| {
        // SAFETY: see the module comment: err and source outlive every libjpeg call, which
        // all happen inside this closure.
        unsafe { decode_inside(&mut cinfo, source_ptr, spec, adobe) }
    });
    // SAFETY: destroys what jpeg_create_decompress made, whatever state the decode stopped in.
    unsafe { sys::jpeg_destroy_decompress(&mut cinfo) };
    // `source` and `err` outlive the destroy: dropped at the end of this scope.
    drop(err);
    result.map_err(|failure| match failure {
        Failure::Libjpeg(_) => INVALID_JPEG.to_string(),
        Failure::Check(message) => message,
    })
}

/// The libjpeg calls of one decode.
///
/// # Safety
/// `cinfo.common.err` must be a live error manager from [`error_manager`], `source` a live
/// [`Source`] over live data; both must outlive the call and the `jpeg_destroy` after it.
unsafe fn decode_inside(
    cinfo: &mut sys::jpeg_decompress_struct,
    source: *mut Source,
    spec: &DecodeSpec,
    adobe: bool,
) -> Result<Image, String> {
    unsafe {
        sys::jpeg_create_decompress(cinfo);
        cinfo.src = source.cast::<sys::jpeg_source_mgr>();
        sys::jpeg_read_header(cinfo, 1);
    }
    let components = match spec.components {
        0 => cinfo.num_components.clamp(1, 3) as u32,
        c => c,
    };
    let cmyk = matches!(
        cinfo.jpeg_color_space,
        sys::J_COLOR_SPACE::JCS_CMYK | sys::J_COLOR_SPACE::JCS_YCCK
    );
    cinfo.out_color_space = match components {
        1 => sys::J_COLOR_SPACE::JCS_GRAYSCALE,
        3 if cmyk => sys::J_COLOR_SPACE::JCS_CMYK,
        3 => sys::J_COLOR_SPACE::JCS_RGB,
        _ => return Err(INVALID_JPEG.into()),
    };
    cinfo.do_fancy_upsampling = sys::boolean::from(spec.fancy_upscaling);
    cinfo.scale_num = 1;
    cinfo.scale_denom = spec.ratio;
    cinfo.dct_method = if spec.accurate {
        sys::J_DCT_METHOD::JDCT_ISLOW
    } else {
        sys::J_DCT_METHOD::JDCT_IFAST
    };
    unsafe { sys::jpeg_calc_output_dimensions(cinfo) };
    let (full_width, full_height) = (cinfo.output_width, cinfo.output_height);
    let total = u64::from(full_width)
        * u64::from(full_height)
        * u64::try_from(cinfo.num_components).unwrap_or(0);
    if full_width == 0 || full_height == 0 || total >= MAX_SAMPLES {
        return Err(INVALID_JPEG.into());
    }
    unsafe { sys::jpeg_start_decompress(cinfo) };
    let wanted_components = if cmyk && components == 3 {
        4
    } else {
        components
    };
    if cinfo.output_components != wanted_components as c_int {
        return Err(INVALID_JPEG.into());
    }
    let window = match spec.crop {
        None => (0, full_height, full_width),
        Some(crop) => unsafe { start_crop(cinfo, crop)? },
    };
    let (top, height, width) = window;
    let rows = unsafe { read_rows(cinfo, spec, components as usize, cmyk, adobe, window) };
    if spec.crop.is_some() && cinfo.output_scanline < cinfo.output_height {
        unsafe {
            sys::jpeg_skip_scanlines(cinfo, cinfo.output_height - top - height);
        }
    }
    let (mut pixels, read) = rows;
    let height = height as usize;
    let stride = width as usize * components as usize;
    if read == height {
        unsafe { sys::jpeg_finish_decompress(cinfo) };
    } else {
        unsafe { sys::jpeg_abort_decompress(cinfo) };
        let fraction = read as f32 / height as f32;
        if fraction < spec.acceptable_fraction.min(1.0) {
            return Err(INVALID_JPEG.into());
        }
        pixels[read * stride..].fill(0);
    }
    Ok(Image {
        height,
        width: width as usize,
        channels: components as usize,
        pixels,
    })
}

/// Checks the crop window against the scaled size, narrows libjpeg's output to the iMCU
/// columns around it and skips the rows above it. Returns (top, height, width).
///
/// # Safety
/// As [`decode_inside`], after `jpeg_start_decompress`.
unsafe fn start_crop(
    cinfo: &mut sys::jpeg_decompress_struct,
    crop: [i64; 4],
) -> Result<(u32, u32, u32), String> {
    let [y, x, height, width] = crop;
    let (full_width, full_height) = (
        i64::from(cinfo.output_width),
        i64::from(cinfo.output_height),
    );
    let valid = width > 0
        && height > 0
        && x >= 0
        && y >= 0
        && y + height <= full_height
        && x + width <= full_width;
    if !valid {
        return Err(INVALID_JPEG.into());
    }
    // In range of u32: inside the output, whose sizes are u32.
    let (y, x, height, width) = (y as u32, x as u32, height as u32, width as u32);
    let (mut crop_x, mut crop_width) = (x, width);
    let skipped = unsafe {
        sys::jpeg_crop_scanline(cinfo, &mut crop_x, &mut crop_width);
        sys::jpeg_skip_scanlines(cinfo, y)
    };
    if skipped != y {
        return Err(INVALID_JPEG.into());
    }
    Ok((y, height, width))
}

/// Reads the window's rows (TensorFlow's scanline loop): the pixels, `width * components` a
/// row, and how many rows were read before the data ran out (all of them when it did not, or
/// with `try_recover_truncated`, which repeats the last row read).
///
/// # Safety
/// As [`decode_inside`], after `jpeg_start_decompress` (and the crop).
unsafe fn read_rows(
    cinfo: &mut sys::jpeg_decompress_struct,
    spec: &DecodeSpec,
    components: usize,
    cmyk: bool,
    adobe: bool,
    (top, height, width): (u32, u32, u32),
) -> (Vec<u8>, usize) {
    let stride = width as usize * components;
    let mut pixels = vec![0u8; stride * height as usize];
    let line = cinfo.output_width as usize * cinfo.output_components as usize;
    let mut row = vec![0u8; line];
    // Where the window starts in libjpeg's (iMCU-aligned) row.
    let offset = (cinfo.output_width - width) as usize * cinfo.output_components as usize;
    let end = top + height;
    let mut index = 0usize;
    while cinfo.output_scanline < end {
        let mut row_ptr = row.as_mut_ptr();
        // SAFETY: `row` has output_width * output_components bytes, what libjpeg writes.
        let read = unsafe { sys::jpeg_read_scanlines(cinfo, &mut row_ptr, 1) };
        if read == 0 {
            if !spec.try_recover_truncated {
                return (pixels, index);
            }
            for i in index..height as usize {
                let (done, rest) = pixels.split_at_mut(i * stride);
                let target = &mut rest[..stride];
                match i {
                    0 => target.fill(0),
                    _ => target.copy_from_slice(&done[(i - 1) * stride..]),
                }
            }
            cinfo.output_scanline = end;
            return (pixels, height as usize);
        }
        let target = &mut pixels[index * stride..(index + 1) * stride];
        let source = &row[offset..];
        if cmyk {
            cmyk_to_rgb(source, target, adobe);
        } else {
            target.copy_from_slice(&source[..stride]);
        }
        index += 1;
    }
    (pixels, index)
}

/// TensorFlow's CMYK to RGB: with an Adobe marker (inverted samples) R = K x C / 255, else
/// (255 - K) x (255 - C) / 255, truncated.
fn cmyk_to_rgb(cmyk: &[u8], rgb: &mut [u8], adobe: bool) {
    for (out, pixel) in rgb.chunks_exact_mut(3).zip(cmyk.chunks_exact(4)) {
        let k = u32::from(pixel[3]);
        for (o, &c) in out.iter_mut().zip(&pixel[..3]) {
            let c = u32::from(c);
            *o = if adobe {
                (k * c / 255) as u8
            } else {
                ((255 - k) * (255 - c) / 255) as u8
            };
        }
    }
}

/// Whether libjpeg sees an Adobe APP14 marker (at least 12 bytes starting "Adobe") before the
/// first scan, as its `saw_Adobe_marker` (which the bindings keep private) says.
fn saw_adobe_marker(data: &[u8]) -> bool {
    let mut at = 2;
    while at + 4 <= data.len() {
        if data[at] != 0xFF {
            return false;
        }
        let marker = data[at + 1];
        if marker == 0xFF {
            at += 1;
            continue;
        }
        if marker == 0xD8 || marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
            at += 2;
            continue;
        }
        if marker == 0xDA || marker == 0xD9 {
            return false;
        }
        let length = usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]]));
        let body = data
            .get(at + 4..(at + 2 + length).min(data.len()))
            .unwrap_or(&[]);
        if marker == 0xEE && length >= 2 + 12 && body.starts_with(b"Adobe") {
            return true;
        }
        at += 2 + length;
    }
    false
}

// -------------------------------------------------------------------------------------------
// Encoding

/// A destination manager collecting libjpeg's output in a Vec, one buffer at a time.
#[repr(C)]
struct Destination {
    /// First, so that libjpeg's `dest` pointer is also a pointer to the whole struct.
    manager: sys::jpeg_destination_mgr,
    buffer: Vec<u8>,
    output: Vec<u8>,
}

/// # Safety
/// `cinfo.dest` must point at a live [`Destination`] (set in [`encode_inside`]).
unsafe fn destination_of(cinfo: &mut sys::jpeg_compress_struct) -> &mut Destination {
    unsafe { &mut *cinfo.dest.cast::<Destination>() }
}

unsafe extern "C-unwind" fn init_destination(cinfo: &mut sys::jpeg_compress_struct) {
    // SAFETY: libjpeg calls this only with the struct whose dest we set.
    let dest = unsafe { destination_of(cinfo) };
    dest.manager.next_output_byte = dest.buffer.as_mut_ptr();
    dest.manager.free_in_buffer = dest.buffer.len();
}

unsafe extern "C-unwind" fn empty_output_buffer(
    cinfo: &mut sys::jpeg_compress_struct,
) -> sys::boolean {
    // SAFETY: as in init_destination.
    let dest = unsafe { destination_of(cinfo) };
    dest.output.extend_from_slice(&dest.buffer);
    dest.manager.next_output_byte = dest.buffer.as_mut_ptr();
    dest.manager.free_in_buffer = dest.buffer.len();
    1
}

unsafe extern "C-unwind" fn term_destination(cinfo: &mut sys::jpeg_compress_struct) {
    // SAFETY: as in init_destination.
    let dest = unsafe { destination_of(cinfo) };
    let used = dest.buffer.len() - dest.manager.free_in_buffer;
    dest.output.extend_from_slice(&dest.buffer[..used]);
}

/// Encodes `pixels` (`height` rows of `width * channels` bytes, channels 1 or 3) as
/// TensorFlow's jpeg::Compress does.
pub fn encode(
    pixels: &[u8],
    height: usize,
    width: usize,
    channels: usize,
    spec: &EncodeSpec,
) -> Result<Vec<u8>, String> {
    let samples = (height as u64).saturating_mul(width as u64);
    if height == 0 || width == 0 || samples >= MAX_SAMPLES {
        return Err(format!("Invalid image size: {width} x {height}"));
    }
    if !matches!(channels, 1 | 3) || pixels.len() != height * width * channels {
        return Err(format!(
            "image of {height}x{width}x{channels} has {} bytes",
            pixels.len()
        ));
    }
    let mut err = error_manager();
    let mut destination = Destination {
        manager: sys::jpeg_destination_mgr {
            next_output_byte: ptr::null_mut(),
            free_in_buffer: 0,
            init_destination: Some(init_destination),
            empty_output_buffer: Some(empty_output_buffer),
            term_destination: Some(term_destination),
        },
        buffer: vec![0u8; (height * width * channels).clamp(64, 1 << 20)],
        output: Vec::new(),
    };
    // SAFETY: all zeroes is the state jpeg_create_compress expects (it keeps only `err`).
    let mut cinfo: Box<sys::jpeg_compress_struct> = Box::new(unsafe { std::mem::zeroed() });
    cinfo.common.err = ptr::from_mut(&mut *err);
    let dest_ptr = ptr::from_mut(&mut destination);
    let dims = (height, width, channels);
    let result = guarded(|| {
        // SAFETY: see the module comment, as for decoding.
        unsafe { encode_inside(&mut cinfo, dest_ptr, pixels, dims, spec) };
        Ok(())
    });
    // SAFETY: destroys what jpeg_create_compress made, whatever state it stopped in.
    unsafe { sys::jpeg_destroy_compress(&mut cinfo) };
    drop(err);
    match result {
        Ok(()) => Ok(destination.output),
        Err(Failure::Libjpeg(code)) => Err(format!("JPEG encoding failed (libjpeg error {code})")),
        Err(Failure::Check(message)) => Err(message),
    }
}

/// The libjpeg calls of one encode.
///
/// # Safety
/// As [`decode_inside`], with `dest` a live [`Destination`]; `pixels` holds
/// `height * width * channels` bytes.
unsafe fn encode_inside(
    cinfo: &mut sys::jpeg_compress_struct,
    dest: *mut Destination,
    pixels: &[u8],
    (height, width, channels): (usize, usize, usize),
    spec: &EncodeSpec,
) {
    unsafe {
        sys::jpeg_create_compress(cinfo);
        cinfo.dest = dest.cast::<sys::jpeg_destination_mgr>();
        // Below 2^29 samples, so both fit.
        cinfo.image_width = width as u32;
        cinfo.image_height = height as u32;
        cinfo.input_components = channels as c_int;
        cinfo.in_color_space = if channels == 1 {
            sys::J_COLOR_SPACE::JCS_GRAYSCALE
        } else {
            sys::J_COLOR_SPACE::JCS_RGB
        };
        // libjpeg-turbo's defaults (baseline, no trellis or scan optimisation), before
        // jpeg_set_defaults, which reads the profile.
        sys::jpeg_c_set_int_param(
            cinfo,
            sys::J_INT_PARAM::JINT_COMPRESS_PROFILE,
            sys::JINT_COMPRESS_PROFILE_VALUE::JCP_FASTEST as c_int,
        );
        sys::jpeg_set_defaults(cinfo);
        if spec.optimize_size {
            cinfo.optimize_coding = 1;
        }
        cinfo.density_unit = spec.density_unit;
        cinfo.X_density = spec.x_density;
        cinfo.Y_density = spec.y_density;
        sys::jpeg_set_quality(cinfo, spec.quality, 1);
        if spec.progressive {
            sys::jpeg_simple_progression(cinfo);
        }
        if !spec.chroma_downsampling {
            let count = usize::try_from(cinfo.num_components).unwrap_or(0);
            // SAFETY: jpeg_set_defaults made comp_info an array of num_components entries.
            for component in std::slice::from_raw_parts_mut(cinfo.comp_info, count) {
                component.h_samp_factor = 1;
                component.v_samp_factor = 1;
            }
        }
        sys::jpeg_start_compress(cinfo, 1);
        if !spec.xmp_metadata.is_empty() {
            let mut packet = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
            packet.extend_from_slice(&spec.xmp_metadata);
            // A marker holds at most 65533 bytes; libjpeg reports longer ones as an error.
            let length = c_uint::try_from(packet.len()).unwrap_or(c_uint::MAX);
            sys::jpeg_write_marker(cinfo, 0xE1, packet.as_ptr(), length);
        }
        for row in pixels.chunks_exact(width * channels) {
            let rows = [row.as_ptr()];
            sys::jpeg_write_scanlines(cinfo, rows.as_ptr(), 1);
        }
        sys::jpeg_finish_compress(cinfo);
    }
}
