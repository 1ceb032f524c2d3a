//! Grammar classes of SQL words (MySQL, PostgreSQL, MSSQL, Oracle, SQLite). A word is classified
//! by its role in the grammar, not by how "dangerous" it looks: the analyser decides from the
//! structure around it.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kw {
    /// Not a keyword: an identifier (column, table, alias) or a function name.
    None,
    // Set operators and query clauses.
    Union,
    Select,
    From,
    Where,
    Having,
    Order,
    Group,
    By,
    Limit,
    Offset,
    Into,
    Outfile,
    As,
    AscDesc,
    Join,
    JoinMod,
    On,
    Procedure,
    Top,
    SetQuant,
    For,
    // Expression operators.
    Logic,
    Not,
    /// LIKE, RLIKE, REGEXP, IN, IS, BETWEEN, SOUNDS, GLOB, ILIKE, SIMILAR, ESCAPE, DIV, MOD, COLLATE.
    BinOp,
    /// NULL, TRUE, FALSE, CURRENT_USER... (value keywords).
    Value,
    /// BINARY, INTERVAL, EXISTS, ANY, SOME, PRIOR (prefix operators).
    Prefix,
    Case,
    CaseMid,
    End,
    // Statements.
    Stmt(Stmt),
    Delay,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stmt {
    Drop,
    Create,
    Alter,
    Truncate,
    Exec,
    Declare,
    Shutdown,
    Waitfor,
    Insert,
    Update,
    Delete,
    Set,
    Grant,
    Load,
    Copy,
    Begin,
    Call,
    If,
    Use,
    Kill,
    Show,
    Prepare,
}

/// Function roles, for the functions that matter when they are called after a breakout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    /// Not a function we know: a call of it is still SQL structure, but weaker.
    Unknown,
    /// Ordinary SQL functions (string, math, conversion, conditional, aggregate).
    Common,
    /// Reveal the server: version(), user(), database(), db_name()...
    Info,
    /// Time-based blind: sleep, benchmark, pg_sleep, dbms_lock.sleep, dbms_pipe.receive_message.
    Time,
    /// Error-based extraction: extractvalue, updatexml, geometry constructors, xmltype...
    Error,
    /// File access, command execution, network: load_file, xp_cmdshell, utl_http.request...
    Oob,
}

fn lower<'b>(w: &str, buf: &'b mut [u8; 48]) -> Option<&'b str> {
    let b = w.as_bytes();
    if b.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(b) {
        *d = s.to_ascii_lowercase();
    }
    std::str::from_utf8(&buf[..b.len()]).ok()
}

/// The class of a word (ASCII case-insensitive). Most words of a value are not keywords: a
/// perfect hash of the word's length and four of its bytes picks the one keyword it can be,
/// then one comparison decides; [`classify`] is the grammar itself
/// (`tests::the_keyword_table_agrees_with_the_grammar`, and `keyword_reference` in the tests:
/// the sorted-table search this replaced).
#[inline]
pub(crate) fn keyword(w: &str) -> Kw {
    let b = w.as_bytes();
    let t = &*KEYWORDS;
    if b.len() < 2 || b.len() > t.max_len {
        return Kw::None;
    }
    let slot = t.slots[hash_slot(hash_key(b), t.mul)];
    if slot == 0 {
        return Kw::None;
    }
    let (k, kw) = t.words[slot as usize - 1];
    if k.len() == b.len() && k.as_bytes().eq_ignore_ascii_case(b) {
        kw
    } else {
        Kw::None
    }
}

/// Bits of the perfect hash's table index.
const SLOT_BITS: u32 = 11;

/// The hash key of a word of two bytes or more: its length and its first two and last two
/// bytes with `0x20` set (ASCII letters folded to lowercase, other bytes kept apart by the
/// comparison that follows): a word equal to a keyword ignoring ASCII case has its key.
#[inline]
fn hash_key(b: &[u8]) -> u64 {
    let n = b.len();
    let k = u32::from_le_bytes([b[0], b[1], b[n - 2], b[n - 1]]) | 0x2020_2020;
    u64::from(k) | (n as u64) << 32
}

#[inline]
fn hash_slot(key: u64, mul: u64) -> usize {
    (key.wrapping_mul(mul) >> (64 - SLOT_BITS)) as usize
}

