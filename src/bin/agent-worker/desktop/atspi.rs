//! The AT-SPI accessibility bus: finding it, and the few calls the widget walk and clicks need
//! (children, role, name, states, interfaces, screen extents, actions), over D-Bus with zbus's
//! blocking API (built with the `atspi` cargo feature; zbus runs its own executor thread, the
//! rest of the worker stays synchronous).
//!
//! The bus address comes from the `AT_SPI_BUS` property of the X root window (set by
//! at-spi-bus-launcher when it knows the display), else from `org.a11y.Bus.GetAddress` on the
//! session bus. Every call has a time limit (`CALL_LIMIT`), and an application that let one
//! pass is not asked again in the same walk, so a hung program costs that much and no more.
//! Errors are `BusError`s, shown as the short texts the walk puts into its notes.
//!
//! The walk reads only the top-level accessibles that are showing and stand for a visible X
//! window (same title, or mostly the same area), top-most window first, optionally only those
//! whose title contains `window`; it skips what is not showing and stops at a depth, a number of
//! objects and a deadline. Pressing prefers the widget's own "click"/"press"/"activate" action
//! for a plain left click, else gives its centre for the pointer.

use super::tree::{Ids, Node, Obj, Pressed, Scope, Walk, centre, same};
use super::windows::{Win, Windows};
use super::x::X;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::time::{Duration, Instant};
use zbus::blocking::Connection;
use zbus::blocking::connection::Builder;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

/// How long one call may take before its application counts as not answering.
const CALL_LIMIT: Duration = Duration::from_millis(1500);

const ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const COMPONENT: &str = "org.a11y.atspi.Component";
const ACTION: &str = "org.a11y.atspi.Action";
const ROOT: &str = "/org/a11y/atspi/accessible/root";
const REGISTRY: &str = "org.a11y.atspi.Registry";
/// At most this many objects are read in one walk.
const MAX_NODES: usize = 2000;
/// Action names a plain left click stands for, in order of preference.
const CLICK_ACTIONS: [&str; 3] = ["click", "press", "activate"];

/// AT-SPI state numbers (bits of the 64-bit state set) the worker reports or relies on.
pub mod state {
    pub const CHECKED: u32 = 4;
    pub const EDITABLE: u32 = 7;
    pub const ENABLED: u32 = 8;
    pub const EXPANDED: u32 = 10;
    pub const FOCUSABLE: u32 = 11;
    pub const FOCUSED: u32 = 12;
    pub const SELECTABLE: u32 = 22;
    pub const SELECTED: u32 = 23;
    pub const SHOWING: u32 = 25;
    pub const IS_DEFAULT: u32 = 39;
}

