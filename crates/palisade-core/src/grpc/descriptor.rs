//! A gRPC service's message types from a `FileDescriptorSet` (the binary file
//! `protoc --descriptor_set_out=FILE --include_imports` writes), indexed for the scan: each
//! message's fields by number with their names and types, and each method's request and
//! response types by the request path (`/pkg.Service/Method`).
//!
//! The descriptor is itself a protobuf message; it is read with the wire-format reader of the
//! scan (the few fields of `descriptor.proto` the index needs), so that no code generator or
//! protobuf runtime is needed for one file read at configuration load.

use std::collections::HashMap;

use super::Reader;
use super::Wire;
use crate::{Error, ErrorKind};

/// Index of a message type in [`Descriptors`].
pub type MsgId = u32;

/// What the scan needs to know of a field's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    String,
    Bytes,
    Message(MsgId),
    /// Numbers, booleans, enums, groups: no text to judge.
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub number: u32,
    pub name: Box<str>,
    pub kind: FieldKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Full name without the leading dot (`pkg.Outer.Inner`).
    pub name: Box<str>,
    /// Sorted by number.
    pub fields: Vec<Field>,
    /// The entry type of a `map<K, V>` field (key is field 1, value field 2).
    pub map_entry: bool,
}

impl Message {
    pub fn field(&self, number: u32) -> Option<&Field> {
        self.fields.binary_search_by_key(&number, |f| f.number).ok().map(|i| &self.fields[i])
    }
}

/// One RPC method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Method {
    pub input: MsgId,
    pub output: MsgId,
}

/// The message types and methods of a descriptor set.
#[derive(Clone, Debug, Default)]
pub struct Descriptors {
    messages: Vec<Message>,
    by_name: HashMap<Box<str>, MsgId>,
    methods: HashMap<Box<str>, Method>,
}

/// Why a file is not a usable descriptor set ([`ErrorKind::Descriptor`]).
fn err(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Descriptor, message)
}

/// `FieldDescriptorProto.Type` values the scan tells apart.
const TYPE_STRING: u64 = 9;
const TYPE_GROUP: u64 = 10;
const TYPE_MESSAGE: u64 = 11;
const TYPE_BYTES: u64 = 12;
const TYPE_ENUM: u64 = 14;

/// A field as read, before its type name is resolved.
struct RawField {
    number: u32,
    name: String,
    ty: Option<u64>,
    type_name: Option<String>,
}

struct RawMessage {
    /// Full name with the leading dot.
    name: String,
    fields: Vec<RawField>,
    map_entry: bool,
}

struct RawMethod {
    path: String,
    input: String,
    output: String,
    /// The scope type names are resolved in (`.pkg`).
    scope: String,
}

/// Fields of one message of the descriptor, each value with its field number: a message that
/// does not parse is an error naming `what`.
fn fields<'a>(b: &'a [u8], what: &str) -> Result<Vec<(u32, Wire<'a>)>, Error> {
    let mut r = Reader { b, at: 0 };
    let mut out = Vec::new();
    loop {
        let start = r.at;
        match r.field() {
            None => return Ok(out),
            Some(Err(())) => return Err(err(format!("{what} is not in the protobuf wire format (at byte {start})"))),
            Some(Ok(f)) => out.push(f),
        }
    }
}

fn string(w: &Wire<'_>, what: &str) -> Result<String, Error> {
    match w {
        Wire::Len(b) => std::str::from_utf8(b).map(str::to_string).map_err(|_| err(format!("{what} is not UTF-8"))),
        _ => Err(err(format!("{what} has the wrong wire type"))),
    }
}

fn len<'a>(w: &Wire<'a>, what: &str) -> Result<&'a [u8], Error> {
    match w {
        Wire::Len(b) => Ok(b),
        _ => Err(err(format!("{what} has the wrong wire type"))),
    }
}

