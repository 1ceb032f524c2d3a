use super::*;
use crate::{FieldKind, Input, Level};

fn conf(s: &str) -> u8 {
    let mut steps = 0;
    analyze(s, &mut steps).map_or(0, |f| f.confidence)
}

#[test]
fn debug_print() {
    for s in ["1,(case when 2872=2872 then 1 else null end)", "10 UNION exec master..xp_cmdshell 'dir'", "1; delete low_priority from foo"] {
        let mut steps = 0;
        println!("{s:?} => {:?}", analyze(s, &mut steps));
    }
    let _ = (conf("x"), Input { raw: "", decoded: "", field: FieldKind::QueryValue }, Level::Strict);
}
