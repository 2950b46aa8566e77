//! The eval's tasks: browser tasks on the eval's own site (`site.rs`) and shell tasks in a
//! folder of their own on this machine, each judged by what landed on disk or on the site —
//! never by what the model says. Values a task asks for are random per run where they can be
//! (log lines, amounts, codes), so nothing passes by a lucky guess.

use super::site::{Post, Site};
use crate::util::clock::random_u64;
use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Browser,
    Shell,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Browser => "browser",
            Kind::Shell => "shell",
        }
    }
}

pub struct Task {
    pub name: &'static str,
    pub kind: Kind,
    prepare: fn(&Setup) -> Prepared,
}

/// What a task is prepared with: the site, and a fresh folder of its own on this machine.
pub struct Setup<'a> {
    pub site: &'a Site,
    pub dir: PathBuf,
}

/// A task ready to run: where, what to do, and what must be true at the end.
pub struct Prepared {
    pub target: String,
    pub instruction: String,
    pub credentials: Option<(String, String)>,
    pub expect: Vec<Expect>,
}

/// One thing that must hold at the end.
pub enum Expect {
    /// A session file whose name starts with `stem` holds every one of these texts (numbers
    /// as whole numbers).
    File { stem: &'static str, holds: Vec<String> },
    /// A session file with exactly these bytes.
    Bytes { what: String, bytes: Vec<u8> },
    /// A PDF made in the session (not one the site serves).
    NewPdf,
    /// The site received this form.
    Posted { path: &'static str, fields: Vec<(&'static str, String)> },
    /// A file on the machine with this content (trimmed).
    HostFile { path: PathBuf, content: String },
}

/// What the judge looks at: the session's files, the site's posts and PDFs.
pub struct Evidence<'a> {
    pub files: Vec<(String, Vec<u8>)>,
    pub posts: Vec<Post>,
    pub site: &'a Site,
}

impl Task {
    pub fn prepare(&self, setup: &Setup) -> Prepared {
        (self.prepare)(setup)
    }
}

pub const TASKS: &[Task] = &[
    Task { name: "price", kind: Kind::Browser, prepare: price },
    Task { name: "head-office", kind: Kind::Browser, prepare: head_office },
    Task { name: "report-pdf", kind: Kind::Browser, prepare: report_pdf },
    Task { name: "all-pdfs", kind: Kind::Browser, prepare: all_pdfs },
    Task { name: "staff-csv", kind: Kind::Browser, prepare: staff_csv },
    Task { name: "contact-form", kind: Kind::Browser, prepare: contact_form },
    Task { name: "order-form", kind: Kind::Browser, prepare: order_form },
    Task { name: "search", kind: Kind::Browser, prepare: search },
    Task { name: "login-invoice", kind: Kind::Browser, prepare: login_invoice },
    Task { name: "page-pdf", kind: Kind::Browser, prepare: page_pdf },
    Task { name: "log-errors", kind: Kind::Shell, prepare: log_errors },
    Task { name: "csv-sum", kind: Kind::Shell, prepare: csv_sum },
    Task { name: "write-file", kind: Kind::Shell, prepare: write_file },
    Task { name: "find-file", kind: Kind::Shell, prepare: find_file },
];

fn browser(s: &Setup, path: &str, instruction: &str, expect: Vec<Expect>) -> Prepared {
    Prepared { target: format!("{}{path}", s.site.url), instruction: instruction.into(), credentials: None, expect }
}

fn answer(holds: &str) -> Vec<Expect> {
    vec![Expect::File { stem: "answer", holds: vec![holds.to_string()] }]
}

fn price(s: &Setup) -> Prepared {
    browser(s, "/", "What does the Team plan cost per month? Save just the price in answer.txt.", answer("45"))
}

fn head_office(s: &Setup) -> Prepared {
    browser(s, "/", "In which city is the company's head office? Save the city's name in answer.txt.", answer("Lyon"))
}

fn site_pdf(s: &Setup, name: &str) -> Expect {
    Expect::Bytes { what: name.to_string(), bytes: s.site.pdf(name).to_vec() }
}

fn report_pdf(s: &Setup) -> Prepared {
    browser(s, "/docs.html", "Download the annual report 2025 (PDF).", vec![site_pdf(s, "annual-report-2025.pdf")])
}

fn all_pdfs(s: &Setup) -> Prepared {
    let expect = super::site::PDFS[..3].iter().map(|n| site_pdf(s, n)).collect();
    browser(s, "/docs.html", "Download every PDF linked on this page.", expect)
}