impl Descriptors {
    /// Read a `FileDescriptorSet`.
    pub fn decode(bytes: &[u8]) -> Result<Descriptors, Error> {
        if bytes.is_empty() {
            return Err(err("the file is empty"));
        }
        let top = fields(bytes, "the file").map_err(|e| {
            let text = std::str::from_utf8(bytes).is_ok();
            err(format!(
                "{e}: not a binary FileDescriptorSet{}",
                if text { " (a .proto source file? write the set with `protoc --descriptor_set_out=FILE --include_imports`)" } else { "" }
            ))
        })?;
        let mut messages = Vec::new();
        let mut methods = Vec::new();
        let mut files = 0;
        for (n, w) in &top {
            if *n != 1 {
                return Err(err(format!("field {n} at the top level: not a FileDescriptorSet (it holds only `file`, field 1)")));
            }
            files += 1;
            file(len(w, "a file")?, &mut messages, &mut methods)?;
        }
        if files == 0 {
            return Err(err("no file descriptors in the set"));
        }
        let mut d = Descriptors::default();
        for (i, m) in messages.iter().enumerate() {
            if d.by_name.insert(m.name[1..].into(), i as MsgId).is_some() {
                return Err(err(format!("message `{}` is defined twice", &m.name[1..])));
            }
        }
        for m in &messages {
            let mut fields = Vec::with_capacity(m.fields.len());
            for f in &m.fields {
                let resolved = match &f.type_name {
                    Some(t) if matches!(f.ty, None | Some(TYPE_MESSAGE) | Some(TYPE_GROUP)) => d.resolve(t, &m.name),
                    _ => None,
                };
                let kind = match (f.ty, resolved) {
                    (Some(TYPE_STRING), _) => FieldKind::String,
                    (Some(TYPE_BYTES), _) => FieldKind::Bytes,
                    (Some(TYPE_MESSAGE) | None, Some(id)) => FieldKind::Message(id),
                    (Some(TYPE_MESSAGE), None) => {
                        return Err(err(format!(
                            "field `{}.{}` has the unknown message type `{}` (was the set written with --include_imports?)",
                            &m.name[1..],
                            f.name,
                            f.type_name.as_deref().unwrap_or("")
                        )))
                    }
                    (Some(TYPE_GROUP | TYPE_ENUM), _) | (Some(_), _) => FieldKind::Other,
                    (None, None) => FieldKind::Other,
                };
                fields.push(Field { number: f.number, name: f.name.as_str().into(), kind });
            }
            fields.sort_by_key(|f| f.number);
            if let Some(w) = fields.windows(2).find(|w| w[0].number == w[1].number) {
                return Err(err(format!("message `{}` has two fields numbered {}", &m.name[1..], w[0].number)));
            }
            d.messages.push(Message { name: m.name[1..].into(), fields, map_entry: m.map_entry });
        }
        for rm in methods {
            let find = |t: &str| {
                d.resolve(t, &rm.scope)
                    .ok_or_else(|| err(format!("method `{}` has the unknown message type `{t}` (was the set written with --include_imports?)", rm.path)))
            };
            let m = Method { input: find(&rm.input)?, output: find(&rm.output)? };
            d.methods.insert(rm.path.into(), m);
        }
        Ok(d)
    }

    /// A type name as `descriptor.proto` writes it, seen from scope `.pkg.Msg`: fully qualified
    /// when it starts with a dot (what protoc writes), else looked up from the innermost scope
    /// outwards, as protobuf resolves names.
    fn resolve(&self, name: &str, scope: &str) -> Option<MsgId> {
        if let Some(full) = name.strip_prefix('.') {
            return self.by_name.get(full).copied();
        }
        let mut scope = scope.trim_start_matches('.');
        loop {
            let candidate = if scope.is_empty() { name.to_string() } else { format!("{scope}.{name}") };
            if let Some(id) = self.by_name.get(candidate.as_str()) {
                return Some(*id);
            }
            if scope.is_empty() {
                return None;
            }
            scope = scope.rfind('.').map_or("", |i| &scope[..i]);
        }
    }

    pub fn message(&self, id: MsgId) -> &Message {
        &self.messages[id as usize]
    }

    /// A message type by full name (`pkg.Msg`).
    pub fn message_named(&self, name: &str) -> Option<MsgId> {
        self.by_name.get(name.trim_start_matches('.')).copied()
    }

    /// The method a request path names (`/pkg.Service/Method`).
    pub fn method(&self, path: &str) -> Option<Method> {
        self.methods.get(path).copied()
    }

    /// Number of message types and of methods, for reports.
    pub fn counts(&self) -> (usize, usize) {
        (self.messages.len(), self.methods.len())
    }
}

