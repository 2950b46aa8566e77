//! The worker's `POST /upload`: the boundary from `Content-Type`, then the multipart body
//! streamed through `http::worker_api::read_upload_parts` (the route's own reader) into a
//! staged file in a real session folder.

use super::*;
use crate::support::TempDir;
use agent_controller::error::ApiError;
use agent_controller::http::worker_api::{UploadParts, multipart_boundary, read_upload_parts};
use agent_controller::store::{SessionDir, StageError, Store};

/// One part of a generated body: its name, file name, type and content.
#[derive(Debug, Clone)]
struct Part {
    name: String,
    filename: Option<String>,
    content_type: Option<String>,
    content: Vec<u8>,
}

fn part() -> impl Strategy<Value = Part> {
    let name = prop_oneof![
        4 => prop::sample::select(vec!["file", "session_id", "filename", "command_id"]).prop_map(str::to_string),
        1 => "[a-z_]{0,10}",
        1 => text(),
    ];
    let content = prop_oneof![
        3 => "[ -~]{0,40}".prop_map(String::into_bytes),
        2 => prop::collection::vec(any::<u8>(), 0..300),
        1 => (any::<u8>(), 0usize..5000).prop_map(|(b, n)| vec![b; n]),
    ];
    (name, prop::option::of(text()), prop::option::of("[a-z]{1,8}/[a-z0-9.+-]{1,12}"), content)
        .prop_map(|(name, filename, content_type, content)| Part { name, filename, content_type, content })
}