/// Why the accessibility bus, or one call on it, failed.
#[derive(Debug)]
pub enum BusError {
    /// The application let a call of this walk time out before, so it is not asked again.
    Silent,
    /// The call failed on the bus: no answer in time, an error reply, a lost connection.
    Call(Box<zbus::Error>),
    /// The reply to `method` was not of the type asked for.
    Reply { method: &'static str, source: Box<zbus::Error> },
    /// The `Name` property was not a string.
    NameNotText(zbus::zvariant::Error),
    /// The X root window has no `AT_SPI_BUS` property.
    NoRootProperty,
    /// The root window's `AT_SPI_BUS` names an address that does not answer.
    RootSilent { address: String, source: Box<zbus::Error> },
    /// `$DBUS_SESSION_BUS_ADDRESS` is not set.
    NoSessionBus,
    /// The session bus does not answer.
    SessionSilent(Box<zbus::Error>),
    /// The session bus knows no accessibility bus.
    NoA11yBus(Box<zbus::Error>),
    /// The session bus names an address that does not answer.
    NamedSilent { address: String, source: Box<zbus::Error> },
    /// Every way of finding the bus failed: why each did, in the order they were tried.
    NotFound(Vec<BusError>),
}

impl fmt::Display for BusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BusError::*;
        match self {
            Silent => f.write_str("it did not answer before"),
            Call(e) => f.write_str(&short(e)),
            Reply { method, source } => write!(f, "{method}: an unexpected reply ({source})"),
            NameNotText(e) => write!(f, "Name: not a string ({e})"),
            NoRootProperty => f.write_str("the X root window has no AT_SPI_BUS property"),
            RootSilent { address, source } => write!(f, "AT_SPI_BUS {address:?} does not answer ({})", short(source)),
            NoSessionBus => f.write_str("no session bus ($DBUS_SESSION_BUS_ADDRESS is not set)"),
            SessionSilent(e) => write!(f, "the session bus does not answer ({})", short(e)),
            NoA11yBus(e) => write!(f, "the session bus has no accessibility bus ({})", short(e)),
            NamedSilent { address, source } => {
                write!(f, "the session bus names {address:?}, which does not answer ({})", short(source))
            }
            NotFound(why) => {
                for (i, e) in why.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    e.fmt(f)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for BusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        use BusError::*;
        match self {
            Call(e) | SessionSilent(e) | NoA11yBus(e) => Some(e.as_ref()),
            Reply { source, .. } | RootSilent { source, .. } | NamedSilent { source, .. } => Some(source.as_ref()),
            NameNotText(e) => Some(e),
            // Several causes, each already in the message.
            Silent | NoRootProperty | NoSessionBus | NotFound(_) => None,
        }
    }
}

/// Why a widget could not be pressed.
pub enum PressError {
    /// It is gone or does not answer.
    Gone(BusError),
    /// It (its role and name) has no place on screen.
    OffScreen(String),
}

/// What one call per fact tells about an object.
pub struct Info {
    pub role: String,
    pub name: String,
    pub states: u64,
    pub interfaces: Vec<String>,
}

impl Info {
    pub fn has(&self, state: u32) -> bool {
        self.states & (1u64 << state) != 0
    }

    /// Whether it implements `org.a11y.atspi.<short>` (e.g. "Component").
    pub fn implements(&self, short: &str) -> bool {
        self.interfaces.iter().any(|i| i.strip_prefix("org.a11y.atspi.") == Some(short))
    }
}

pub struct Bus {
    conn: Connection,
    /// Applications (bus names) that let a call time out in this walk: not asked again, so a
    /// hung application costs one `CALL_LIMIT`, not one per object.
    silent: RefCell<HashSet<String>>,
    /// Where the address came from, for the listing's note.
    pub found_via: &'static str,
}

impl Bus {
    /// Connect to the accessibility bus of this display's session; the error says why not.
    pub fn open(x: &X) -> Result<Bus, BusError> {
        let mut why = Vec::new();
        match root_property(x) {
            Some(address) => match connect(&address) {
                Ok(conn) => return Ok(Bus::new(conn, "the AT_SPI_BUS property of the X root window")),
                Err(e) => why.push(BusError::RootSilent { address, source: Box::new(e) }),
            },
            None => why.push(BusError::NoRootProperty),
        }
        let from_session = address_from_session()
            .and_then(|address| connect(&address).map_err(|e| BusError::NamedSilent { address, source: Box::new(e) }));
        match from_session {
            Ok(conn) => Ok(Bus::new(conn, "org.a11y.Bus on the session bus")),
            Err(e) => {
                why.push(e);
                Err(BusError::NotFound(why))
            }
        }
    }

    fn new(conn: Connection, found_via: &'static str) -> Bus {
        Bus { conn, silent: RefCell::default(), found_via }
    }

    /// Forget which applications did not answer: each walk or click asks them again.
    pub fn ask_all_again(&self) {
        self.silent.borrow_mut().clear();
    }

