//! The connection to the X server: opening it, the facts read once (root window, screen size,
//! pixel format, atoms), small property readers, and X failures as the worker's errors.
//!
//! Invariants: an `X` exists only for a display that answered and has the XTEST extension (no
//! synthetic input without it); a lost connection comes back as `WorkerError::WillRestart`, so
//! the backend drops the connection and opens a new one on the next command; a request the
//! server refused (a window that closed meanwhile) is an ordinary error the model can act on.

use crate::error::WorkerError;
use std::fmt;
use x11rb::connection::{Connection, RequestConnection};
use x11rb::errors::{ConnectError, ConnectionError, ReplyError, ReplyOrIdError};
use x11rb::protocol::xproto::{Atom, AtomEnum, ConnectionExt as _, ImageOrder, Window};
use x11rb::protocol::xtest::{self, ConnectionExt as _};
use x11rb::rust_connection::RustConnection;

/// How the root window's pixels are laid out in a ZPixmap image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PixelFormat {
    pub bits_per_pixel: u8,
    pub scanline_pad: u8,
    pub msb_first: bool,
    pub red_mask: u32,
    pub green_mask: u32,
    pub blue_mask: u32,
}

/// The atoms the window code reads.
pub struct Atoms {
    pub net_supporting_wm_check: Atom,
    pub net_client_list: Atom,
    pub net_client_list_stacking: Atom,
    pub net_active_window: Atom,
    pub net_wm_name: Atom,
    pub utf8_string: Atom,
}

/// Why there is no usable display; each message names the display.
#[derive(Debug)]
pub enum DisplayError {
    /// Neither `--display` nor `$DISPLAY` names one.
    NotSet,
    /// The X server could not be reached.
    Connect { display: String, source: ConnectError },
    /// A request made while checking the server failed (a lost connection, an error reply).
    Request { display: String, source: ReplyError },
    /// The server lacks XTEST, so there would be no synthetic input.
    NoXtest { display: String },
    /// The server has no screen of this number.
    NoScreen { display: String, screen: usize },
    /// The root window's depth is not a true-colour format we can read.
    Depth { display: String, depth: u8 },
}

impl fmt::Display for DisplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DisplayError::NotSet => f.write_str("no X display: neither --display nor $DISPLAY is set"),
            DisplayError::Connect { display, source } => write!(f, "cannot open display {display}: {source}"),
            DisplayError::Request { display, source } => write!(f, "display {display}: {source}"),
            DisplayError::NoXtest { display } => {
                write!(f, "display {display} has no XTEST extension, so no synthetic input")
            }
            DisplayError::NoScreen { display, screen } => write!(f, "display {display} has no screen {screen}"),
            DisplayError::Depth { display, depth } => {
                write!(f, "display {display}: the root window's depth {depth} is not a true-colour format")
            }
        }
    }
}

