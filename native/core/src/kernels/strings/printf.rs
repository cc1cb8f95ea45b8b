//! C's printf for the conversions TensorFlow's string ops use (`%d`, `%f`, `%e`, `%g`, `%s`
//! with one flag, a width and a precision), since AsString builds a printf format from its
//! attrs and StringFormat prints floats with `%.*g`. Rust's formatting rounds exactly (ties to
//! even on the exact binary value), as glibc does; the rest is C's layout.

/// A conversion's flag, width and precision.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spec {
    /// One of `-`, `+`, ` `, `0`, `#`, or none.
    pub flag: Option<u8>,
    pub width: usize,
    pub precision: Option<usize>,
}

/// How a float is written.
#[derive(Clone, Copy, Debug)]
pub enum Notation {
    /// `%f`
    Fixed,
    /// `%e`
    Scientific,
    /// `%g`
    General,
}

impl Spec {
    fn alternate(&self) -> bool {
        self.flag == Some(b'#')
    }

    /// The sign a non-negative number gets.
    fn plus(&self) -> &'static str {
        match self.flag {
            Some(b'+') => "+",
            Some(b' ') => " ",
            _ => "",
        }
    }

    /// `sign` and `body` padded to the width: left-justified, zero-padded after the sign
    /// (only where `zeros` allows), or right-justified.
    fn pad(&self, sign: &str, body: &str, zeros: bool) -> String {
        let len = sign.len() + body.len();
        let fill = self.width.saturating_sub(len);
        match self.flag {
            Some(b'-') => format!("{sign}{body}{}", " ".repeat(fill)),
            Some(b'0') if zeros => format!("{sign}{}{body}", "0".repeat(fill)),
            _ => format!("{}{sign}{body}", " ".repeat(fill)),
        }
    }
}

/// `%d` of a signed integer.
pub fn signed(value: i64, spec: &Spec) -> String {
    let sign = if value < 0 { "-" } else { spec.plus() };
    spec.pad(sign, &value.unsigned_abs().to_string(), true)
}

/// `%d` of an unsigned integer: the `+` and space flags add no sign.
pub fn unsigned(value: u64, spec: &Spec) -> String {
    spec.pad("", &value.to_string(), true)
}

/// `%s`: the precision cuts the string, the width pads it with spaces.
pub fn string(value: &[u8], spec: &Spec) -> Vec<u8> {
    let cut = spec.precision.map_or(value.len(), |p| p.min(value.len()));
    let value = &value[..cut];
    let fill = vec![b' '; spec.width.saturating_sub(value.len())];
    if spec.flag == Some(b'-') {
        [value, &fill].concat()
    } else {
        [&fill, value].concat()
    }
}

/// A float in `notation`; NaN and infinity as C writes them (`nan`, `-nan`, `inf`; no zeros).
pub fn float(value: f64, spec: &Spec, notation: Notation) -> String {
    let sign = if value.is_sign_negative() {
        "-"
    } else {
        spec.plus()
    };
    if !value.is_finite() {
        let body = if value.is_nan() { "nan" } else { "inf" };
        return spec.pad(sign, body, false);
    }
    let x = value.abs();
    let precision = spec.precision.unwrap_or(6);
    let body = match notation {
        Notation::Fixed => fixed(x, precision, spec.alternate()),
        Notation::Scientific => scientific(x, precision, spec.alternate()),
        Notation::General => general(x, precision, spec.alternate()),
    };
    spec.pad(sign, &body, true)
}

fn fixed(x: f64, precision: usize, alternate: bool) -> String {
    let mut s = format!("{x:.precision$}");
    if alternate && precision == 0 {
        s.push('.');
    }
    s
}

