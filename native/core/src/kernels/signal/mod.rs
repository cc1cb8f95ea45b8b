//! Complex numbers and Fourier transforms: building complex tensors from their parts and
//! taking them apart (Complex, Real, Imag, ComplexAbs, Angle, Conj), and the real-input FFT
//! that spectrogram front ends (tf.signal.stft) run.

mod complex;
mod fft;
#[cfg(test)]
mod tests;

use crate::engine::Registry;

pub fn register(r: &mut Registry) {
    complex::register(r);
    r.add("RFFT", fft::rfft);
}
