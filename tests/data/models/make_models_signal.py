"""Export an audio front end as TensorFlow writes it: STFT, magnitude, mel filterbank, log and
MFCCs in one tf.Module signature, with its inputs and TensorFlow's outputs. Needs TensorFlow 2.21.

Usage: python tests/data/models/make_models_signal.py   (writes stft_mfcc/ and stft_mfcc.io.npz)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from make_models import HERE, export_module  # noqa: E402

SAMPLE_RATE = 8000


class MfccFrontEnd(tf.Module):
    """Waveforms [batch, samples] -> log-mel spectrograms and 13 MFCCs per frame, as a keyword
    spotter's preprocessing does it (frames of 256 samples, hop 128, a periodic Hann window)."""

    def __init__(self):
        super().__init__()
        self.mel = tf.signal.linear_to_mel_weight_matrix(
            num_mel_bins=20, num_spectrogram_bins=129, sample_rate=SAMPLE_RATE,
            lower_edge_hertz=60.0, upper_edge_hertz=3800.0)

    @tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32, name="audio")])
    def features(self, audio):
        stft = tf.signal.stft(audio, frame_length=256, frame_step=128, fft_length=256,
                              pad_end=True)
        magnitude = tf.abs(stft)
        mel = tf.tensordot(magnitude, self.mel, 1)
        log_mel = tf.math.log(mel + 1e-6)
        mfcc = tf.signal.mfccs_from_log_mel_spectrograms(log_mel)[..., :13]
        return {"log_mel": log_mel, "mfcc": mfcc, "phase": tf.math.angle(stft[..., :4])}


def main() -> None:
    rng = np.random.default_rng(14)
    t = np.arange(2000) / SAMPLE_RATE
    tones = np.stack([np.sin(2 * np.pi * 440 * t), np.sin(2 * np.pi * 1250 * t) * np.hanning(2000)])
    audio = (tones + 0.05 * rng.standard_normal(tones.shape)).astype(np.float32)
    shutil.rmtree(HERE / "stft_mfcc", ignore_errors=True)
    export_module("stft_mfcc", MfccFrontEnd(), {"features": {"audio": audio}})


if __name__ == "__main__":
    main()
