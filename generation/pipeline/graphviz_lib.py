"""Drawing small graphs inside the process with Graphviz's own library, without starting ``dot``.

Even with only two plugins (``graphviz_env``), a ``dot -Tsvg`` run costs about 2 ms of CPU, nearly
all of it starting the program; the layout and the SVG of a review page's graph take about
0.3 ms. The ``graphviz`` package always brings the library ``dot`` itself is built on (libgvc,
libcgraph), so this module calls it through ``ctypes``: parse the DOT text (``agmemread``),
lay it out (``gvLayout``), write SVG to memory (``gvRenderData``), free everything. The output is
byte-for-byte what ``dot -Tsvg`` prints with the same plugins (tested).

Limits, and why the program stays the fallback:

* Graphviz's library is not thread-safe: one lock per process serialises the calls (each one is
  a fraction of a millisecond for the graphs it takes).
* A call cannot be interrupted, whereas ``dot`` runs under a timeout: only graphs up to
  ``MAX_NODES`` nodes and ``MAX_EDGES`` edges are drawn here (review pages' graphs have tens);
  bigger ones go to the program.
* The library loads its plugins from ``GVBINDIR`` when its context is created; the context is
  made once per process (again after a fork) with the lean plugin set of ``graphviz_env``.
  Without that set, or without the library, or when a call fails (a DOT syntax error, say),
  ``render`` returns None and the caller runs ``dot``, which reports the error.
  ``GRAPHVIZ_IN_PROCESS=0`` in the environment turns this module off.
"""
from __future__ import annotations

import ctypes
import os
import threading

from .graphviz_env import dot_env

MAX_NODES = 150
MAX_EDGES = 300
_LIBRARIES = ("libgvc.so.6", "libcgraph.so.6")
_AGMAX = 2  # cgraph's agseterr level: print no warnings or errors (the fallback reports them)

_lock = threading.Lock()
_state: dict[str, object] = {}


def _reset_after_fork() -> None:
    global _lock
    _lock = threading.Lock()
    _state.clear()  # a context made by the parent is not used in the child


os.register_at_fork(after_in_child=_reset_after_fork)


def _load() -> tuple | None:
    if os.environ.get("GRAPHVIZ_IN_PROCESS", "1") == "0":  # an operator's switch back to the program
        return None
    env = dot_env()
    if env is None or not env.get("GVBINDIR"):
        return None
    try:
        gvc, cgraph = (ctypes.CDLL(name) for name in _LIBRARIES)
    except OSError:
        return None
    gvc.gvContext.restype = ctypes.c_void_p
    gvc.gvContext.argtypes = []
    gvc.gvLayout.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
    gvc.gvRenderData.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint)]
    gvc.gvFreeRenderData.argtypes = [ctypes.c_void_p]
    gvc.gvFreeLayout.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    cgraph.agmemread.restype = ctypes.c_void_p
    cgraph.agmemread.argtypes = [ctypes.c_char_p]
    cgraph.agclose.argtypes = [ctypes.c_void_p]
    cgraph.agseterr.argtypes = [ctypes.c_int]
    previous = os.environ.get("GVBINDIR")
    os.environ["GVBINDIR"] = env["GVBINDIR"]  # read by gvContext() to find its plugins
    try:
        context = gvc.gvContext()
    finally:
        if previous is None:
            os.environ.pop("GVBINDIR", None)
        else:
            os.environ["GVBINDIR"] = previous
    if not context:
        return None
    cgraph.agseterr(_AGMAX)
    return gvc, cgraph, context


def _lib() -> tuple | None:
    """The loaded library and its context (the caller holds ``_lock``)."""
    if "lib" not in _state:
        _state["lib"] = _load()
    return _state["lib"]  # type: ignore[return-value]


def available() -> bool:
    with _lock:
        return _lib() is not None


def render(dot: str, nodes: int, edges: int) -> str | None:
    """``dot -Tsvg``'s output for `dot`, drawn in this process; None when the caller should run
    the program instead (graph too big, library missing, or the call failed)."""
    if nodes > MAX_NODES or edges > MAX_EDGES:
        return None
    with _lock:
        lib = _lib()
        if lib is None:
            return None
        gvc, cgraph, context = lib
        graph = cgraph.agmemread(dot.encode())
        if not graph:
            return None
        try:
            if gvc.gvLayout(context, graph, b"dot") != 0:
                return None
            try:
                data, size = ctypes.c_void_p(), ctypes.c_uint()
                if gvc.gvRenderData(context, graph, b"svg", ctypes.byref(data), ctypes.byref(size)) != 0:
                    return None
                try:
                    return ctypes.string_at(data, size.value).decode("utf-8")
                finally:
                    gvc.gvFreeRenderData(data)
            finally:
                gvc.gvFreeLayout(context, graph)
        except UnicodeDecodeError:
            return None
        finally:
            cgraph.agclose(graph)