/// Read one `FileDescriptorProto`: its messages (nested ones too) and its services' methods.
fn file(b: &[u8], messages: &mut Vec<RawMessage>, methods: &mut Vec<RawMethod>) -> Result<(), Error> {
    let fs = fields(b, "a file descriptor")?;
    let mut name = String::new();
    let mut package = String::new();
    for (n, w) in &fs {
        match n {
            1 => name = string(w, "a file name")?,
            2 => package = string(w, "a package name")?,
            _ => {}
        }
    }
    let what = if name.is_empty() { "a file".to_string() } else { format!("file `{name}`") };
    let scope = if package.is_empty() { String::new() } else { format!(".{package}") };
    for (n, w) in &fs {
        match n {
            4 => message(len(w, &what)?, &scope, &what, messages)?,
            6 => service(len(w, &what)?, &package, &scope, &what, methods)?,
            _ => {}
        }
    }
    Ok(())
}

/// Read one `DescriptorProto` in `scope` (`.pkg` or `.pkg.Outer`), with its nested types.
fn message(b: &[u8], scope: &str, file: &str, out: &mut Vec<RawMessage>) -> Result<(), Error> {
    let fs = fields(b, &format!("a message of {file}"))?;
    let mut name = String::new();
    for (n, w) in &fs {
        if *n == 1 {
            name = string(w, "a message name")?;
        }
    }
    if name.is_empty() {
        return Err(err(format!("a message of {file} has no name")));
    }
    let full = format!("{scope}.{name}");
    let mut m = RawMessage { name: full.clone(), fields: Vec::new(), map_entry: false };
    let mut nested = Vec::new();
    for (n, w) in &fs {
        match n {
            2 => m.fields.push(field(len(w, &full)?, &full)?),
            3 => nested.push(len(w, &full)?),
            7 => {
                // MessageOptions: map_entry is field 7.
                for (on, ow) in fields(len(w, &full)?, &format!("the options of `{}`", &full[1..]))? {
                    if let (7, Wire::Varint(v)) = (on, ow) {
                        m.map_entry = v != 0;
                    }
                }
            }
            _ => {}
        }
    }
    out.push(m);
    for n in nested {
        message(n, &full, file, out)?;
    }
    Ok(())
}

fn field(b: &[u8], msg: &str) -> Result<RawField, Error> {
    let what = format!("a field of `{}`", &msg[1..]);
    let mut f = RawField { number: 0, name: String::new(), ty: None, type_name: None };
    for (n, w) in fields(b, &what)? {
        match (n, w) {
            (1, w) => f.name = string(&w, &what)?,
            (3, Wire::Varint(v)) => f.number = u32::try_from(v).unwrap_or(0),
            (5, Wire::Varint(v)) => f.ty = Some(v),
            (6, w) => f.type_name = Some(string(&w, &what)?),
            _ => {}
        }
    }
    if f.name.is_empty() || f.number == 0 || f.number > (1 << 29) - 1 {
        return Err(err(format!("{what} has no name or no valid number")));
    }
    Ok(f)
}

