"""A GTK 3 sign-in window for the masking tests: `gtk_password.py TITLE`.

A user name entry holding "ann", a password entry holding "hunter2" (shown as dots, which the
accessibility bus calls a "password text"), both wide and tall. GTK registers its widgets on
the accessibility bus when one is running (its bridge is built in). Closing it exits.
"""

import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

window = Gtk.Window(title=sys.argv[1])
window.set_default_size(500, 300)
window.move(100, 100)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=30)
for text, visible in (("ann", True), ("hunter2", False)):
    entry = Gtk.Entry()
    entry.set_text(text)
    entry.set_visibility(visible)
    entry.set_size_request(400, 60)
    box.pack_start(entry, False, False, 0)
window.add(box)
window.connect("destroy", Gtk.main_quit)
window.show_all()
Gtk.main()