    fn call<B, R>(&self, obj: &Obj, iface: &str, method: &'static str, body: &B) -> Result<R, BusError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
    {
        if self.silent.borrow().contains(&obj.0) {
            return Err(BusError::Silent);
        }
        let reply =
            self.conn.call_method(Some(obj.0.as_str()), obj.1.as_str(), Some(iface), method, body).map_err(|e| {
                if matches!(&e, zbus::Error::InputOutput(io) if io.kind() == std::io::ErrorKind::TimedOut) {
                    self.silent.borrow_mut().insert(obj.0.clone());
                }
                BusError::Call(Box::new(e))
            })?;
        reply.body().deserialize::<R>().map_err(|e| BusError::Reply { method, source: Box::new(e) })
    }

    /// The applications registered on the bus (the children of the desktop root).
    pub fn applications(&self) -> Result<Vec<Obj>, BusError> {
        self.children(&(REGISTRY.to_string(), ROOT.to_string()))
    }

    pub fn children(&self, obj: &Obj) -> Result<Vec<Obj>, BusError> {
        let list: Vec<(String, OwnedObjectPath)> = self.call(obj, ACCESSIBLE, "GetChildren", &())?;
        Ok(list.into_iter().map(|(name, path)| (name, path.as_str().to_string())).collect())
    }

    pub fn name(&self, obj: &Obj) -> Result<String, BusError> {
        let v: OwnedValue = self.call(obj, "org.freedesktop.DBus.Properties", "Get", &(ACCESSIBLE, "Name"))?;
        String::try_from(v).map_err(BusError::NameNotText)
    }

    pub fn info(&self, obj: &Obj) -> Result<Info, BusError> {
        let role: String = self.call(obj, ACCESSIBLE, "GetRoleName", &())?;
        let words: Vec<u32> = self.call(obj, ACCESSIBLE, "GetState", &())?;
        let states = words.iter().take(2).enumerate().fold(0u64, |acc, (i, &w)| acc | (w as u64) << (32 * i));
        let interfaces: Vec<String> = self.call(obj, ACCESSIBLE, "GetInterfaces", &())?;
        Ok(Info { role, name: self.name(obj)?, states, interfaces })
    }

    /// The process id behind a connection to the bus (the bus daemon answers, not the program).
    pub fn pid(&self, bus_name: &str) -> Option<u32> {
        let daemon = ("org.freedesktop.DBus".to_string(), "/org/freedesktop/DBus".to_string());
        self.call(&daemon, "org.freedesktop.DBus", "GetConnectionUnixProcessID", &(bus_name,)).ok()
    }

    /// x, y, width, height in screen pixels (coordinate type 0: the screen).
    pub fn extents(&self, obj: &Obj) -> Result<(i32, i32, i32, i32), BusError> {
        self.call(obj, COMPONENT, "GetExtents", &(0u32,))
    }

    /// The names of the object's actions, in their order (DoAction takes the index).
    pub fn actions(&self, obj: &Obj) -> Result<Vec<String>, BusError> {
        let list: Vec<(String, String, String)> = self.call(obj, ACTION, "GetActions", &())?;
        Ok(list.into_iter().map(|(name, _, _)| name).collect())
    }

    pub fn do_action(&self, obj: &Obj, index: usize) -> Result<bool, BusError> {
        self.call(obj, ACTION, "DoAction", &(index as i32,))
    }
}

fn connect(address: &str) -> Result<Connection, zbus::Error> {
    Builder::address(address).and_then(|b| b.method_timeout(CALL_LIMIT).build())
}

/// The bus address that at-spi-bus-launcher put on the X root window, if any.
fn root_property(x: &X) -> Option<String> {
    use x11rb::protocol::xproto::ConnectionExt as _;
    let atom = x.conn.intern_atom(true, b"AT_SPI_BUS").ok()?.reply().ok()?.atom;
    if atom == 0 {
        return None;
    }
    x.text(x.root, atom).ok().flatten().filter(|a| !a.trim().is_empty())
}

/// Ask the session bus (`$DBUS_SESSION_BUS_ADDRESS`) where the accessibility bus is.
fn address_from_session() -> Result<String, BusError> {
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        return Err(BusError::NoSessionBus);
    }
    let session = Builder::session()
        .and_then(|b| b.method_timeout(CALL_LIMIT).build())
        .map_err(|e| BusError::SessionSilent(Box::new(e)))?;
    let reply = session
        .call_method(Some("org.a11y.Bus"), "/org/a11y/bus", Some("org.a11y.Bus"), "GetAddress", &())
        .map_err(|e| BusError::NoA11yBus(Box::new(e)))?;
    reply
        .body()
        .deserialize::<String>()
        .map_err(|e| BusError::Reply { method: "org.a11y.Bus.GetAddress", source: Box::new(e) })
}

/// A zbus error in a few words: a timed-out call says so plainly.
fn short(e: &zbus::Error) -> String {
    match e {
        zbus::Error::InputOutput(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            format!("no answer within {} ms", CALL_LIMIT.as_millis())
        }
        zbus::Error::MethodError(name, text, _) => {
            format!("{}{}", name.as_str(), text.as_deref().map(|t| format!(": {t}")).unwrap_or_default())
        }
        other => other.to_string(),
    }
}

/// Walk the widgets of the visible windows in scope. Err only when the bus itself fails.
pub fn walk(bus: &Bus, x: &X, ids: &mut Ids, wins: &Windows, scope: &Scope) -> Result<Walk, BusError> {
    let pids = window_pids(x, wins);
    bus.ask_all_again();
    let apps = bus.applications()?;
    let mut walk = Walk { windows: Vec::new(), visited: 0, notes: Vec::new(), found_via: bus.found_via };
    let mut found: Vec<(usize, String, Obj, Info)> = Vec::new();
    for app in apps {
        if Instant::now() >= scope.deadline {
            walk.notes.push("time ran out before every application was asked".into());
            break;
        }
        // The name first: an application that does not answer costs one call limit here.
        match bus.name(&app) {
            Err(e) => walk.notes.push(format!("the application at {} left out: {e}", app.0)),
            Ok(name) => {
                let mine = Mine { wins, pids: &pids, pid: bus.pid(&app.0) };
                if let Err(e) = top_levels(bus, &app, &mine, scope, &mut found) {
                    walk.notes.push(format!("the application {name:?} left out: {e}"));
                }
            }
        }
    }
    // Top-most window first, as the window list is.
    found.sort_by_key(|f| f.0);
    for (_, title, obj, info) in found {
        let node = node(bus, ids, (&obj, &title), info, 0, scope, &mut walk);
        if bus.silent.borrow().contains(&obj.0) {
            walk.notes.push(format!("the application of {title:?} stopped answering: its widgets are incomplete"));
        }
        walk.windows.push((title, node));
    }
    if walk.visited >= MAX_NODES {
        walk.notes.push(format!("stopped after {MAX_NODES} objects"));
    }
    if Instant::now() >= scope.deadline {
        walk.notes.push("time ran out: the widget tree is incomplete".into());
    }
    Ok(walk)
}

/// The windows, the process of each that names one (`_NET_WM_PID`), and the application's.
struct Mine<'a> {
    wins: &'a Windows,
    pids: &'a [Option<u32>],
    pid: Option<u32>,
}

