//! Exact arithmetic on JSON number texts, for the cases where `f64` would be ambiguous.
//!
//! A number text `-12.340e5` is read as a sign, its significant digits (`1234`, leading and
//! trailing zeros stripped) and the decimal exponent of its most significant digit. Comparing
//! two such decimals is exact for any length of digits and any exponent. `multipleOf` is exact
//! when the divisor has at most 18 significant digits (integer mantissa below 2^63, using
//! modular arithmetic over the dividend's digits), which covers every divisor seen in practice;
//! beyond that it falls back to `f64`.
//!
//! The validator compares with `i64` when both sides are plain integers, then with `f64`, and
//! only when the two `f64` are equal does it call [`cmp`] (rounding is monotonic, so `f64`
//! inequality implies the exact inequality).

use std::cmp::Ordering;

/// A decimal number read from a JSON number text (validated by the parser or by [`parse`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dec<'a> {
    pub neg: bool,
    int: &'a [u8],
    frac: &'a [u8],
    /// Digits to skip at the start of `int ++ frac` (leading zeros).
    lead: usize,
    /// Number of significant digits (0 for zero).
    pub n: usize,
    /// Decimal exponent of the most significant digit plus one: the value is `0.DIGITS * 10^point`.
    pub point: i64,
}

impl<'a> Dec<'a> {
    pub fn is_zero(&self) -> bool {
        self.n == 0
    }

    /// The i-th significant digit (0-based), as a value 0..=9.
    #[inline]
    pub fn digit(&self, i: usize) -> u8 {
        let j = self.lead + i;
        let d = if j < self.int.len() { self.int[j] } else { self.frac[j - self.int.len()] };
        d - b'0'
    }

    /// Exponent of the least significant digit: the value is `MANTISSA * 10^exp`.
    pub fn exp(&self) -> i64 {
        self.point - self.n as i64
    }

    /// Whether the value has no fractional part.
    pub fn is_integral(&self) -> bool {
        self.n == 0 || self.exp() >= 0
    }
}

/// Read a JSON number text. `None` if the text is not a JSON number.
pub(crate) fn parse(text: &[u8]) -> Option<Dec<'_>> {
    let mut p = 0;
    let neg = text.first() == Some(&b'-');
    if neg {
        p = 1;
    }
    let int_start = p;
    while p < text.len() && text[p].is_ascii_digit() {
        p += 1;
    }
    let int = &text[int_start..p];
    if int.is_empty() {
        return None;
    }
    let mut frac: &[u8] = &[];
    if p < text.len() && text[p] == b'.' {
        let s = p + 1;
        p = s;
        while p < text.len() && text[p].is_ascii_digit() {
            p += 1;
        }
        frac = &text[s..p];
        if frac.is_empty() {
            return None;
        }
    }
    let mut exp: i64 = 0;
    if p < text.len() && (text[p] == b'e' || text[p] == b'E') {
        p += 1;
        let eneg = match text.get(p) {
            Some(b'-') => {
                p += 1;
                true
            }
            Some(b'+') => {
                p += 1;
                false
            }
            _ => false,
        };
        let s = p;
        while p < text.len() && text[p].is_ascii_digit() {
            // Saturate: exponents beyond 10^15 behave like infinity or zero anyway.
            exp = (exp * 10 + (text[p] - b'0') as i64).min(1_000_000_000_000_000);
            p += 1;
        }
        if p == s {
            return None;
        }
        if eneg {
            exp = -exp;
        }
    }
    if p != text.len() {
        return None;
    }
    let total = int.len() + frac.len();
    let at = |j: usize| if j < int.len() { int[j] } else { frac[j - int.len()] };
    let mut lead = 0;
    while lead < total && at(lead) == b'0' {
        lead += 1;
    }
    let mut end = total;
    while end > lead && at(end - 1) == b'0' {
        end -= 1;
    }
    let n = end - lead;
    let point = int.len() as i64 - lead as i64 + exp;
    Some(Dec { neg, int, frac, lead, n, point: if n == 0 { 0 } else { point } })
}

/// Exact comparison of two decimals.
pub(crate) fn cmp_dec(a: &Dec<'_>, b: &Dec<'_>) -> Ordering {
    match (a.is_zero(), b.is_zero()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return if b.neg { Ordering::Greater } else { Ordering::Less },
        (false, true) => return if a.neg { Ordering::Less } else { Ordering::Greater },
        _ => {}
    }
    if a.neg != b.neg {
        return if a.neg { Ordering::Less } else { Ordering::Greater };
    }
    let mag = a.point.cmp(&b.point).then_with(|| {
        for i in 0..a.n.max(b.n) {
            let x = if i < a.n { a.digit(i) } else { 0 };
            let y = if i < b.n { b.digit(i) } else { 0 };
            if x != y {
                return x.cmp(&y);
            }
        }
        Ordering::Equal
    });
    if a.neg {
        mag.reverse()
    } else {
        mag
    }
}

/// Exact comparison of two JSON number texts (`None` if either is not one).
pub(crate) fn cmp(a: &[u8], b: &[u8]) -> Option<Ordering> {
    Some(cmp_dec(&parse(a)?, &parse(b)?))
}

/// A compiled numeric bound or divisor from a schema.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Num {
    /// Canonical JSON number text.
    pub text: Box<str>,
    pub f: f64,
    /// The value when it is an integer within `i64`.
    pub i: Option<i64>,
    /// For divisors: the integer mantissa and exponent, when the mantissa fits in 63 bits.
    pub mant: Option<(u64, i64)>,
}

