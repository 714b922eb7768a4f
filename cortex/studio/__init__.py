"""`cortex studio`: a live terminal board of every case under the state root.

`data` loads (off the UI thread, never raising), `view` turns what was loaded into rich text
with every agent-written string made safe, `app` is the Textual application, and `launch` is
what the command line calls. Only `app` imports Textual.
"""