fn body(boundary: &str, parts: &[Part]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"", p.name).as_bytes(),
        );
        if let Some(f) = &p.filename {
            out.extend_from_slice(format!("; filename=\"{f}\"").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        if let Some(t) = &p.content_type {
            out.extend_from_slice(format!("Content-Type: {t}\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&p.content);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    out
}

/// A body as the generator meant it, or mutated, or any bytes; the header it came with.
#[derive(Debug, Clone)]
struct Upload {
    content_type: String,
    parts: Vec<Part>,
    body: Vec<u8>,
    /// Unchanged from what `parts` say.
    intact: bool,
    allowance: u64,
}

fn upload() -> impl Strategy<Value = Upload> {
    let boundary = prop_oneof![4 => "[A-Za-z0-9'()+_,./:=?-]{1,70}", 1 => text()];
    let header = prop_oneof![
        6 => Just("multipart/form-data; boundary={b}"),
        1 => Just("multipart/form-data; boundary=\"{b}\""),
        1 => Just("Multipart/Form-Data ;charset=utf-8; BOUNDARY={b}"),
        1 => Just("multipart/form-data; boundary=\"\""),
        1 => Just("text/plain; boundary={b}"),
        1 => Just("multipart/form-data"),
    ];
    let edits = prop_oneof![3 => Just(Vec::new()), 2 => prop::collection::vec(edit(), 1..5)];
    let allowance = prop_oneof![3 => Just(1u64 << 20), 1 => 0u64..6000];
    (boundary, header, prop::collection::vec(part(), 0..5), edits, allowance, prop::option::weighted(0.1, bytes()))
        .prop_map(|(b, header, parts, edits, allowance, raw)| {
            let well_formed = body(&b, &parts);
            // A boundary outside RFC 2046's characters cannot be written in the header as is.
            let plain = !b.is_empty() && b.chars().all(|c| c.is_ascii_alphanumeric() || "'()+_,./:=?-".contains(c));
            let intact =
                plain && edits.is_empty() && raw.is_none() && header.contains("{b}") && !header.starts_with("text");
            let body = raw.unwrap_or_else(|| apply(well_formed, &edits));
            Upload { content_type: header.replace("{b}", &b), parts, body, intact, allowance }
        })
}

/// The error the route would make of a staging limit, told apart from every other.
fn limit(e: StageError) -> ApiError {
    match e {
        StageError::Limit => ApiError::TooLarge("over the allowance".into()),
        StageError::Io(e) => ApiError::BadRequest(format!("upload interrupted: {e}")),
    }
}

fn read(dir: &SessionDir, u: &Upload) -> Result<UploadParts, ApiError> {
    let boundary = multipart_boundary(Some(&u.content_type))?;
    read_upload_parts(u.body.as_slice(), boundary, u.allowance, || Ok(dir.stage()?), limit)
}

/// What a well-formed body must give: its fields, its one file within the allowance.
fn check_intact(u: &Upload, result: &Result<UploadParts, ApiError>) -> Result<(), TestCaseError> {
    // A content that holds the delimiter ends its part early: not the body we meant.
    let delimiter = format!("\r\n--{}", multipart_boundary(Some(&u.content_type)).unwrap_or_default());
    let clean = |p: &Part| !p.content.windows(delimiter.len()).any(|w| w == delimiter.as_bytes());
    // Quotes, separators and controls (which no header may hold) make a different header.
    let plain = |s: &str| !s.contains(['"', '\\', ';']) && !s.contains(char::is_control);
    let simple_names = u
        .parts
        .iter()
        .all(|p| clean(p) && !p.name.is_empty() && plain(&p.name) && p.filename.as_deref().is_none_or(plain));
    if !simple_names {
        return Ok(());
    }
    let files: Vec<&Part> = u.parts.iter().filter(|p| p.name == "file").collect();
    let fields_ok = u
        .parts
        .iter()
        .filter(|p| matches!(p.name.as_str(), "session_id" | "filename" | "command_id"))
        .all(|p| std::str::from_utf8(&p.content).is_ok());
    // Only the file is held to the allowance; other parts are read past within it.
    let over = files.iter().any(|p| p.content.len() as u64 > u.allowance);
    // A field's first 4096 bytes are read; a cut through a character is not UTF-8.
    let long_field = u.parts.iter().any(|p| is_field(&p.name) && p.content.len() > 4096);
    match result {
        Ok(parts) => {
            prop_assert!(files.len() <= 1 && fields_ok && !over, "accepted {:?}", u.parts);
            let staged = parts.staged.as_ref().map(|s| s.written());
            prop_assert_eq!(staged, files.first().map(|f| f.content.len() as u64));
            let first = |n: &str| {
                u.parts.iter().rfind(|p| p.name == n).map(|p| String::from_utf8_lossy(&p.content).into_owned())
            };
            let limited = |s: String| {
                s.chars()
                    .scan(0, |n, c| {
                        *n += c.len_utf8();
                        (*n <= 4096).then_some(c)
                    })
                    .collect::<String>()
            };
            prop_assert_eq!(parts.claimed_session.clone(), first("session_id").map(|s| limited(s).trim().to_string()));
            prop_assert_eq!(parts.filename.clone(), first("filename").map(limited));
        }
        Err(ApiError::TooLarge(_)) => prop_assert!(over, "limit with {:?}", u.parts),
        Err(e) => prop_assert!(files.len() > 1 || !fields_ok || long_field, "{e:?} for {:?}", u.parts),
    }
    Ok(())
}

fn is_field(name: &str) -> bool {
    matches!(name, "session_id" | "filename" | "command_id")
}

#[test]
fn fuzz_multipart_uploads() {
    let root = TempDir::new("fuzz-upload");
    let store = Store::open(root.path(), agent_controller::protocol::SyncPolicy::Off).unwrap();
    let dir = store.create_session_dir("sess_fuzz").unwrap();
    let folder = root.path().join("sess_fuzz");
    let before = std::fs::read_dir(&folder).unwrap().count();
    fuzz("multipart uploads (http::worker_api::read_upload_parts)", upload(), |u| {
        let result = read(&dir, &u);
        match &result {
            Ok(_) | Err(ApiError::BadRequest(_) | ApiError::TooLarge(_)) => {}
            Err(e) => prop_assert!(false, "untyped error {e:?}"),
        }
        if u.intact {
            check_intact(&u, &result)?;
        }
        drop(result);
        // Nothing staged stays behind once the parts are dropped uncommitted.
        prop_assert_eq!(std::fs::read_dir(&folder).unwrap().count(), before);
        Ok(())
    });
}

/// Found by the fuzz test above: each of these made multipart2's error format itself until the
/// stack overflowed, which aborts the process (no unwinding catches it).
#[test]
fn bad_part_headers_are_a_clear_400() {
    let root = TempDir::new("fuzz-upload-headers");
    let dir = Store::open(root.path(), agent_controller::protocol::SyncPolicy::Off)
        .unwrap()
        .create_session_dir("sess_h")
        .unwrap();
    for headers in [
        "Content-Type: text/plain",
        "Content-Disposition: attachment",
        "Content-Disposition: form-data; name=\"file\"\r\nContent-Type: not a type",
        "no colon here",
    ] {
        let body = format!("--b\r\n{headers}\r\n\r\nx\r\n--b--\r\n");
        let u = Upload {
            content_type: "multipart/form-data; boundary=b".into(),
            parts: Vec::new(),
            body: body.into_bytes(),
            intact: false,
            allowance: 1000,
        };
        match read(&dir, &u) {
            Err(ApiError::BadRequest(m)) => assert!(m.starts_with("malformed multipart body"), "{m}"),
            Ok(p) => assert!(p.staged.is_none(), "{headers}"),
            Err(e) => panic!("{headers}: {e:?}"),
        }
    }
}

/// Found by the fuzz test: `boundary=;` and `boundary=""` gave an empty boundary.
#[test]
fn an_empty_boundary_is_refused() {
    for ct in
        ["multipart/form-data; boundary=;", "multipart/form-data; boundary=\"\"", "multipart/form-data; boundary="]
    {
        assert!(matches!(multipart_boundary(Some(ct)), Err(ApiError::BadRequest(_))), "{ct}");
    }
    assert_eq!(multipart_boundary(Some("multipart/form-data; boundary=\"a b\"")).ok().as_deref(), Some("a b"));
}
