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
/// (`tests::the_keyword_table_agrees_with_the_grammar`,
/// `tests::keyword_agrees_with_the_grammar_on_near_misses`).
#[inline]
pub(crate) fn keyword(w: &str) -> Kw {
    keyword_bytes(w.as_bytes())
}

/// [`keyword`] of a word given as bytes (a run of ASCII letters and `_` needs no UTF-8 check).
#[inline]
pub(crate) fn keyword_bytes(b: &[u8]) -> Kw {
    if b.len() < 2 || b.len() > MAX_LEN {
        return Kw::None;
    }
    let slot = SLOTS[hash_slot(hash_key(b), MUL)];
    if slot == 0 {
        return Kw::None;
    }
    let (k, kw) = WORDS[slot as usize - 1];
    if k.len() == b.len() && k.as_bytes().eq_ignore_ascii_case(b) {
        kw
    } else {
        Kw::None
    }
}

/// [`keyword`] of the word `b` whose [`word_key`] times [`MUL`] is `mixed` (for a caller that
/// uses the product for something else too: [`super::inert_with`]'s word set).
#[inline(always)]
pub(crate) fn keyword_mixed(b: &[u8], mixed: u64) -> Kw {
    if b.len() < 2 || b.len() > MAX_LEN {
        return Kw::None;
    }
    let slot = SLOTS[(mixed >> (64 - SLOT_BITS)) as usize];
    if slot == 0 {
        return Kw::None;
    }
    let (k, kw) = WORDS[slot as usize - 1];
    if k.len() == b.len() && k.as_bytes().eq_ignore_ascii_case(b) {
        kw
    } else {
        Kw::None
    }
}

/// The [`hash_key`] of a word of any length (a word of one byte folds it as its first and last
/// bytes): words equal ignoring ASCII case have the same.
#[inline(always)]
pub(crate) const fn word_key(b: &[u8]) -> u64 {
    match b.len() {
        0 => 0,
        1 => (u32::from_le_bytes([b[0], 0, 0, b[0]]) | 0x2020_2020) as u64 | 1 << 32,
        _ => hash_key(b),
    }
}

/// Bits of the perfect hash's table index.
const SLOT_BITS: u32 = 11;

/// The hash key of a word of two bytes or more: its length and its first two and last two
/// bytes with `0x20` set (ASCII letters folded to lowercase, other bytes kept apart by the
/// comparison that follows): a word equal to a keyword ignoring ASCII case has its key.
#[inline]
const fn hash_key(b: &[u8]) -> u64 {
    let n = b.len();
    let k = u32::from_le_bytes([b[0], b[1], b[n - 2], b[n - 1]]) | 0x2020_2020;
    k as u64 | (n as u64) << 32
}

#[inline]
const fn hash_slot(key: u64, mul: u64) -> usize {
    (key.wrapping_mul(mul) >> (64 - SLOT_BITS)) as usize
}