fn staff_csv(s: &Setup) -> Prepared {
    let names = ["Name", "Role", "Ada Moreau", "Björn Nilsson", "Chiara Russo", "Dmitri Volkov", "Eun-ji Park"];
    let expect = vec![Expect::File { stem: "staff", holds: names.iter().map(|n| n.to_string()).collect() }];
    browser(s, "/staff.html", "Save the staff table as staff.csv, with its header row.", expect)
}

fn contact_form(s: &Setup) -> Prepared {
    let fields = vec![
        ("name", "Ada Lovelace".to_string()),
        ("email", "ada@example.com".to_string()),
        ("message", "call me back".to_string()),
    ];
    browser(
        s,
        "/contact.html",
        "Send the contact form with name Ada Lovelace, email ada@example.com and the message: Please call me back.",
        vec![Expect::Posted { path: "/contact", fields }],
    )
}

fn order_form(s: &Setup) -> Prepared {
    let fields = vec![("item", "mug".to_string()), ("size", "M".to_string()), ("quantity", "3".to_string())];
    browser(s, "/order.html", "Order 3 mugs in size M.", vec![Expect::Posted { path: "/order", fields }])
}

fn search(s: &Setup) -> Prepared {
    browser(
        s,
        "/catalogue.html",
        "Search the catalogue for \"lamp\" and save the price of the first result in answer.txt.",
        answer("34"),
    )
}

fn login_invoice(s: &Setup) -> Prepared {
    let mut p = browser(
        s,
        "/login.html",
        "Sign in and download the invoice PDF from the account page.",
        vec![site_pdf(s, "invoice-0042.pdf")],
    );
    p.credentials = Some((super::USERNAME.to_string(), super::password()));
    p
}

fn page_pdf(s: &Setup) -> Prepared {
    browser(s, "/changelog.html", "Save this page as a PDF named changelog.pdf.", vec![Expect::NewPdf])
}

fn write(dir: &Path, name: &str, content: &str) {
    if let Some(parent) = dir.join(name).parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::fs::write(dir.join(name), content);
}

fn shell(_: &Setup, instruction: String, expect: Vec<Expect>) -> Prepared {
    Prepared { target: super::HOSTNAME.to_string(), instruction, credentials: None, expect }
}

fn log_errors(s: &Setup) -> Prepared {
    let levels = ["INFO", "DEBUG", "WARN", "ERROR"];
    let mut errors = 0;
    let lines: String = (0..40 + random_u64() % 40)
        .map(|i| {
            let level = levels[(random_u64() % 4) as usize];
            errors += usize::from(level == "ERROR");
            format!("2026-11-{:02} 10:{:02}:00 {level} job {i} {}\n", 1 + i % 28, i % 60, random_u64() % 1000)
        })
        .collect();
    write(&s.dir, "app.log", &lines);
    let path = s.dir.join("app.log");
    shell(
        s,
        format!("How many lines of {} contain ERROR? Save the number in answer.txt.", path.display()),
        answer(&errors.to_string()),
    )
}

fn csv_sum(s: &Setup) -> Prepared {
    let amounts: Vec<u64> = (0..12).map(|_| 10 + random_u64() % 490).collect();
    let rows: String =
        amounts.iter().enumerate().map(|(i, a)| format!("2026-10-{:02},item-{i},{a}\n", i + 1)).collect();
    write(&s.dir, "sales.csv", &format!("date,item,amount\n{rows}"));
    let total: u64 = amounts.iter().sum();
    shell(
        s,
        format!(
            "{} has an amount column. Save the sum of all amounts in answer.txt.",
            s.dir.join("sales.csv").display()
        ),
        answer(&total.to_string()),
    )
}

fn write_file(s: &Setup) -> Prepared {
    let path = s.dir.join("hello.txt");
    let expect = vec![Expect::HostFile { path: path.clone(), content: "hello from the agent".into() }];
    shell(s, format!("Create the file {} containing exactly: hello from the agent", path.display()), expect)
}

fn find_file(s: &Setup) -> Prepared {
    let code = format!("code {:08x}", random_u64() as u32);
    for (i, dir) in ["a", "b/c", "b/d/e", "f"].iter().enumerate() {
        write(&s.dir, &format!("tree/{dir}/readme-{i}.txt"), "nothing here\n");
    }
    write(&s.dir, "tree/b/d/e/notes-2031.txt", &format!("{code}\n"));
    let expect = vec![Expect::File { stem: "found", holds: vec![code] }];
    shell(
        s,
        format!("Somewhere under {} is a file named notes-2031.txt. Save its contents as found.txt.", s.dir.display()),
        expect,
    )
}