impl Num {
    pub fn from_text(text: &str) -> Option<Num> {
        let d = parse(text.as_bytes())?;
        let f: f64 = text.parse().ok()?;
        let i = if d.is_integral() { text.parse::<i64>().ok().or_else(|| (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)) } else { None };
        let mant = if d.n <= 18 {
            let mut m: u64 = 0;
            for k in 0..d.n {
                m = m * 10 + d.digit(k) as u64;
            }
            Some((m, d.exp()))
        } else {
            None
        };
        Some(Num { text: text.into(), f, i, mant })
    }

    pub fn from_i64(i: i64) -> Num {
        Num::from_text(&i.to_string()).unwrap()
    }

    pub fn from_f64(f: f64) -> Option<Num> {
        if !f.is_finite() {
            return None;
        }
        // `{:e}` is the shortest text that reads back as `f`, in JSON number syntax.
        Num::from_text(&format!("{f:e}"))
    }
}

/// Compare an instance number (its text, and its `i64` value when it is a plain integer) to a bound.
#[inline]
pub(crate) fn cmp_instance(text: &[u8], as_int: Option<i64>, bound: &Num) -> Ordering {
    if let (Some(a), Some(b)) = (as_int, bound.i) {
        return a.cmp(&b);
    }
    if let Some(b) = bound.i {
        if let Some(o) = cmp_decimal_int(text, b) {
            return o;
        }
    }
    let f = std::str::from_utf8(text).ok().and_then(|s| s.parse::<f64>().ok()).unwrap_or(f64::NAN);
    match f.partial_cmp(&bound.f) {
        Some(Ordering::Equal) | None => cmp(text, bound.text.as_bytes()).unwrap_or(Ordering::Equal),
        Some(o) => o,
    }
}

/// Exact comparison of a number written `-?digits.digits` (a fraction, no exponent, at most
/// 18 integer digits) with an integer, without converting it: `None` for other shapes.
#[inline]
fn cmp_decimal_int(text: &[u8], b: i64) -> Option<Ordering> {
    decimal_int(text).map(|d| d.cmp_int(b))
}

/// A number written `-?digits.digits` (a fraction, no exponent, at most 18 integer digits),
/// read once to be compared with several integer bounds ([`DecInt::cmp_int`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct DecInt {
    neg: bool,
    /// The integer part, signed.
    v: i64,
    /// Every fraction digit is `0`.
    frac_zero: bool,
}

/// [`DecInt`] of `text`, `None` for other shapes.
#[inline]
pub(crate) fn decimal_int(text: &[u8]) -> Option<DecInt> {
    let (neg, t) = match text.first()? {
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    let dot = t.iter().position(|&c| c == b'.')?;
    let (int, frac) = (&t[..dot], &t[dot + 1..]);
    if int.is_empty() || int.len() > 18 || frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut x: i64 = 0;
    for &c in int {
        if !c.is_ascii_digit() {
            return None;
        }
        x = x * 10 + (c - b'0') as i64;
    }
    Some(DecInt { neg, v: if neg { -x } else { x }, frac_zero: frac.iter().all(|&c| c == b'0') })
}

impl DecInt {
    /// Exact comparison with the integer `b`.
    #[inline]
    pub(crate) fn cmp_int(self, b: i64) -> Ordering {
        if self.frac_zero {
            return self.v.cmp(&b);
        }
        // The value lies strictly between v and v + 1 (positive) or v - 1 and v (negative).
        match (self.neg, self.v.cmp(&b)) {
            (false, Ordering::Less) => Ordering::Less,
            (false, _) => Ordering::Greater,
            (true, Ordering::Greater) => Ordering::Greater,
            (true, _) => Ordering::Less,
        }
    }
}

/// Whether the instance number is a multiple of `m` (which is positive).
pub(crate) fn is_multiple(text: &[u8], as_int: Option<i64>, m: &Num) -> bool {
    if let (Some(a), Some(b)) = (as_int, m.i) {
        if b != 0 {
            return a % b == 0;
        }
    }
    let Some(d) = parse(text) else { return false };
    if d.is_zero() {
        return true;
    }
    let Some((mm, me)) = m.mant else {
        let q = d_to_f64(text) / m.f;
        return q.is_finite() && q.fract() == 0.0;
    };
    if mm == 0 {
        return false;
    }
    // a = A * 10^ea with A not divisible by 10; m = M * 10^em likewise.
    let ea = d.exp();
    if ea < me {
        // A would need a factor 10^(em - ea), but it has no trailing zero.
        return false;
    }
    // A * 10^(ea - em) mod M == 0 ?
    let mmod = mm as u128;
    let mut r: u128 = 0;
    for k in 0..d.n {
        r = (r * 10 + d.digit(k) as u128) % mmod;
    }
    let k = (ea - me) as u64;
    r = r * pow10_mod(k, mmod) % mmod;
    r == 0
}

fn pow10_mod(mut k: u64, m: u128) -> u128 {
    let mut base = 10 % m;
    let mut acc = 1 % m;
    while k > 0 {
        if k & 1 == 1 {
            acc = acc * base % m;
        }
        base = base * base % m;
        k >>= 1;
    }
    acc
}

fn d_to_f64(text: &[u8]) -> f64 {
    std::str::from_utf8(text).ok().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN)
}

/// Whether a number text has no fractional part (`1.0`, `1e2` and `-0` are integers).
#[inline]
pub(crate) fn is_integral_text(text: &[u8]) -> bool {
    parse(text).is_some_and(|d| d.is_integral())
}

#[cfg(test)]
mod tests;
