//! Debug builds (the tests) have two triggers on either server: `GET /__test/panic` panics
//! inside a route (which ends the process, `util::panic`), and `GET /__test/stall` holds its
//! handler thread 8 s first. Release builds compile them out.

use tiny_http::Request;

#[cfg(debug_assertions)]
pub fn test_trigger(request: &Request) {
    match request.url() {
        "/__test/panic" => panic!("test trigger: a route panicked"),
        "/__test/stall" => std::thread::sleep(std::time::Duration::from_secs(8)),
        _ => {}
    }
}

#[cfg(not(debug_assertions))]
pub fn test_trigger(_: &Request) {}
