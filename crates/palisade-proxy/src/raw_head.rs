//! The header fields of an HTTP/1 request head as parsed ([`RawRequestHead`]): offsets into
//! the head's bytes, a header map built only when something needs it.

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue};

use crate::codec;

/// Whether `HeaderValue::to_str` accepts the value: visible ASCII (and HTAB) only. Eight
/// bytes at a time (see the test against the byte-by-byte check).
pub(crate) fn is_visible_ascii(v: &[u8]) -> bool {
    const L: u64 = 0x0101_0101_0101_0101;
    const H: u64 = 0x8080_8080_8080_8080;
    #[inline(always)]
    pub(crate) fn word_ok(w: u64) -> bool {
        // 0x80 exactly at the bytes that are HTAB (no carry crosses a byte)...
        const LOW7: u64 = 0x7f * L;
        let z = w ^ (0x09 * L);
        let tab = !(((z & LOW7) + LOW7) | z | LOW7);
        // ... which become `)` (0x29), visible.
        let w = w | (tab >> 2);
        // Then: no byte below 0x20, none above 0x7e (exact as "any byte" tests).
        let below = w.wrapping_sub(0x20 * L) & !w & H;
        let above = (w.wrapping_add(L) | w) & H;
        below | above == 0
    }
    let mut chunks = v.chunks_exact(8);
    for c in &mut chunks {
        if !word_ok(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])) {
            return false;
        }
    }
    let rest = chunks.remainder();
    let mut last = [b' '; 8];
    last[..rest.len()].copy_from_slice(rest);
    word_ok(u64::from_le_bytes(last))
}

/// `HeaderValue::to_str`: the value as text when it is visible ASCII (and HTAB) only.
pub(crate) fn visible_ascii(v: &[u8]) -> Result<&str, ()> {
    if is_visible_ascii(v) {
        std::str::from_utf8(v).map_err(|_| ())
    } else {
        Err(())
    }
}

/// Where one header field of a request head is (offsets into the head).
#[derive(Clone, Copy)]
pub(crate) struct RawField {
    pub(crate) name: u32,
    pub(crate) name_len: u32,
    pub(crate) value: u32,
    pub(crate) value_len: u32,
}

