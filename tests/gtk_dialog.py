"""A GTK 3 question dialog for the accessibility tests: `gtk_dialog.py TITLE TEXT`.

Yes exits 0, No exits 1, closing it otherwise 2. GTK registers its widgets on the
accessibility bus when one is running (its bridge is built in).
"""

import sys

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import Gtk  # noqa: E402

title, text = sys.argv[1], sys.argv[2]
dialog = Gtk.MessageDialog(message_type=Gtk.MessageType.QUESTION, buttons=Gtk.ButtonsType.YES_NO, text=text)
dialog.set_title(title)
dialog.set_position(Gtk.WindowPosition.CENTER)
answer = dialog.run()
sys.exit({Gtk.ResponseType.YES: 0, Gtk.ResponseType.NO: 1}.get(answer, 2))