/// The keyword table: (word, class) pairs, and their perfect hash (a multiplier found at start
/// that sends every keyword to its own slot; `slots` holds 1 + the index of the pair).
struct Keywords {
    words: Vec<(&'static str, Kw)>,
    slots: Box<[u8; 1 << SLOT_BITS]>,
    mul: u64,
    max_len: usize,
}

/// Every keyword: the sqli gate words (every keyword is one: `tests::gate_words_cover_the_keywords`)
/// that [`classify`] classifies, and `\\n` (MySQL's `\N`).
pub(crate) fn keyword_words() -> Vec<(&'static str, Kw)> {
    let mut v: Vec<(&'static str, Kw)> = super::GATE_WORDS.iter().chain(&["\\n"]).map(|w| (*w, classify(w))).filter(|(_, k)| *k != Kw::None).collect();
    v.sort_unstable_by(|a, b| a.0.cmp(b.0));
    v.dedup_by(|a, b| a.0 == b.0);
    v
}

static KEYWORDS: std::sync::LazyLock<Keywords> = std::sync::LazyLock::new(|| {
    let words = keyword_words();
    assert!(words.len() < 255);
    let max_len = words.iter().map(|(w, _)| w.len()).max().unwrap_or(0);
    // Odd multipliers from a fixed sequence (the same table every run): the first without a
    // collision (`tests::the_keyword_hash_is_perfect`; a few dozen tries for ~125 words in
    // 2,048 slots).
    let mut mul = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..100_000 {
        let mut slots = Box::new([0u8; 1 << SLOT_BITS]);
        let free = words.iter().enumerate().all(|(i, (w, _))| {
            let s = &mut slots[hash_slot(hash_key(w.as_bytes()), mul)];
            let was = *s;
            *s = i as u8 + 1;
            was == 0
        });
        if free {
            return Keywords { words, slots, mul, max_len };
        }
        mul = mul.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407) | 1;
    }
    panic!("no perfect hash for the SQL keywords");
});

/// The grammar class of a lowercase word (the reference [`keyword`] is built from).
pub(crate) fn classify(l: &str) -> Kw {
    match l {
        "union" | "intersect" | "except" | "minus" => Kw::Union,
        "select" => Kw::Select,
        "from" => Kw::From,
        "where" => Kw::Where,
        "having" => Kw::Having,
        "order" => Kw::Order,
        "group" => Kw::Group,
        "by" => Kw::By,
        "limit" => Kw::Limit,
        "offset" | "fetch" => Kw::Offset,
        "into" => Kw::Into,
        "outfile" | "dumpfile" => Kw::Outfile,
        "as" => Kw::As,
        "asc" | "desc" => Kw::AscDesc,
        "join" | "straight_join" => Kw::Join,
        "left" | "right" | "inner" | "outer" | "cross" | "natural" | "full" => Kw::JoinMod,
        "on" | "using" => Kw::On,
        "procedure" => Kw::Procedure,
        "top" => Kw::Top,
        "all" | "distinct" | "distinctrow" => Kw::SetQuant,
        "for" => Kw::For,
        "and" | "or" | "xor" => Kw::Logic,
        "not" => Kw::Not,
        "like" | "rlike" | "regexp" | "in" | "is" | "between" | "sounds" | "glob" | "ilike" | "similar" | "escape" | "div" | "mod" | "collate" | "match"
        | "against" => Kw::BinOp,
        "null" | "true" | "false" | "unknown" | "current_user" | "session_user" | "system_user" | "current_date" | "current_time" | "current_timestamp"
        | "localtime" | "localtimestamp" | "sysdate" | "rownum" | "default" | "\\n" => Kw::Value,
        "binary" | "interval" | "exists" | "any" | "some" | "prior" | "connect_by_root" => Kw::Prefix,
        "case" => Kw::Case,
        "when" | "then" | "else" => Kw::CaseMid,
        "end" => Kw::End,
        "drop" => Kw::Stmt(Stmt::Drop),
        "create" => Kw::Stmt(Stmt::Create),
        "alter" => Kw::Stmt(Stmt::Alter),
        "truncate" => Kw::Stmt(Stmt::Truncate),
        "exec" | "execute" => Kw::Stmt(Stmt::Exec),
        "declare" => Kw::Stmt(Stmt::Declare),
        "shutdown" => Kw::Stmt(Stmt::Shutdown),
        "waitfor" => Kw::Stmt(Stmt::Waitfor),
        "insert" | "replace" | "merge" | "upsert" => Kw::Stmt(Stmt::Insert),
        "update" => Kw::Stmt(Stmt::Update),
        "delete" => Kw::Stmt(Stmt::Delete),
        "set" => Kw::Stmt(Stmt::Set),
        "grant" | "revoke" => Kw::Stmt(Stmt::Grant),
        "load" => Kw::Stmt(Stmt::Load),
        "copy" => Kw::Stmt(Stmt::Copy),
        "begin" => Kw::Stmt(Stmt::Begin),
        "call" => Kw::Stmt(Stmt::Call),
        "if" => Kw::Stmt(Stmt::If),
        "use" => Kw::Stmt(Stmt::Use),
        "kill" => Kw::Stmt(Stmt::Kill),
        "show" => Kw::Stmt(Stmt::Show),
        "prepare" | "deallocate" => Kw::Stmt(Stmt::Prepare),
        "delay" | "time" => Kw::Delay,
        _ => Kw::None,
    }
}

/// Classifies a function name (called with `(`), qualified names included.
pub(crate) fn function(w: &str) -> Func {
    let mut buf = [0u8; 48];
    let Some(l) = lower(w, &mut buf) else { return Func::Unknown };
    // Strip a schema prefix for the names that are unambiguous without it.
    let last = l.rsplit('.').next().unwrap_or(l);
    match l {
        "dbms_lock.sleep" | "dbms_session.sleep" | "dbms_pipe.receive_message" | "sys.dbms_lock.sleep" => return Func::Time,
        "utl_http.request"
        | "utl_inaddr.get_host_address"
        | "utl_inaddr.get_host_name"
        | "utl_file.fopen"
        | "dbms_ldap.init"
        | "dbms_java.runjava"
        | "sys.dbms_export_extension.get_domain_index_tables"
        | "dbms_xmlquery.newcontext"
        | "dbms_scheduler.create_job" => return Func::Oob,
        "ctxsys.drithsx.sn" | "ctxsys.ctx_report.token_type" | "dbms_xmlgen.getxml" | "sys.dbms_xmlgen.getxml" => return Func::Error,
        _ => {}
    }
    match last {
        "sleep" | "benchmark" | "pg_sleep" | "pg_sleep_for" | "pg_sleep_until" | "randomblob" | "receive_message" => Func::Time,
        "extractvalue"
        | "updatexml"
        | "xmltype"
        | "geometrycollection"
        | "polygon"
        | "multipoint"
        | "multipolygon"
        | "linestring"
        | "multilinestring"
        | "name_const"
        | "exp"
        | "gtid_subset"
        | "gtid_subtract"
        | "json_keys"
        | "st_latfromgeohash"
        | "st_longfromgeohash"
        | "st_pointfromgeohash"
        | "xmlelement"
        | "xmlagg"
        | "getxml"
        | "drithsx" => Func::Error,
        "load_file"
        | "xp_cmdshell"
        | "xp_dirtree"
        | "xp_fileexist"
        | "xp_regread"
        | "xp_regwrite"
        | "xp_servicecontrol"
        | "xp_availablemedia"
        | "xp_subdirs"
        | "xp_ntsec_enumdomains"
        | "xp_terminate_process"
        | "xp_makecab"
        | "sp_oacreate"
        | "sp_oamethod"
        | "sp_executesql"
        | "sp_makewebtask"
        | "sp_addlogin"
        | "sp_addsrvrolemember"
        | "sp_password"
        | "sp_configure"
        | "openrowset"
        | "opendatasource"
        | "openquery"
        | "lo_import"
        | "lo_export"
        | "lo_get"
        | "pg_read_file"
        | "pg_read_binary_file"
        | "pg_ls_dir"
        | "pg_stat_file"
        | "dblink"
        | "dblink_exec"
        | "load_extension"
        | "httpuritype"
        | "request"
        | "get_host_address"
        | "get_host_name"
        | "fopen"
        | "runjava"
        | "sys_eval"
        | "sys_exec"
        | "writefile"
        | "readfile" => Func::Oob,
        "version" | "database" | "user" | "schema" | "current_user" | "system_user" | "session_user" | "db_name" | "user_name" | "suser_name"
        | "suser_sname" | "host_name" | "is_srvrolemember" | "is_member" | "current_database" | "current_schema" | "pg_backend_pid" | "sqlite_version"
        | "connection_id" | "last_insert_id" | "sys_context" | "userenv" | "uid" | "serverproperty" | "object_id" | "object_name" | "col_name"
        | "has_dbaccess" | "inet_server_addr" | "getuserid" | "current_setting" | "sqlite_source_id" => Func::Info,
        "char" | "chr" | "nchar" | "concat" | "concat_ws" | "group_concat" | "string_agg" | "listagg" | "ascii" | "ord" | "unicode" | "substring"
        | "substr" | "mid" | "left" | "right" | "length" | "len" | "char_length" | "lower" | "upper" | "lcase" | "ucase" | "hex" | "unhex" | "bin" | "conv"
        | "md5" | "sha1" | "sha2" | "crc32" | "if" | "iif" | "ifnull" | "isnull" | "nullif" | "nvl" | "nvl2" | "coalesce" | "decode" | "count" | "sum"
        | "min" | "max" | "avg" | "elt" | "make_set" | "field" | "find_in_set" | "instr" | "locate" | "position" | "charindex" | "strcmp" | "replace"
        | "reverse" | "repeat" | "space" | "lpad" | "rpad" | "trim" | "ltrim" | "rtrim" | "rand" | "random" | "floor" | "ceil" | "ceiling" | "round"
        | "abs" | "pow" | "power" | "sqrt" | "cast" | "convert" | "to_char" | "to_number" | "to_date" | "quote" | "quotename" | "cot" | "aes_encrypt"
        | "aes_decrypt" | "encode" | "compress" | "uncompress" | "export_set" | "bit_length" | "octet_length" | "soundex" | "typeof" | "glob" | "like"
        | "zeroblob" | "json_extract" | "row" | "exists" | "unistr" | "utl_raw" | "cast_to_raw" | "rawtohex" | "regexp_substr" | "regexp_like" | "stuff"
        | "datalength" | "db_id" | "waitfor" => Func::Common,
        _ => Func::Unknown,
    }
}