thread_local! {
    /// A field list kept for the next request head (one per worker, instead of one allocation
    /// per request).
    static SPARE_FIELDS: std::cell::Cell<Vec<RawField>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The header names of the last heads made into maps, as sent and as `HeaderName`s: clients
/// send the same few names, usually in the same order, so a name is looked up first where it
/// was in the head before ([`RawRequestHead::to_map`]; `HeaderName::from_bytes` lowercases and
/// matches every name, and allocates for a non-standard one).
#[derive(Default)]
pub(crate) struct NameCache {
    pub(crate) names: Vec<(Box<[u8]>, HeaderName)>,
}

impl NameCache {
    pub(crate) const MAX: usize = 32;
    const MAX_LEN: usize = 64;

    /// The `HeaderName` of `sent`, the `k`-th field of a head; `None` if it is not a valid name.
    pub(crate) fn name(&mut self, k: usize, sent: &[u8]) -> Option<HeaderName> {
        if let Some((s, n)) = self.names.get(k) {
            if **s == *sent {
                return Some(n.clone());
            }
        }
        if let Some((_, n)) = self.names.iter().find(|(s, _)| **s == *sent) {
            return Some(n.clone());
        }
        let n = HeaderName::from_bytes(sent).ok()?;
        if self.names.len() < NameCache::MAX && sent.len() <= NameCache::MAX_LEN {
            self.names.push((sent.into(), n.clone()));
        }
        Some(n)
    }
}

thread_local! {
    static NAMES: std::cell::RefCell<NameCache> = std::cell::RefCell::default();
    /// A header map kept for the next [`RawRequestHead::to_map`] (one per worker): the map that
    /// the stages read when the request went upstream as its own lines.
    static SPARE_MAP: std::cell::Cell<Option<HeaderMap>> = const { std::cell::Cell::new(None) };
}

/// Keeps `map` (cleared) for the next [`RawRequestHead::to_map`] of this thread.
pub fn spare_map(mut map: HeaderMap) {
    if map.capacity() <= 64 {
        map.clear();
        SPARE_MAP.with(|s| s.set(Some(map)));
    }
}

pub(crate) fn spare_fields(min: usize) -> Vec<RawField> {
    let mut v = SPARE_FIELDS.with(std::cell::Cell::take);
    v.clear();
    v.reserve(min);
    v
}

/// The header fields of an HTTP/1 request head, checked (names and values as `HeaderName` and
/// `HeaderValue` accept them) but not put in a `HeaderMap`: the map is built by [`to_map`]
/// when something needs it, and a plain proxied request goes upstream as these lines
/// ([`upstream_lines`](Self::upstream_lines)).
///
/// [`to_map`]: RawRequestHead::to_map
pub struct RawRequestHead {
    pub(crate) head: Bytes,
    pub(crate) fields: Vec<RawField>,
    pub(crate) plain: bool,
    pub(crate) host: Option<u32>,
    pub(crate) content_length: Option<u32>,
    /// Set when several (equal) Content-Length fields were sent: the map holds one, with this.
    pub(crate) normalized_length: Option<u64>,
}

impl RawRequestHead {
    /// The whole head as received: request line, header lines and the final empty line.
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// The header fields in the order received: (name as sent, value).
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        let h = &self.head[..];
        self.fields.iter().map(move |f| (&h[f.name as usize..(f.name + f.name_len) as usize], &h[f.value as usize..(f.value + f.value_len) as usize]))
    }

    /// The header lines of a plain request (see [`plain`](Self::plain), from a peer that is not
    /// a trusted proxy) that go upstream as they are, written into `out`: every field but the
    /// hop-by-hop ones, `Upgrade`, `Expect`, `Content-Length` and those
    /// [`crate::headers::set_forwarding`] replaces. What [`crate::headers::strip_hop_by_hop`]
    /// and `set_forwarding` leave of the same request's map, without the map.
    pub fn upstream_lines(&self, out: &mut Vec<u8>) {
        self.write_lines(out, |name| !crate::headers::replaced_upstream(name));
    }

    /// The header lines to forward, as runs of the head's own bytes: the fields `keep` accepts
    /// (by name), each written `name: value\r\n`. Consecutive fields already written that way in
    /// the head (the usual case) are copied as one run.
    pub fn write_lines(&self, out: &mut Vec<u8>, keep: impl Fn(&[u8]) -> bool) {
        let h = &self.head[..];
        let mut runs = codec::LineRuns::default();
        for f in &self.fields {
            let (n, nl, v, vl) = (f.name as usize, f.name_len as usize, f.value as usize, f.value_len as usize);
            if keep(&h[n..n + nl]) {
                runs.keep(h, out, (n, nl), (v, vl));
            } else {
                runs.flush(h, out);
            }
        }
        runs.flush(h, out);
    }

    pub(crate) fn field(&self, i: usize) -> (&[u8], &[u8]) {
        let f = self.fields[i];
        let h = &self.head[..];
        (&h[f.name as usize..(f.name + f.name_len) as usize], &h[f.value as usize..(f.value + f.value_len) as usize])
    }

    /// One Host field, at most one Content-Length field, and no header named in `Connection`
    /// but hop-by-hop ones (`close`, `keep-alive`, ...): the head can go upstream line by line.
    pub fn plain(&self) -> bool {
        self.plain
    }

    /// The (first) Host field's value.
    pub fn host(&self) -> Option<HeaderValue> {
        let f = self.fields[self.host? as usize];
        HeaderValue::from_maybe_shared(self.head.slice(f.value as usize..(f.value + f.value_len) as usize)).ok()
    }

    /// The (first) Host field's value.
    pub fn host_bytes(&self) -> Option<&[u8]> {
        Some(self.field(self.host? as usize).1)
    }

    /// The (first) Host field's value as text (`HeaderValue::to_str`), "" when there is none or
    /// it is not visible ASCII.
    pub fn host_str(&self) -> &str {
        self.host_bytes().and_then(|h| visible_ascii(h).ok()).unwrap_or("")
    }

    /// [`RawRequestHead::host_str`] as bytes (no UTF-8 check: visible ASCII is text).
    pub fn host_visible(&self) -> &[u8] {
        self.host_bytes().filter(|h| is_visible_ascii(h)).unwrap_or(b"")
    }

    /// The (first) Content-Length field's value as sent.
    pub fn content_length(&self) -> Option<&[u8]> {
        Some(self.field(self.content_length? as usize).1)
    }

    /// The header map, as the request would have had it: names lowercase, values sharing the
    /// head's bytes, several equal Content-Lengths folded into one.
    pub fn to_map(&self) -> HeaderMap {
        // Room for the few headers added on the way upstream without growing the map.
        let want = self.fields.len() + 2;
        let mut headers = match SPARE_MAP.with(std::cell::Cell::take) {
            Some(mut m) => {
                m.reserve(want);
                m
            }
            None => HeaderMap::with_capacity(want),
        };
        NAMES.with_borrow_mut(|names| {
            for (k, f) in self.fields.iter().enumerate() {
                let name = &self.head[f.name as usize..(f.name + f.name_len) as usize];
                // Checked by the parse (see `parse_head`): neither conversion fails.
                let (Some(name), Ok(value)) =
                    (names.name(k, name), HeaderValue::from_maybe_shared(self.head.slice(f.value as usize..(f.value + f.value_len) as usize)))
                else {
                    continue;
                };
                headers.append(name, value);
            }
        });
        if let Some(n) = self.normalized_length {
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(n));
        }
        headers
    }
}

impl Drop for RawRequestHead {
    fn drop(&mut self) {
        if self.fields.capacity() <= 256 {
            let v = std::mem::take(&mut self.fields);
            SPARE_FIELDS.with(|s| s.set(v));
        }
    }
}