impl std::error::Error for DisplayError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DisplayError::Connect { source, .. } => Some(source),
            DisplayError::Request { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub struct X {
    pub conn: RustConnection,
    pub root: Window,
    pub width: u16,
    pub height: u16,
    pub format: PixelFormat,
    pub atoms: Atoms,
}

impl X {
    /// Connect to `display` and check what the backend needs; the error says why not.
    pub fn open(display: &str) -> Result<X, DisplayError> {
        let named = || display.to_string();
        let (conn, screen) =
            x11rb::connect(Some(display)).map_err(|source| DisplayError::Connect { display: named(), source })?;
        let fail = |e: ConnectionError| DisplayError::Request { display: named(), source: e.into() };
        if conn.extension_information(xtest::X11_EXTENSION_NAME).map_err(fail)?.is_none() {
            return Err(DisplayError::NoXtest { display: named() });
        }
        let failed = |source| DisplayError::Request { display: named(), source };
        conn.xtest_get_version(2, 2).map_err(fail)?.reply().map_err(failed)?;
        let setup = conn.setup();
        let scr = setup.roots.get(screen).ok_or_else(|| DisplayError::NoScreen { display: named(), screen })?;
        let format =
            pixel_format(setup, scr).ok_or_else(|| DisplayError::Depth { display: named(), depth: scr.root_depth })?;
        let (root, width, height) = (scr.root, scr.width_in_pixels, scr.height_in_pixels);
        let atoms = Atoms::intern(&conn).map_err(failed)?;
        Ok(X { conn, root, width, height, format, atoms })
    }

    /// Wait until the server has handled everything sent so far.
    pub fn sync(&self) -> Result<(), WorkerError> {
        self.conn.get_input_focus()?.reply()?;
        Ok(())
    }

    /// The screen size now (it may change with RandR).
    pub fn refresh_size(&mut self) -> Result<(u16, u16), WorkerError> {
        let g = self.conn.get_geometry(self.root)?.reply()?;
        self.width = g.width;
        self.height = g.height;
        Ok((g.width, g.height))
    }

    /// A text property (UTF-8 or Latin-1), or None when the window has none.
    pub fn text(&self, win: Window, atom: impl Into<Atom>) -> Result<Option<String>, WorkerError> {
        let reply = self.conn.get_property(false, win, atom, AtomEnum::ANY, 0, 1024)?.reply()?;
        if reply.format != 8 || reply.value.is_empty() {
            return Ok(None);
        }
        Ok(Some(decode_text(&reply.value, reply.type_ == self.atoms.utf8_string)))
    }

    /// A list of 32-bit values (windows, cardinals), empty when absent.
    pub fn list(&self, win: Window, atom: Atom) -> Result<Vec<u32>, WorkerError> {
        let reply = self.conn.get_property(false, win, atom, AtomEnum::ANY, 0, 4096)?.reply()?;
        Ok(reply.value32().map(|v| v.collect()).unwrap_or_default())
    }
}

impl Atoms {
    fn intern(conn: &RustConnection) -> Result<Atoms, ReplyError> {
        let names: [&[u8]; 6] = [
            b"_NET_SUPPORTING_WM_CHECK",
            b"_NET_CLIENT_LIST",
            b"_NET_CLIENT_LIST_STACKING",
            b"_NET_ACTIVE_WINDOW",
            b"_NET_WM_NAME",
            b"UTF8_STRING",
        ];
        // All requests first, then the replies: one round trip.
        let cookies = names.map(|n| conn.intern_atom(false, n));
        let mut atoms = [0; 6];
        for (slot, cookie) in atoms.iter_mut().zip(cookies) {
            *slot = cookie?.reply()?.atom;
        }
        let [
            net_supporting_wm_check,
            net_client_list,
            net_client_list_stacking,
            net_active_window,
            net_wm_name,
            utf8_string,
        ] = atoms;
        Ok(Atoms {
            net_supporting_wm_check,
            net_client_list,
            net_client_list_stacking,
            net_active_window,
            net_wm_name,
            utf8_string,
        })
    }
}

/// The root visual's pixel layout, if it is one `capture` can read (true or direct colour).
fn pixel_format(setup: &x11rb::protocol::xproto::Setup, scr: &x11rb::protocol::xproto::Screen) -> Option<PixelFormat> {
    use x11rb::protocol::xproto::VisualClass;
    let pix = setup.pixmap_formats.iter().find(|f| f.depth == scr.root_depth)?;
    let visual = scr
        .allowed_depths
        .iter()
        .flat_map(|d| d.visuals.iter())
        .find(|v| v.visual_id == scr.root_visual)
        .filter(|v| matches!(v.class, VisualClass::TRUE_COLOR | VisualClass::DIRECT_COLOR))?;
    matches!(pix.bits_per_pixel, 16 | 24 | 32).then_some(PixelFormat {
        bits_per_pixel: pix.bits_per_pixel,
        scanline_pad: pix.scanline_pad,
        msb_first: setup.image_byte_order == ImageOrder::MSB_FIRST,
        red_mask: visual.red_mask,
        green_mask: visual.green_mask,
        blue_mask: visual.blue_mask,
    })
}

/// Property bytes as text: UTF-8 when the type says so, else Latin-1 (STRING); NULs split
/// lists (WM_CLASS), trailing ones are dropped.
pub fn decode_text(bytes: &[u8], utf8: bool) -> String {
    let text =
        if utf8 { String::from_utf8_lossy(bytes).into_owned() } else { bytes.iter().map(|&b| b as char).collect() };
    text.trim_end_matches('\0').to_string()
}

/// The connection is gone: the backend reopens it on the next command.
fn lost(e: ConnectionError) -> WorkerError {
    WorkerError::WillRestart(Box::new(WorkerError::Unavailable(format!(
        "the connection to the X display failed ({e})"
    ))))
}

impl From<ConnectionError> for WorkerError {
    fn from(e: ConnectionError) -> WorkerError {
        lost(e)
    }
}

impl From<ReplyError> for WorkerError {
    fn from(e: ReplyError) -> WorkerError {
        match e {
            ReplyError::ConnectionError(c) => lost(c),
            ReplyError::X11Error(x) => WorkerError::Unavailable(format!(
                "the X server refused {} ({:?}); a window may have just closed: look again",
                x.request_name.unwrap_or("a request"),
                x.error_kind
            )),
        }
    }
}

impl From<ReplyOrIdError> for WorkerError {
    fn from(e: ReplyOrIdError) -> WorkerError {
        match e {
            ReplyOrIdError::ConnectionError(c) => lost(c),
            ReplyOrIdError::X11Error(x) => ReplyError::X11Error(x).into(),
            ReplyOrIdError::IdsExhausted => WorkerError::Unavailable("the X connection ran out of ids".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn property_text_is_utf8_or_latin1() {
        assert_eq!(decode_text("Réglages €".as_bytes(), true), "Réglages €");
        assert_eq!(decode_text(b"caf\xe9\0", false), "café");
        assert_eq!(decode_text(b"xterm\0XTerm\0", false), "xterm\0XTerm");
    }
}
