"""generation.pipeline.graphviz_env: dot with only the core and dot-layout plugins, same drawings."""
import os
import shutil
import stat
import subprocess

import pytest

from generation.pipeline import graphviz_env
from generation.pipeline.formats import parse_graph_text
from generation.pipeline.render import to_dot, to_svg

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")



def test_the_private_plugin_directory_holds_only_the_two_plugins_and_is_private():
    env = graphviz_env.dot_env()
    assert env is not None
    private = env["GVBINDIR"]
    mode = stat.S_IMODE(os.stat(private).st_mode)
    assert mode & 0o077 == 0, oct(mode)  # nobody else can put a plugin there
    names = sorted(os.listdir(private))
    plugins = [n for n in names if n.startswith("libgvplugin_")]
    assert plugins and all(n.startswith(graphviz_env._PLUGINS) for n in plugins), names
    assert any(n.startswith("config") for n in names), names
    assert graphviz_env.dot_env() is env  # made once per process


def test_a_lean_drawing_has_every_node_and_edge_and_escapes_labels_like_a_plain_one():
    from tests.curation.factories import FLOWGRAPH_TEXT, HOSTILE

    text = FLOWGRAPH_TEXT.replace("Please tell me your order id.", f"Please tell me your order id. {HOSTILE}")
    assert text != FLOWGRAPH_TEXT
    g = parse_graph_text(text, kind="flowgraph")
    lean = to_svg(g)
    plain = subprocess.run(["dot", "-Tsvg"], input=to_dot(g), capture_output=True, text=True, check=True).stdout
    plain = plain[plain.find("<svg"):]
    for marker in ("<title>", 'class="node"', 'class="edge"', "<text"):
        assert lean.count(marker) == plain.count(marker) > 0, marker
    assert "<script>" not in lean
    texts = sorted(t.split(">", 1)[1].split("<", 1)[0] for t in lean.split("<text")[1:])
    plain_texts = sorted(t.split(">", 1)[1].split("<", 1)[0] for t in plain.split("<text")[1:])
    assert texts == plain_texts  # the same labels, only positions may differ


def test_without_graphviz_the_plain_invocation_is_kept(monkeypatch):
    monkeypatch.setattr(graphviz_env.shutil, "which", lambda name: None)
    assert graphviz_env._prepare() is None
