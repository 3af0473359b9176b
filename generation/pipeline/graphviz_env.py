"""Running ``dot`` with only the plugins an SVG needs, so each drawing costs milliseconds, not tens.

A plain ``dot -Tsvg`` loads every installed Graphviz plugin at start-up; with the Pango/Cairo
plugin installed (Debian's graphviz package has it) that means initialising fontconfig, about
15 ms of CPU for every drawing of a seven-node graph. The SVG writer (``core``) and the ``dot``
layout plugin are all we use. Graphviz finds its plugins through ``GVBINDIR``, so once per
process this module makes a private directory (``tempfile.mkdtemp``: mode 0700, a random name)
holding links to those two plugins and the configuration ``dot -c`` writes for them, and
``dot_env()`` returns an environment that points there. Drawing then takes about 3 ms of CPU.

Text widths are then estimated from Graphviz's built-in metrics of the standard fonts instead of
measured with the server's fonts; the browser draws the text with its own fonts either way.
If anything in this set-up fails (no ``dot``, an unexpected layout, a plugin missing), ``dot_env``
returns None and callers run ``dot`` as before.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
import threading

_PLUGINS = ("libgvplugin_core.so", "libgvplugin_dot_layout.so")
_lock = threading.Lock()
_state: dict[str, object] = {}


def dot_env() -> dict[str, str] | None:
    """The environment for a lean ``dot`` run, or None to run it with the default plugins."""
    with _lock:
        if "env" not in _state:
            _state["env"] = _prepare()
        return _state["env"]  # type: ignore[return-value]


def _prepare() -> dict[str, str] | None:
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        probe = subprocess.run([exe, "-v", "-Tsvg"], input="digraph{}", capture_output=True, text=True, timeout=30)
        found = re.search(r'libdir = "([^"]+)"', probe.stderr)
        if probe.returncode != 0 or not found:
            return None
        libdir = found.group(1)
        names = [n for n in os.listdir(libdir) if n.startswith(_PLUGINS)]
        if not all(any(n.startswith(p) for n in names) for p in _PLUGINS):
            return None
        private = tempfile.mkdtemp(prefix="almita-graphviz-")
        atexit.register(shutil.rmtree, private, True)
        for name in names:
            os.symlink(os.path.join(libdir, name), os.path.join(private, name))
        env = {**os.environ, "GVBINDIR": private}
        made = subprocess.run([exe, "-c"], env=env, capture_output=True, text=True, timeout=30)
        check = subprocess.run([exe, "-Tsvg"], input='digraph{a [label="x"]; a -> b}', env=env,
                               capture_output=True, text=True, timeout=30)
        if made.returncode != 0 or check.returncode != 0 or "<svg" not in check.stdout:
            return None
        return env
    except (OSError, subprocess.SubprocessError):
        return None
