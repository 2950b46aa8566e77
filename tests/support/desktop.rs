//! A real X server for the desktop tests: Xvfb on a free display (:90 and up), openbox when a
//! test needs an EWMH window manager, X programs started on it, and everything stopped on drop
//! (Xvfb by SIGTERM, so it removes its lock file); a private D-Bus session bus for the
//! accessibility (AT-SPI) tests. Also a small baseline JPEG decoder, so a test can read the
//! worker's screenshots without another crate.

use super::{ChildGuard, wait_until};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Whether Xvfb is here; says so when it is not (`make test` installs it).
pub fn have_xvfb() -> bool {
    let ok = Path::new("/usr/bin/Xvfb").exists();
    if !ok {
        eprintln!("SKIPPED: Xvfb is not installed (make test installs xvfb x11-utils x11-xserver-utils xterm openbox)");
    }
    ok
}

/// A running Xvfb (and openbox, if asked for). `-noreset`: the screen keeps what a client
/// that has exited set (xsetroot), instead of being reset when the last client leaves.
pub struct Xvfb {
    pub display: String,
    server: Option<std::process::Child>,
    wm: Option<ChildGuard>,
}

impl Xvfb {
    /// Xvfb at `size` ("1920x1080") on the first display from :90 that is free.
    pub fn start(size: &str) -> Xvfb {
        static NEXT: Mutex<u32> = Mutex::new(90);
        let mut next = NEXT.lock().unwrap_or_else(|p| p.into_inner());
        for n in *next..400 {
            if Path::new(&format!("/tmp/.X{n}-lock")).exists() || Path::new(&format!("/tmp/.X11-unix/X{n}")).exists() {
                continue;
            }
            let mut child = Command::new("Xvfb")
                .args([&format!(":{n}"), "-screen", "0", &format!("{size}x24"), "-nolisten", "tcp", "-noreset"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start Xvfb");
            let deadline = Instant::now() + Duration::from_secs(15);
            let display = format!(":{n}");
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break; // taken after all: try the next one
                }
                if xok(&display, "xdpyinfo", &[]) {
                    *next = n + 1;
                    return Xvfb { display, server: Some(child), wm: None };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("no free X display between :90 and :400");
    }

    /// Start openbox and wait until it has taken over (EWMH properties set).
    pub fn with_openbox(mut self) -> Xvfb {
        self.wm = Some(self.spawn("openbox", &["--sm-disable"]));
        wait_until(Duration::from_secs(15), "openbox to manage the screen", || {
            self.output("xprop", &["-root", "_NET_SUPPORTING_WM_CHECK"]).contains("window id").then_some(())
        });
        self
    }

    /// An X program on this display, killed on drop.
    pub fn spawn(&self, program: &str, args: &[&str]) -> ChildGuard {
        ChildGuard(self.command(program, args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap())
    }

    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args).env("DISPLAY", &self.display).env("LC_ALL", "C.UTF-8");
        c
    }

    /// What an X tool printed (empty if it failed).
    pub fn output(&self, program: &str, args: &[&str]) -> String {
        let out = self.command(program, args).stderr(Stdio::null()).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The id of the window called `name`, once it is mapped.
    pub fn window_id(&self, name: &str) -> u32 {
        wait_until(Duration::from_secs(15), &format!("the window {name:?}"), || {
            let info = self.output("xwininfo", &["-name", name]);
            if !info.contains("IsViewable") {
                return None;
            }
            let id = info.split("Window id: 0x").nth(1)?.split_whitespace().next()?;
            u32::from_str_radix(id, 16).ok()
        })
    }

    /// `_NET_ACTIVE_WINDOW` on the root, as xprop reads it.
    pub fn active_window(&self) -> Option<u32> {
        let out = self.output("xprop", &["-root", "_NET_ACTIVE_WINDOW"]);
        let id = out.split("# 0x").nth(1)?.split(|c: char| !c.is_ascii_hexdigit()).next()?;
        u32::from_str_radix(id, 16).ok()
    }
}

fn xok(display: &str, program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .env("DISPLAY", display)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        self.wm = None;
        if let Some(mut server) = self.server.take() {
            let _ = Command::new("kill").args(["-TERM", &server.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline && matches!(server.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// The GTK 3 question dialog the accessibility tests drive (Yes exits 0, No 1).
pub const GTK_DIALOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/gtk_dialog.py");

/// Whether a D-Bus daemon, the AT-SPI bus launcher and GTK 3 for the system's Python are here.
pub fn have_atspi() -> bool {
    let mut missing: Vec<&str> = ["/usr/bin/dbus-daemon", "/usr/libexec/at-spi-bus-launcher"]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    let gtk = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk";
    if !Command::new("/usr/bin/python3").args(["-c", gtk]).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
        missing.push("GTK 3 for /usr/bin/python3");
    }
    if !missing.is_empty() {
        eprintln!(
            "SKIPPED: {} not installed (make test installs dbus at-spi2-core python3-gi gir1.2-gtk-3.0)",
            missing.join(", ")
        );
    }
    missing.is_empty()
}

/// A session bus of its own for one display: GTK programs started through `spawn` ask it for the
/// accessibility bus, which it starts (at-spi-bus-launcher, which puts AT_SPI_BUS on the X root
/// window). Its sockets live in a private XDG_RUNTIME_DIR, so tests do not meet. Stopped on drop;
/// the launcher leaves when its session bus goes.
pub struct SessionBus {
    pub address: String,
    pub runtime_dir: super::TempDir,
    daemon: ChildGuard,
}

impl SessionBus {
    pub fn start(x: &Xvfb) -> SessionBus {
        let runtime_dir = super::TempDir::new("dbus");
        let socket = runtime_dir.path().join("bus");
        let mut daemon = x
            .command("dbus-daemon", &["--session", "--nofork", "--nopidfile", "--print-address=1"])
            .arg(format!("--address=unix:path={}", socket.display()))
            .env("XDG_RUNTIME_DIR", runtime_dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(daemon.stdout.take().unwrap()), &mut line).unwrap();
        assert!(line.starts_with("unix:"), "dbus-daemon printed {line:?}");
        SessionBus { address: line.trim().to_string(), runtime_dir, daemon: ChildGuard(daemon) }
    }

    /// A program on `x` in this session, with accessibility on (GTK's bridge is not turned off).
    pub fn spawn(&self, x: &Xvfb, program: &str, args: &[&str]) -> ChildGuard {
        let child = x
            .command(program, args)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .env("XDG_RUNTIME_DIR", self.runtime_dir.path())
            .env_remove("NO_AT_BRIDGE")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        ChildGuard(child)
    }
}

impl Drop for SessionBus {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.daemon.0.id().to_string()]).status();
        let _ = self.daemon.0.wait();
    }
}

/// Windows below `name` as xwininfo -tree lists them: (absolute x, y, width, height).
pub fn child_windows(x: &Xvfb, name: &str) -> Vec<(i32, i32, i32, i32)> {
    let tree = x.output("xwininfo", &["-name", name, "-tree"]);
    let mut out = Vec::new();
    for line in tree.lines().filter(|l| l.trim_start().starts_with("0x")) {
        let t: Vec<&str> = line.split_whitespace().collect();
        // "... 22x17+39+29  +40+30": the size token, then the absolute position.
        let Some(i) = t.iter().position(|s| s.contains('x') && s.contains('+') && !s.starts_with("0x")) else {
            continue;
        };
        let (w, rest) = t[i].split_once('x').unwrap();
        let h = rest.split(['+', '-']).next().unwrap();
        let abs: Vec<i32> = t[i + 1].split('+').filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
        out.push((abs[0], abs[1], w.parse().unwrap(), h.parse().unwrap()));
    }
    out
}

// ----- a baseline JPEG decoder (Huffman, 8-bit, any sampling), enough to read screenshots -----

struct Huffman {
    /// (length, code) → symbol.
    codes: std::collections::HashMap<(u8, u16), u8>,
}

struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    acc: u32,
    n: u32,
}

impl Bits<'_> {
    fn bit(&mut self) -> u32 {
        if self.n == 0 {
            let b = self.data[self.pos];
            self.pos += 1;
            if b == 0xff {
                assert_eq!(self.data[self.pos], 0, "a marker inside the scan");
                self.pos += 1;
            }
            self.acc = b as u32;
            self.n = 8;
        }
        self.n -= 1;
        (self.acc >> self.n) & 1
    }
    fn bits(&mut self, n: u32) -> i32 {
        (0..n).fold(0, |v, _| (v << 1) | self.bit() as i32)
    }
    fn decode(&mut self, h: &Huffman) -> u8 {
        let mut code = 0u16;
        for len in 1..=16u8 {
            code = (code << 1) | self.bit() as u16;
            if let Some(&s) = h.codes.get(&(len, code)) {
                return s;
            }
        }
        panic!("bad Huffman code");
    }
    fn extend(&mut self, s: u8) -> i32 {
        let v = self.bits(s as u32);
        if s > 0 && v < 1 << (s - 1) { v - (1 << s) + 1 } else { v }
    }
}

const ZIGZAG: [usize; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
    28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63,
];

/// (id, h, v, quant table, dc table, ac table)
type Component = (u8, usize, usize, usize, usize, usize);

/// Decode a baseline JPEG into (width, height, RGB bytes).
pub fn decode_jpeg(d: &[u8]) -> (usize, usize, Vec<u8>) {
    assert_eq!(&d[..2], &[0xff, 0xd8], "not a JPEG");
    let (mut quant, mut dc, mut ac) = (vec![[0i32; 64]; 4], Vec::new(), Vec::new());
    dc.resize_with(4, || Huffman { codes: Default::default() });
    ac.resize_with(4, || Huffman { codes: Default::default() });
    let (mut w, mut h, mut comps): (usize, usize, Vec<Component>) = (0, 0, Vec::new());
    let mut pos = 2;
    loop {
        assert_eq!(d[pos], 0xff);
        let marker = d[pos + 1];
        let len = u16::from_be_bytes([d[pos + 2], d[pos + 3]]) as usize;
        let seg = &d[pos + 4..pos + 2 + len];
        match marker {
            0xdb => {
                let mut s = seg;
                while !s.is_empty() {
                    assert_eq!(s[0] >> 4, 0, "8-bit tables only");
                    for k in 0..64 {
                        quant[(s[0] & 15) as usize][k] = s[1 + k] as i32;
                    }
                    s = &s[65..];
                }
            }
            0xc0 => {
                h = u16::from_be_bytes([seg[1], seg[2]]) as usize;
                w = u16::from_be_bytes([seg[3], seg[4]]) as usize;
                for c in seg[6..].chunks(3) {
                    comps.push((c[0], (c[1] >> 4) as usize, (c[1] & 15) as usize, c[2] as usize, 0, 0));
                }
            }
            0xc4 => {
                let mut s = seg;
                while !s.is_empty() {
                    let counts = &s[1..17];
                    let total: usize = counts.iter().map(|&c| c as usize).sum();
                    let syms = &s[17..17 + total];
                    let mut table = Huffman { codes: Default::default() };
                    let (mut code, mut k) = (0u16, 0);
                    for (len, &count) in counts.iter().enumerate() {
                        for _ in 0..count {
                            table.codes.insert((len as u8 + 1, code), syms[k]);
                            code += 1;
                            k += 1;
                        }
                        code <<= 1;
                    }
                    let slot = (s[0] & 15) as usize;
                    if s[0] >> 4 == 0 {
                        dc[slot] = table
                    } else {
                        ac[slot] = table
                    }
                    s = &s[17 + total..];
                }
            }
            0xda => {
                for c in seg[1..1 + 2 * seg[0] as usize].chunks(2) {
                    let comp = comps.iter_mut().find(|x| x.0 == c[0]).unwrap();
                    comp.4 = (c[1] >> 4) as usize;
                    comp.5 = (c[1] & 15) as usize;
                }
                return scan(&d[pos + 2 + len..], w, h, &comps, &quant, &dc, &ac);
            }
            0xc1..=0xcf | 0xdd => panic!("only baseline JPEG without restarts is read here (marker {marker:x})"),
            _ => {}
        }
        pos += 2 + len;
    }
}

fn scan(
    data: &[u8],
    w: usize,
    h: usize,
    comps: &[Component],
    quant: &[[i32; 64]],
    dc: &[Huffman],
    ac: &[Huffman],
) -> (usize, usize, Vec<u8>) {
    let hmax = comps.iter().map(|c| c.1).max().unwrap();
    let vmax = comps.iter().map(|c| c.2).max().unwrap();
    let (mcux, mcuy) = (w.div_ceil(8 * hmax), h.div_ceil(8 * vmax));
    let mut planes: Vec<Vec<u8>> = comps.iter().map(|c| vec![0u8; mcux * c.1 * 8 * mcuy * c.2 * 8]).collect();
    let cos: Vec<f32> = (0..64)
        .map(|i| {
            let (x, u) = (i / 8, i % 8);
            let cu = if u == 0 { std::f32::consts::FRAC_1_SQRT_2 } else { 1.0 };
            cu * (((2 * x + 1) * u) as f32 * std::f32::consts::PI / 16.0).cos()
        })
        .collect();
    let mut bits = Bits { data, pos: 0, acc: 0, n: 0 };
    let mut pred = vec![0i32; comps.len()];
    for my in 0..mcuy {
        for mx in 0..mcux {
            for (ci, c) in comps.iter().enumerate() {
                for by in 0..c.2 {
                    for bx in 0..c.1 {
                        let coef = block(&mut bits, &dc[c.4], &ac[c.5], &quant[c.3], &mut pred[ci]);
                        let pixels = idct(&coef, &cos);
                        let stride = mcux * c.1 * 8;
                        let (ox, oy) = ((mx * c.1 + bx) * 8, (my * c.2 + by) * 8);
                        for y in 0..8 {
                            let at = (oy + y) * stride + ox;
                            planes[ci][at..at + 8].copy_from_slice(&pixels[y * 8..y * 8 + 8]);
                        }
                    }
                }
            }
        }
    }
    let mut rgb = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            let s = |ci: usize| {
                let c = comps[ci];
                planes[ci][(y * c.2 / vmax) * mcux * c.1 * 8 + x * c.1 / hmax] as f32
            };
            if comps.len() == 1 {
                rgb.extend([s(0) as u8; 3]);
                continue;
            }
            let (yy, cb, cr) = (s(0), s(1) - 128.0, s(2) - 128.0);
            for v in [yy + 1.402 * cr, yy - 0.344_136 * cb - 0.714_136 * cr, yy + 1.772 * cb] {
                rgb.push(v.round().clamp(0.0, 255.0) as u8);
            }
        }
    }
    (w, h, rgb)
}