/// The first expectation a run did not meet; shown as the row's "why".
#[derive(Debug)]
pub enum Miss<'a> {
    /// No file of the session is named `stem…`.
    NoFile(&'a str),
    /// Files named `stem…` exist, but none holds every text.
    Lacks(&'a str, &'a [String]),
    /// No file of the session has the bytes the site served.
    NotDownloaded(&'a str),
    /// No PDF the site did not serve itself (a print of the page).
    NoPdf,
    /// The site received no post to `path` with these fields.
    NoPost(&'a str, &'a [(&'static str, String)]),
    /// The file on the machine holds something else (its start).
    HostFileHolds(&'a Path, String),
    /// The file on the machine is not there.
    HostFileMissing(&'a Path),
}

impl fmt::Display for Miss<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Miss::NoFile(stem) => write!(f, "no file named {stem}…"),
            Miss::Lacks(stem, holds) => write!(f, "{stem}… does not hold {}", holds.join(", ")),
            Miss::NotDownloaded(what) => write!(f, "{what} not downloaded"),
            Miss::NoPdf => f.write_str("no PDF of the page"),
            Miss::NoPost(path, fields) => write!(f, "no {path} post with {fields:?}"),
            Miss::HostFileHolds(path, start) => write!(f, "{} holds {start:?}", path.display()),
            Miss::HostFileMissing(path) => write!(f, "{} was not created", path.display()),
        }
    }
}

/// Whether every expectation holds; else the first that does not.
pub fn judge<'a>(expect: &'a [Expect], evidence: &Evidence) -> Result<(), Miss<'a>> {
    expect.iter().try_for_each(|e| judge_one(e, evidence))
}

fn judge_one<'a>(expect: &'a Expect, ev: &Evidence) -> Result<(), Miss<'a>> {
    match expect {
        Expect::File { stem, holds } => {
            let named: Vec<&(String, Vec<u8>)> =
                ev.files.iter().filter(|(n, _)| n.to_lowercase().starts_with(stem)).collect();
            if named.is_empty() {
                return Err(Miss::NoFile(stem));
            }
            let ok = named.iter().any(|(_, b)| holds.iter().all(|h| holds_text(&String::from_utf8_lossy(b), h)));
            if ok { Ok(()) } else { Err(Miss::Lacks(stem, holds)) }
        }
        Expect::Bytes { what, bytes } => {
            if ev.files.iter().any(|(_, b)| b == bytes) {
                Ok(())
            } else {
                Err(Miss::NotDownloaded(what))
            }
        }
        Expect::NewPdf => {
            let site: Vec<&[u8]> = super::site::PDFS.iter().map(|n| ev.site.pdf(n)).collect();
            let made = ev.files.iter().any(|(n, b)| {
                n.to_lowercase().ends_with(".pdf") && b.starts_with(b"%PDF") && !site.contains(&b.as_slice())
            });
            if made { Ok(()) } else { Err(Miss::NoPdf) }
        }
        Expect::Posted { path, fields } => {
            let ok = ev.posts.iter().any(|p| {
                p.path == *path && fields.iter().all(|(k, v)| p.fields.get(*k).is_some_and(|got| holds_text(got, v)))
            });
            if ok { Ok(()) } else { Err(Miss::NoPost(path, fields)) }
        }
        Expect::HostFile { path, content } => match std::fs::read_to_string(path) {
            Ok(text) if text.trim() == content => Ok(()),
            Ok(text) => Err(Miss::HostFileHolds(path, super::excerpt(&text, 60))),
            Err(_) => Err(Miss::HostFileMissing(path)),
        },
    }
}

/// Whether `text` holds `want`, case-insensitively; a number only as a whole number (45 is
/// not in 450 or 4.5).
fn holds_text(text: &str, want: &str) -> bool {
    let (text, want) = (text.to_lowercase(), want.to_lowercase());
    if !want.chars().all(|c| c.is_ascii_digit()) {
        return text.contains(&want);
    }
    text.match_indices(&want).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + want.len()..].chars().next();
        let digit_or_point = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
        !digit_or_point(before) && !digit_or_point(after)
    })
}

#[cfg(test)]
mod tests {
    use super::holds_text;

    #[test]
    fn numbers_are_found_whole() {
        assert!(holds_text("The price is $45 per month", "45"));
        assert!(holds_text("45", "45"));
        assert!(!holds_text("450", "45") && !holds_text("145", "45"));
        assert!(holds_text("City: lyon", "Lyon"));
    }
}