/// `%e` of a non-negative finite `x`: Rust's `1.5e0` as C's `1.5e+00`.
fn scientific(x: f64, precision: usize, alternate: bool) -> String {
    let rust = format!("{x:.precision$e}");
    let (mantissa, exponent) = rust.split_once('e').unwrap_or((&rust, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let dot = if alternate && precision == 0 { "." } else { "" };
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}{dot}e{sign}{:02}", exponent.unsigned_abs())
}

/// The decimal exponent of `x` once rounded to `digits` significant digits.
fn exponent(x: f64, digits: usize) -> i32 {
    if x == 0.0 {
        return 0;
    }
    let rust = format!("{x:.*e}", digits.saturating_sub(1));
    rust.split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0)
}

/// `%g`: `%e` for exponents below -4 or from the precision on, else `%f`; trailing zeros
/// dropped unless `#`.
fn general(x: f64, precision: usize, alternate: bool) -> String {
    let p = precision.max(1);
    let e = exponent(x, p);
    let mut s = if e < -4 || e >= p as i32 {
        scientific(x, p - 1, alternate)
    } else {
        fixed(x, (p as i32 - 1 - e) as usize, alternate)
    };
    if !alternate {
        s = strip_zeros(&s);
    }
    s
}

/// Drops the trailing zeros of the fraction (and a bare `.`), keeping any exponent.
fn strip_zeros(s: &str) -> String {
    let (number, exp) = match s.find('e') {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    if !number.contains('.') {
        return s.to_string();
    }
    let trimmed = number.trim_end_matches('0').trim_end_matches('.');
    format!("{trimmed}{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(flag: Option<u8>, width: usize, precision: Option<usize>) -> Spec {
        Spec {
            flag,
            width,
            precision,
        }
    }

    /// Expected strings are glibc's printf output for the same format.
    #[test]
    fn floats_print_as_glibc() {
        let none = Spec::default();
        assert_eq!(float(0.5, &spec(None, 0, Some(0)), Notation::Fixed), "0");
        assert_eq!(float(2.5, &spec(None, 0, Some(0)), Notation::Fixed), "2");
        assert_eq!(float(0.25, &spec(None, 0, Some(1)), Notation::Fixed), "0.2");
        assert_eq!(
            float(2.0, &spec(Some(b'#'), 0, Some(0)), Notation::Scientific),
            "2.e+00"
        );
        assert_eq!(
            float(1.5, &spec(Some(b'#'), 0, None), Notation::General),
            "1.50000"
        );
        assert_eq!(float(1e-8, &none, Notation::General), "1e-08");
        assert_eq!(float(1e10, &none, Notation::General), "1e+10");
        assert_eq!(float(123456.0, &none, Notation::General), "123456");
        assert_eq!(float(1234567.0, &none, Notation::General), "1.23457e+06");
        assert_eq!(float(0.0001, &none, Notation::General), "0.0001");
        assert_eq!(float(-0.0, &none, Notation::General), "-0");
        assert_eq!(float(1e300, &none, Notation::Scientific), "1.000000e+300");
        assert_eq!(
            float(f64::NAN, &spec(Some(b'0'), 5, None), Notation::Fixed),
            "  nan"
        );
        assert_eq!(
            float(-1.5, &spec(Some(b'0'), 8, None), Notation::Fixed),
            "-1.500000"
        );
        assert_eq!(
            float(-1.5, &spec(Some(b'0'), 10, Some(1)), Notation::Fixed),
            "-0000001.5"
        );
        assert_eq!(
            float(9.9999996, &spec(None, 0, Some(6)), Notation::General),
            "10"
        );
    }

    #[test]
    fn integers_and_strings_pad() {
        assert_eq!(signed(-5, &spec(Some(b'0'), 8, None)), "-0000005");
        assert_eq!(signed(5, &spec(Some(b'+'), 4, None)), "  +5");
        assert_eq!(signed(i64::MIN, &Spec::default()), "-9223372036854775808");
        assert_eq!(unsigned(7, &spec(Some(b'+'), 4, None)), "   7");
        assert_eq!(string(b"abcdef", &spec(None, 5, Some(2))), b"   ab");
        assert_eq!(string(b"ab", &spec(Some(b'-'), 4, None)), b"ab  ");
        assert_eq!(string(b"ab", &spec(Some(b'0'), 4, None)), b"  ab");
    }
}