/// One 8×8 block's coefficients, dequantised, in natural order.
fn block(bits: &mut Bits, dc: &Huffman, ac: &Huffman, quant: &[i32; 64], pred: &mut i32) -> [f32; 64] {
    let mut coef = [0f32; 64];
    let t = bits.decode(dc);
    *pred += bits.extend(t);
    coef[0] = (*pred * quant[0]) as f32;
    let mut k = 1;
    while k < 64 {
        let rs = bits.decode(ac);
        let (r, s) = ((rs >> 4) as usize, rs & 15);
        if s == 0 {
            if r != 15 {
                break;
            }
            k += 16;
            continue;
        }
        k += r;
        coef[ZIGZAG[k]] = (bits.extend(s) * quant[k]) as f32;
        k += 1;
    }
    coef
}

/// The inverse DCT, separable (rows, then columns), level-shifted to 0..=255.
fn idct(coef: &[f32; 64], cos: &[f32]) -> [u8; 64] {
    let mut tmp = [0f32; 64];
    for y in 0..8 {
        for u in 0..8 {
            tmp[y * 8 + u] = (0..8).map(|v| cos[y * 8 + v] * coef[v * 8 + u]).sum();
        }
    }
    let mut out = [0u8; 64];
    for y in 0..8 {
        for x in 0..8 {
            let sum: f32 = (0..8).map(|u| cos[x * 8 + u] * tmp[y * 8 + u]).sum();
            out[y * 8 + x] = (sum / 4.0 + 128.0).round().clamp(0.0, 255.0) as u8;
        }
    }
    out
}