/// The keyword table, built at compile time (it was a `LazyLock` searched for its multiplier at
/// start: every call paid the initialisation check, and the table's pointers and multiplier
/// were loads). [`WORDS`] is [`keyword_words`] written out (`tests::the_const_table_is_keyword_words`),
/// sorted; [`SLOTS`] holds 1 + the index in [`WORDS`] of the one keyword of each slot, for
/// [`MUL`], the first multiplier of the sequence the old start-up search tried that sends
/// every keyword to its own slot (a collision fails the build).
const WORDS: [(&str, Kw); 115] = [
    ("\\n", Kw::Value),
    ("against", Kw::BinOp),
    ("all", Kw::SetQuant),
    ("alter", Kw::Stmt(Stmt::Alter)),
    ("and", Kw::Logic),
    ("any", Kw::Prefix),
    ("as", Kw::As),
    ("asc", Kw::AscDesc),
    ("begin", Kw::Stmt(Stmt::Begin)),
    ("between", Kw::BinOp),
    ("binary", Kw::Prefix),
    ("by", Kw::By),
    ("call", Kw::Stmt(Stmt::Call)),
    ("case", Kw::Case),
    ("collate", Kw::BinOp),
    ("connect_by_root", Kw::Prefix),
    ("copy", Kw::Stmt(Stmt::Copy)),
    ("create", Kw::Stmt(Stmt::Create)),
    ("cross", Kw::JoinMod),
    ("current_date", Kw::Value),
    ("current_time", Kw::Value),
    ("current_timestamp", Kw::Value),
    ("current_user", Kw::Value),
    ("deallocate", Kw::Stmt(Stmt::Prepare)),
    ("declare", Kw::Stmt(Stmt::Declare)),
    ("default", Kw::Value),
    ("delay", Kw::Delay),
    ("delete", Kw::Stmt(Stmt::Delete)),
    ("desc", Kw::AscDesc),
    ("distinct", Kw::SetQuant),
    ("distinctrow", Kw::SetQuant),
    ("div", Kw::BinOp),
    ("drop", Kw::Stmt(Stmt::Drop)),
    ("dumpfile", Kw::Outfile),
    ("else", Kw::CaseMid),
    ("end", Kw::End),
    ("escape", Kw::BinOp),
    ("except", Kw::Union),
    ("exec", Kw::Stmt(Stmt::Exec)),
    ("execute", Kw::Stmt(Stmt::Exec)),
    ("exists", Kw::Prefix),
    ("false", Kw::Value),
    ("fetch", Kw::Offset),
    ("for", Kw::For),
    ("from", Kw::From),
    ("full", Kw::JoinMod),
    ("glob", Kw::BinOp),
    ("grant", Kw::Stmt(Stmt::Grant)),
    ("group", Kw::Group),
    ("having", Kw::Having),
    ("if", Kw::Stmt(Stmt::If)),
    ("ilike", Kw::BinOp),
    ("in", Kw::BinOp),
    ("inner", Kw::JoinMod),
    ("insert", Kw::Stmt(Stmt::Insert)),
    ("intersect", Kw::Union),
    ("interval", Kw::Prefix),
    ("into", Kw::Into),
    ("is", Kw::BinOp),
    ("join", Kw::Join),
    ("kill", Kw::Stmt(Stmt::Kill)),
    ("left", Kw::JoinMod),
    ("like", Kw::BinOp),
    ("limit", Kw::Limit),
    ("load", Kw::Stmt(Stmt::Load)),
    ("localtime", Kw::Value),
    ("localtimestamp", Kw::Value),
    ("match", Kw::BinOp),
    ("merge", Kw::Stmt(Stmt::Insert)),
    ("minus", Kw::Union),
    ("mod", Kw::BinOp),
    ("natural", Kw::JoinMod),
    ("not", Kw::Not),
    ("null", Kw::Value),
    ("offset", Kw::Offset),
    ("on", Kw::On),
    ("or", Kw::Logic),
    ("order", Kw::Order),
    ("outer", Kw::JoinMod),
    ("outfile", Kw::Outfile),
    ("prepare", Kw::Stmt(Stmt::Prepare)),
    ("prior", Kw::Prefix),
    ("procedure", Kw::Procedure),
    ("regexp", Kw::BinOp),
    ("replace", Kw::Stmt(Stmt::Insert)),
    ("revoke", Kw::Stmt(Stmt::Grant)),
    ("right", Kw::JoinMod),
    ("rlike", Kw::BinOp),
    ("rownum", Kw::Value),
    ("select", Kw::Select),
    ("session_user", Kw::Value),
    ("set", Kw::Stmt(Stmt::Set)),
    ("show", Kw::Stmt(Stmt::Show)),
    ("shutdown", Kw::Stmt(Stmt::Shutdown)),
    ("similar", Kw::BinOp),
    ("some", Kw::Prefix),
    ("sounds", Kw::BinOp),
    ("straight_join", Kw::Join),
    ("sysdate", Kw::Value),
    ("system_user", Kw::Value),
    ("then", Kw::CaseMid),
    ("time", Kw::Delay),
    ("top", Kw::Top),
    ("true", Kw::Value),
    ("truncate", Kw::Stmt(Stmt::Truncate)),
    ("union", Kw::Union),
    ("unknown", Kw::Value),
    ("update", Kw::Stmt(Stmt::Update)),
    ("upsert", Kw::Stmt(Stmt::Insert)),
    ("use", Kw::Stmt(Stmt::Use)),
    ("using", Kw::On),
    ("waitfor", Kw::Stmt(Stmt::Waitfor)),
    ("when", Kw::CaseMid),
    ("where", Kw::Where),
    ("xor", Kw::Logic),
];

/// The perfect hash's multiplier (see [`WORDS`]; [`super::inert_with`]'s word set takes its
/// bit from the same product).
pub(crate) const MUL: u64 = 0x4834_9983_c3cd_98bd;

/// The longest keyword.
const MAX_LEN: usize = {
    let mut m = 0;
    let mut i = 0;
    while i < WORDS.len() {
        if WORDS[i].0.len() > m {
            m = WORDS[i].0.len();
        }
        i += 1;
    }
    m
};

static SLOTS: [u8; 1 << SLOT_BITS] = {
    let mut slots = [0u8; 1 << SLOT_BITS];
    let mut i = 0;
    while i < WORDS.len() {
        let s = hash_slot(hash_key(WORDS[i].0.as_bytes()), MUL);
        assert!(slots[s] == 0, "the keyword hash has a collision: pick another MUL");
        slots[s] = i as u8 + 1;
        i += 1;
    }
    slots
};

/// Every keyword: the sqli gate words (every keyword is one: `tests::gate_words_cover_the_keywords`)
/// that [`classify`] classifies, and `\\n` (MySQL's `\N`).
#[cfg(test)]
pub(crate) fn keyword_words() -> Vec<(&'static str, Kw)> {
    let mut v: Vec<(&'static str, Kw)> = super::GATE_WORDS.iter().chain(&["\\n"]).map(|w| (*w, classify(w))).filter(|(_, k)| *k != Kw::None).collect();
    v.sort_unstable_by(|a, b| a.0.cmp(b.0));
    v.dedup_by(|a, b| a.0 == b.0);
    v
}

/// The grammar class of a lowercase word (the reference [`keyword`] is built from).
#[cfg(test)]
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
        "dbms_lock.sleep" | "dbms_session.sleep" | "dbms_pipe.receive_message" | "sys.dbms_lock.sleep" | "user_lock.sleep" | "sys.user_lock.sleep" => {
            return Func::Time
        }
        // A qualified `sleep` is a procedure of one of Oracle's packages above; elsewhere
        // (`Thread.sleep(5000)`, `time.sleep(1)`) it is a program's, not a database's.
        _ if last == "sleep" && last.len() < l.len() => return Func::Unknown,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_const_table_is_keyword_words() {
        assert_eq!(WORDS.to_vec(), keyword_words());
        assert!(WORDS.len() < 255);
        assert_eq!(MAX_LEN, keyword_words().iter().map(|(w, _)| w.len()).max().unwrap());
    }
}