impl Mine<'_> {
    /// The visible window (rank, window) a top-level accessible stands for: same title or area,
    /// of the application's process when both say which (windows of the same size and place
    /// told apart), else of any.
    fn window(&self, name: &str, rect: Option<(i32, i32, i32, i32)>) -> Option<(usize, &Win)> {
        let looks = |w: &Win| w.visible && same(w, name, rect);
        let ours = |i: usize| matches!((self.pid, self.pids.get(i).copied().flatten()), (Some(a), Some(b)) if a == b);
        let list = || self.wins.list.iter().enumerate();
        list().find(|&(i, w)| ours(i) && looks(w)).or_else(|| list().find(|&(_, w)| looks(w)))
    }
}

/// `_NET_WM_PID` of each window in the list (None where it is not set).
fn window_pids(x: &X, wins: &Windows) -> Vec<Option<u32>> {
    use x11rb::protocol::xproto::ConnectionExt as _;
    let atom = x.conn.intern_atom(true, b"_NET_WM_PID").ok().and_then(|c| c.reply().ok()).map_or(0, |r| r.atom);
    wins.list.iter().map(|w| (atom != 0).then(|| x.list(w.id, atom).ok()?.first().copied()).flatten()).collect()
}

/// The showing top-level accessibles of `app` that stand for a visible X window in scope,
/// with the window's rank in the stacking order and its title.
fn top_levels(
    bus: &Bus,
    app: &Obj,
    mine: &Mine,
    scope: &Scope,
    found: &mut Vec<(usize, String, Obj, Info)>,
) -> Result<(), BusError> {
    for top in bus.children(app)? {
        let info = bus.info(&top)?;
        if !info.has(state::SHOWING) {
            continue;
        }
        let rect = if info.implements("Component") { bus.extents(&top).ok() } else { None };
        let Some((rank, win)) = mine.window(&info.name, rect) else { continue };
        if scope.window.is_none_or(|t| win.title.to_lowercase().contains(&t.to_lowercase())) {
            found.push((rank, win.title.clone(), top, info));
        }
    }
    Ok(())
}

