//! Where parameters come from: path spans from the router, the query string, header lines and
//! cookies, as one [`Sources`] per request.

use std::ops::Range;

use memchr::memchr;
use palisade_body::form::Query;

use crate::model::Param;

/// Too many cookies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyCookies {
    pub limit: usize,
}

/// Cookies of one request (RFC 6265 `Cookie: a=1; b="2"`, from one or several header lines).
/// Pairs without `=` and empty names are ignored (RFC 6265 §5.2); surrounding double quotes
/// of a value are removed; values stay raw (decoded per parameter, leniently). Reusable.
#[derive(Debug)]
pub struct Cookies {
    pub(super) raw: Vec<u8>,
    pairs: Vec<(Range<u32>, Range<u32>)>,
    max: usize,
}

impl Default for Cookies {
    fn default() -> Self {
        Cookies::with_limit(256)
    }
}

pub(super) fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

impl Cookies {
    pub fn with_limit(max: usize) -> Self {
        Cookies { raw: Vec::new(), pairs: Vec::new(), max }
    }

    /// Forget all cookies (start of a request).
    pub fn clear(&mut self) {
        self.raw.clear();
        self.pairs.clear();
    }

    /// Add the cookies of one `Cookie` header line.
    pub fn add_header(&mut self, value: &[u8]) -> Result<(), TooManyCookies> {
        let base = self.raw.len();
        self.raw.extend_from_slice(value);
        for seg in value.split(|&b| b == b';') {
            let Some(eq) = memchr(b'=', seg) else { continue };
            let name = trim_ows(&seg[..eq]);
            if name.is_empty() {
                continue;
            }
            let mut val = trim_ows(&seg[eq + 1..]);
            if val.len() >= 2 && val[0] == b'"' && val[val.len() - 1] == b'"' {
                val = &val[1..val.len() - 1];
            }
            if self.pairs.len() == self.max {
                return Err(TooManyCookies { limit: self.max });
            }
            let off = |s: &[u8]| {
                let start = base + (s.as_ptr() as usize - value.as_ptr() as usize);
                start as u32..(start + s.len()) as u32
            };
            self.pairs.push((off(name), off(val)));
        }
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Cookie `i`: raw name and raw value (quotes removed).
    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let (n, v) = &self.pairs[i];
        (&self.raw[n.start as usize..n.end as usize], &self.raw[v.start as usize..v.end as usize])
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.pairs.len()).map(|i| self.get(i))
    }
}

/// Path parameters found by the router: raw (still percent-encoded) spans by name.
pub trait PathSource {
    fn path_param(&self, name: &str) -> Option<&[u8]>;
}

fn find_path<'s, N: AsRef<str>, V: AsRef<[u8]>>(pairs: &'s [(N, V)], name: &str) -> Option<&'s [u8]> {
    pairs.iter().find(|(n, _)| n.as_ref() == name).map(|(_, v)| v.as_ref())
}

impl<N: AsRef<str>, V: AsRef<[u8]>> PathSource for &[(N, V)] {
    fn path_param(&self, name: &str) -> Option<&[u8]> {
        find_path(self, name)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> PathSource for Vec<(N, V)> {
    fn path_param(&self, name: &str) -> Option<&[u8]> {
        find_path(self, name)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>, const K: usize> PathSource for [(N, V); K] {
    fn path_param(&self, name: &str) -> Option<&[u8]> {
        find_path(self, name)
    }
}

/// Request headers. `visit` calls `f` with each line's value of header `name`, matched
/// case-insensitively, in order.
pub trait HeaderSource {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8]));
}

fn visit_pairs<N: AsRef<str>, V: AsRef<[u8]>>(pairs: &[(N, V)], name: &str, f: &mut dyn FnMut(&[u8])) {
    for (n, v) in pairs {
        if n.as_ref().eq_ignore_ascii_case(name) {
            f(v.as_ref())
        }
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderSource for &[(N, V)] {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8])) {
        visit_pairs(self, name, f)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>> HeaderSource for Vec<(N, V)> {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8])) {
        visit_pairs(self, name, f)
    }
}

impl<N: AsRef<str>, V: AsRef<[u8]>, const K: usize> HeaderSource for [(N, V); K] {
    fn visit(&self, name: &str, f: &mut dyn FnMut(&[u8])) {
        visit_pairs(self, name, f)
    }
}

/// Everything a parameter can come from, for one request.
pub struct Sources<'a> {
    pub path: &'a dyn PathSource,
    pub query: &'a Query,
    pub headers: &'a dyn HeaderSource,
    pub cookies: &'a Cookies,
    /// All parameters of the operation: a form-exploded object parameter takes the query keys
    /// its schema names, except those that another parameter claims.
    pub params: &'a [Param],
}
