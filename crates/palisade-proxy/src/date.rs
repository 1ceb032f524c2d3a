//! The `Date` header value, formatted at most once per second per worker.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

thread_local! {
    static CACHE: RefCell<(u64, [u8; 29])> = const { RefCell::new((0, [0; 29])) };
}

/// Call `f` with the current HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub fn with<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs();
        if c.0 != now {
            let s = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(now));
            if s.len() == 29 {
                c.1.copy_from_slice(s.as_bytes());
                c.0 = now;
            }
        }
        f(&c.1)
    })
}