/// One object and, while within the limits, its showing children. A child that vanished or
/// does not answer is left out; the rest is still read.
fn node(
    bus: &Bus,
    ids: &mut Ids,
    (obj, window): (&Obj, &str),
    info: Info,
    depth: usize,
    scope: &Scope,
    walk: &mut Walk,
) -> Node {
    walk.visited += 1;
    let rect = if info.implements("Component") { bus.extents(obj).ok() } else { None };
    let actions = if info.implements("Action") { bus.actions(obj).unwrap_or_default() } else { vec![] };
    let kids = if depth < scope.max_depth { bus.children(obj).unwrap_or_default() } else { vec![] };
    let interactive =
        !actions.is_empty() || [state::FOCUSABLE, state::EDITABLE, state::SELECTABLE].iter().any(|&s| info.has(s));
    let mut node = Node {
        id: ids.id_of(obj, window),
        states: notable_states(&info),
        role: info.role,
        name: info.name,
        rect: rect.filter(|r| r.2 > 0 && r.3 > 0),
        actions,
        interactive,
        children: Vec::new(),
    };
    for kid in kids {
        if walk.visited >= MAX_NODES || Instant::now() >= scope.deadline {
            break;
        }
        let Ok(info) = bus.info(&kid) else { continue };
        if info.has(state::SHOWING) {
            node.children.push(self::node(bus, ids, (&kid, window), info, depth + 1, scope, walk));
        }
    }
    node
}

/// Press widget `obj` as a plain left click would: with its click-like action when
/// `use_action` and it has one, else by telling where its centre is (screen pixels).
pub fn press(bus: &Bus, obj: &Obj, use_action: bool) -> Result<Pressed, PressError> {
    bus.ask_all_again();
    let info = bus.info(obj).map_err(PressError::Gone)?;
    let what = if info.name.is_empty() { info.role.clone() } else { format!("{} {:?}", info.role, info.name) };
    let rect = info.implements("Component").then(|| bus.extents(obj).ok()).flatten().filter(|r| r.2 > 0 && r.3 > 0);
    if use_action && info.implements("Action") {
        let actions = bus.actions(obj).map_err(PressError::Gone)?;
        let pick = CLICK_ACTIONS.iter().find_map(|want| actions.iter().position(|a| a.eq_ignore_ascii_case(want)));
        if let Some(i) = pick.filter(|&i| bus.do_action(obj, i).unwrap_or(false)) {
            return Ok(Pressed { what, action: Some(actions[i].clone()), centre: rect.map(centre) });
        }
    }
    match rect.filter(|_| info.has(state::SHOWING)) {
        Some(rect) => Ok(Pressed { what, action: None, centre: Some(centre(rect)) }),
        None => Err(PressError::OffScreen(what)),
    }
}

fn notable_states(info: &Info) -> Vec<&'static str> {
    let mut out = Vec::new();
    if !info.has(state::ENABLED) {
        out.push("disabled");
    }
    for (s, word) in [
        (state::FOCUSED, "focused"),
        (state::CHECKED, "checked"),
        (state::SELECTED, "selected"),
        (state::EXPANDED, "expanded"),
        (state::EDITABLE, "editable"),
        (state::IS_DEFAULT, "default"),
    ] {
        if info.has(s) {
            out.push(word);
        }
    }
    out
}