fn service(b: &[u8], package: &str, scope: &str, file: &str, out: &mut Vec<RawMethod>) -> Result<(), Error> {
    let fs = fields(b, &format!("a service of {file}"))?;
    let mut name = String::new();
    for (n, w) in &fs {
        if *n == 1 {
            name = string(w, "a service name")?;
        }
    }
    if name.is_empty() {
        return Err(err(format!("a service of {file} has no name")));
    }
    let full = if package.is_empty() { name } else { format!("{package}.{name}") };
    for (n, w) in &fs {
        if *n != 2 {
            continue;
        }
        let what = format!("a method of service `{full}`");
        let mut m = RawMethod { path: String::new(), input: String::new(), output: String::new(), scope: scope.to_string() };
        let mut mname = String::new();
        for (mn, mw) in fields(len(w, &what)?, &what)? {
            match mn {
                1 => mname = string(&mw, &what)?,
                2 => m.input = string(&mw, &what)?,
                3 => m.output = string(&mw, &what)?,
                _ => {}
            }
        }
        if mname.is_empty() || m.input.is_empty() || m.output.is_empty() {
            return Err(err(format!("{what} lacks its name, input type or output type")));
        }
        m.path = format!("/{full}/{mname}");
        out.push(m);
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A protobuf encoder for tests: messages built field by field.
    #[derive(Default, Clone)]
    pub struct Enc(pub Vec<u8>);

    impl Enc {
        fn varint(&mut self, mut v: u64) {
            loop {
                let b = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    self.0.push(b);
                    return;
                }
                self.0.push(b | 0x80);
            }
        }
        pub fn int(mut self, field: u32, v: u64) -> Enc {
            self.varint(u64::from(field) << 3);
            self.varint(v);
            self
        }
        pub fn bytes(mut self, field: u32, b: &[u8]) -> Enc {
            self.varint(u64::from(field) << 3 | 2);
            self.varint(b.len() as u64);
            self.0.extend_from_slice(b);
            self
        }
        pub fn str(self, field: u32, s: &str) -> Enc {
            self.bytes(field, s.as_bytes())
        }
        pub fn msg(self, field: u32, m: Enc) -> Enc {
            self.bytes(field, &m.0)
        }
    }

    /// `FieldDescriptorProto`: name, number, type, optional type name.
    pub fn field(name: &str, number: u64, ty: u64, type_name: Option<&str>) -> Enc {
        let f = Enc::default().str(1, name).int(3, number).int(4, 1).int(5, ty);
        match type_name {
            Some(t) => f.str(6, t),
            None => f,
        }
    }

    /// The set of this proto file, as protoc writes it:
    ///
    /// ```proto
    /// syntax = "proto3";
    /// package demo.v1;
    /// message User {
    ///   string name = 1; int64 id = 2; bytes avatar = 3; map<string, string> labels = 4;
    ///   Address address = 5; repeated string tags = 6; Role role = 7;
    ///   enum Role { ROLE_UNSPECIFIED = 0; }
    /// }
    /// message Address { string street = 1; }
    /// message GetUserRequest { User user = 1; string query = 2; }
    /// message GetUserReply { User user = 1; }
    /// service Users { rpc Get(GetUserRequest) returns (GetUserReply); }
    /// ```
    pub fn demo_set() -> Vec<u8> {
        let entry = Enc::default()
            .str(1, "LabelsEntry")
            .msg(2, field("key", 1, TYPE_STRING, None))
            .msg(2, field("value", 2, TYPE_STRING, None))
            .msg(7, Enc::default().int(7, 1));
        let user = Enc::default()
            .str(1, "User")
            .msg(2, field("name", 1, TYPE_STRING, None))
            .msg(2, field("id", 2, 3, None))
            .msg(2, field("avatar", 3, TYPE_BYTES, None))
            .msg(2, field("labels", 4, TYPE_MESSAGE, Some(".demo.v1.User.LabelsEntry")))
            .msg(2, field("address", 5, TYPE_MESSAGE, Some(".demo.v1.Address")))
            .msg(2, field("tags", 6, TYPE_STRING, None))
            .msg(2, field("role", 7, TYPE_ENUM, Some(".demo.v1.User.Role")))
            .msg(3, entry)
            .msg(4, Enc::default().str(1, "Role"));
        let address = Enc::default().str(1, "Address").msg(2, field("street", 1, TYPE_STRING, None));
        let req =
            Enc::default().str(1, "GetUserRequest").msg(2, field("user", 1, TYPE_MESSAGE, Some(".demo.v1.User"))).msg(2, field("query", 2, TYPE_STRING, None));
        let reply = Enc::default().str(1, "GetUserReply").msg(2, field("user", 1, TYPE_MESSAGE, Some(".demo.v1.User")));
        let service = Enc::default().str(1, "Users").msg(2, Enc::default().str(1, "Get").str(2, ".demo.v1.GetUserRequest").str(3, ".demo.v1.GetUserReply"));
        let file =
            Enc::default().str(1, "demo.proto").str(2, "demo.v1").msg(4, user).msg(4, address).msg(4, req).msg(4, reply).msg(6, service).str(12, "proto3");
        Enc::default().msg(1, file).0
    }

    #[test]
    fn messages_and_methods_are_indexed_by_full_name_and_request_path() {
        let d = Descriptors::decode(&demo_set()).unwrap();
        assert_eq!(d.counts(), (5, 1));
        let m = d.method("/demo.v1.Users/Get").unwrap();
        assert_eq!(d.message(m.input).name.as_ref(), "demo.v1.GetUserRequest");
        assert_eq!(d.message(m.output).name.as_ref(), "demo.v1.GetUserReply");
        assert!(d.method("/demo.v1.Users/Put").is_none());
        let user = d.message(d.message_named("demo.v1.User").unwrap());
        assert_eq!(user.field(1).map(|f| (&*f.name, f.kind)), Some(("name", FieldKind::String)));
        assert_eq!(user.field(2).unwrap().kind, FieldKind::Other);
        assert_eq!(user.field(3).unwrap().kind, FieldKind::Bytes);
        assert_eq!(user.field(7).unwrap().kind, FieldKind::Other);
        let FieldKind::Message(entry) = user.field(4).unwrap().kind else { panic!() };
        assert!(d.message(entry).map_entry);
        assert_eq!(&*d.message(entry).name, "demo.v1.User.LabelsEntry");
        assert!(user.field(8).is_none());
    }

    #[test]
    fn relative_type_names_resolve_from_the_innermost_scope() {
        // `Inner` inside `a.Outer` refers to `a.Outer.Inner`; `Top` to `a.Top`.
        let outer = Enc::default()
            .str(1, "Outer")
            .msg(2, field("i", 1, TYPE_MESSAGE, Some("Inner")))
            .msg(2, field("t", 2, TYPE_MESSAGE, Some("Top")))
            .msg(3, Enc::default().str(1, "Inner"));
        let top = Enc::default().str(1, "Top");
        let file = Enc::default().str(1, "a.proto").str(2, "a").msg(4, outer).msg(4, top);
        let d = Descriptors::decode(&Enc::default().msg(1, file).0).unwrap();
        let o = d.message(d.message_named("a.Outer").unwrap());
        assert_eq!(o.field(1).unwrap().kind, FieldKind::Message(d.message_named("a.Outer.Inner").unwrap()));
        assert_eq!(o.field(2).unwrap().kind, FieldKind::Message(d.message_named(".a.Top").unwrap()));
    }

    #[test]
    fn bad_files_are_refused_with_a_reason() {
        let e = |b: &[u8]| {
            let e = Descriptors::decode(b).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Descriptor);
            e.to_string()
        };
        assert_eq!(e(b""), "the file is empty");
        let text = e(b"syntax = \"proto3\";\npackage demo;\nmessage A { string b = 1; }\n");
        assert!(text.contains("not a binary FileDescriptorSet") && text.contains(".proto source"), "{text}");
        assert!(e(&[0xff, 0xff]).contains("not in the protobuf wire format"));
        // A message of another kind: field 2 at the top.
        assert!(e(&Enc::default().str(2, "x").0).contains("not a FileDescriptorSet"));
        // A type from a file left out of the set (written without --include_imports).
        let m = Enc::default().str(1, "A").msg(2, field("ts", 1, TYPE_MESSAGE, Some(".google.protobuf.Timestamp")));
        let set = Enc::default().msg(1, Enc::default().str(1, "a.proto").msg(4, m)).0;
        let text = e(&set);
        assert!(text.contains("`A.ts`") && text.contains("google.protobuf.Timestamp") && text.contains("--include_imports"), "{text}");
        // A method whose type is unknown.
        let svc = Enc::default().str(1, "S").msg(2, Enc::default().str(1, "M").str(2, ".Nope").str(3, ".Nope"));
        let set = Enc::default().msg(1, Enc::default().str(1, "a.proto").msg(6, svc)).0;
        assert!(e(&set).contains("`/S/M`"), "{}", e(&set));
        // Two fields with one number; a field without a number.
        let m = Enc::default().str(1, "A").msg(2, field("x", 1, TYPE_STRING, None)).msg(2, field("y", 1, TYPE_STRING, None));
        assert!(e(&Enc::default().msg(1, Enc::default().msg(4, m)).0).contains("two fields numbered 1"));
        let m = Enc::default().str(1, "A").msg(2, Enc::default().str(1, "x"));
        assert!(e(&Enc::default().msg(1, Enc::default().msg(4, m)).0).contains("no valid number"));
    }

    /// Arbitrary bytes and every truncation of a valid set: an error or an index, never a panic.
    #[test]
    fn arbitrary_and_truncated_bytes_never_panic() {
        let set = demo_set();
        for n in 0..set.len() {
            let _ = Descriptors::decode(&set[..n]);
        }
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut b = set.clone();
            let i = (x as usize) % b.len();
            b[i] ^= (x >> 32) as u8 | 1;
            let _ = Descriptors::decode(&b);
        }
    }
}
