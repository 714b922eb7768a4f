"""Terminal rendering shared by the faces that draw on a terminal (the CLI and the studio).

- `text`: `safe` and `clean`, the escaping every string from a case passes through;
- `blocks`: key/value grids, warnings, the status block and the assessment rows;
- `show`: the `case show` screen;
- `columns`: which columns of a table fit a width; `ink`: styled text that needs rich only when a
  terminal draws it.

A library of the faces, not a face: it imports the kernel's types and rich, never a face, so the
CLI and the studio share it without importing each other.
"""
