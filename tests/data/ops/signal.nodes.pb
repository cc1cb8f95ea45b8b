
/
FFT/complex64FFT	tensors_0*
Tcomplex0
0
FFT/complex128FFT	tensors_0*
Tcomplex0
0
FFT/inner_onlyFFT	tensors_0*
Tcomplex0
+
	FFT/emptyFFT	tensors_0*
Tcomplex0
0
FFT/length_oneFFT	tensors_0*
Tcomplex0
1
IFFT/complex64IFFT	tensors_0*
Tcomplex0
2
IFFT/complex128IFFT	tensors_0*
Tcomplex0
2
IFFT/inner_onlyIFFT	tensors_0*
Tcomplex0
-

IFFT/emptyIFFT	tensors_0*
Tcomplex0
2
IFFT/length_oneIFFT	tensors_0*
Tcomplex0
3
FFT2D/complex64FFT2D	tensors_0*
Tcomplex0
4
FFT2D/complex128FFT2D	tensors_0*
Tcomplex0
4
FFT2D/inner_onlyFFT2D	tensors_0*
Tcomplex0
/
FFT2D/emptyFFT2D	tensors_0*
Tcomplex0
4
FFT2D/length_oneFFT2D	tensors_0*
Tcomplex0
5
IFFT2D/complex64IFFT2D	tensors_0*
Tcomplex0
6
IFFT2D/complex128IFFT2D	tensors_0*
Tcomplex0
6
IFFT2D/inner_onlyIFFT2D	tensors_0*
Tcomplex0
1
IFFT2D/emptyIFFT2D	tensors_0*
Tcomplex0
6
IFFT2D/length_oneIFFT2D	tensors_0*
Tcomplex0
3
FFT3D/complex64FFT3D	tensors_0*
Tcomplex0
4
FFT3D/complex128FFT3D	tensors_0*
Tcomplex0
4
FFT3D/inner_onlyFFT3D	tensors_0*
Tcomplex0
/
FFT3D/emptyFFT3D	tensors_0*
Tcomplex0
4
FFT3D/length_oneFFT3D	tensors_0*
Tcomplex0
5
IFFT3D/complex64IFFT3D	tensors_0*
Tcomplex0
6
IFFT3D/complex128IFFT3D	tensors_0*
Tcomplex0
6
IFFT3D/inner_onlyIFFT3D	tensors_0*
Tcomplex0
1
IFFT3D/emptyIFFT3D	tensors_0*
Tcomplex0
6
IFFT3D/length_oneIFFT3D	tensors_0*
Tcomplex0
/
FFT/odd_primeFFT	tensors_0*
Tcomplex0
.
FFT/specialsFFT	tensors_0*
Tcomplex0
G
RFFT/float32RFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
G
RFFT/float64RFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
I
RFFT/too_shortRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
G
RFFT/croppedRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
RFFT/empty_batchRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
IRFFT/complex64IRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
L
IRFFT/complex128IRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
L
IRFFT/odd_lengthIRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
IRFFT/too_shortIRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
I
IRFFT/croppedIRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
M
IRFFT/empty_batchIRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
RFFT2D/float32RFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
RFFT2D/float64RFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
M
RFFT2D/too_shortRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
RFFT2D/croppedRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
O
RFFT2D/empty_batchRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
O
IRFFT2D/complex64IRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
P
IRFFT2D/complex128IRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
P
IRFFT2D/odd_lengthIRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
O
IRFFT2D/too_shortIRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
M
IRFFT2D/croppedIRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
Q
IRFFT2D/empty_batchIRFFT2D	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
RFFT3D/float32RFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
RFFT3D/float64RFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
M
RFFT3D/too_shortRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
K
RFFT3D/croppedRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
O
RFFT3D/empty_batchRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
O
IRFFT3D/complex64IRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
P
IRFFT3D/complex128IRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
P
IRFFT3D/odd_lengthIRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
O
IRFFT3D/too_shortIRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
M
IRFFT3D/croppedIRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
Q
IRFFT3D/empty_batchIRFFT3D	tensors_0	tensors_1*
Tcomplex0*
Treal0
C
RFFT/oddRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
P
RFFT/bad_length_shapeRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
V
IRFFT/dc_imaginary_ignoredIRFFT	tensors_0	tensors_1*
Tcomplex0*
Treal0
G
Complex/complex64Complex	tensors_0	tensors_1*

Tout0*
T0
6
Real/complex64Real	tensors_0*

Tout0*
T0
6
Imag/complex64Imag	tensors_0*

Tout0*
T0
B
ComplexAbs/complex64
ComplexAbs	tensors_0*

Tout0*
T0
8
Angle/complex64Angle	tensors_0*

Tout0*
T0
*
Conj/complex64Conj	tensors_0*
T0
H
Complex/complex128Complex	tensors_0	tensors_1*

Tout0*
T0
7
Real/complex128Real	tensors_0*

Tout0*
T0
7
Imag/complex128Imag	tensors_0*

Tout0*
T0
C
ComplexAbs/complex128
ComplexAbs	tensors_0*

Tout0*
T0
9
Angle/complex128Angle	tensors_0*

Tout0*
T0
+
Conj/complex128Conj	tensors_0*
T0
G
Complex/broadcastComplex	tensors_0	tensors_1*

Tout0*
T0
E
Complex/scalarsComplex	tensors_0	tensors_1*

Tout0*
T0
J
Complex/incompatibleComplex	tensors_0	tensors_1*

Tout0*
T0
C
Complex/emptyComplex	tensors_0	tensors_1*

Tout0*
T0
A
ComplexAbs/specials
ComplexAbs	tensors_0*

Tout0*
T0
>
ComplexAbs/large
ComplexAbs	tensors_0*

Tout0*
T0
7
Angle/specialsAngle	tensors_0*

Tout0*
T0
5
Real/specialsReal	tensors_0*

Tout0*
T0
2

Imag/emptyImag	tensors_0*

Tout0*
T0
)
Conj/specialsConj	tensors_0*
T0
&

Conj/emptyConj	tensors_0*
T0