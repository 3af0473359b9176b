"""API compatibility graph: precision and recall on hand-labelled API pairs (issue #17).

Run: ``.venv/bin/python bench/api_graph.py [--min-score S] [--data ../shared/data]``.
The labels (bench/data/api_pairs.json) name APIs only; their specs are read from the shared data
folder (tau-bench, tau2-bench, STAR, ABCD) at run time. A predicted positive is a pair with an edge
source -> target at the threshold. Printed for the word-overlap description similarity and, when
the ML extra is installed, for MiniLM embeddings, over a few thresholds.
"""
from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generation import embeddings  # noqa: E402
from generation.pipeline import api_graph as G  # noqa: E402

LABELS = ROOT / "bench" / "data" / "api_pairs.json"


def abcd_nodes(ontology: dict) -> list[G.ApiNode]:
    """ABCD actions: slots are inputs; look-up actions (kb_query, pull-up-account) return them."""
    nodes = []
    for group, actions in ontology["actions"].items():
        for name, slots in actions.items():
            fields = [G.Field(s, "str", s.replace("_", " ")) for s in slots]
            returns = group == "kb_query" or name == "pull-up-account"
            nodes.append(G.ApiNode(name, group, fields, list(fields) if returns else []))
    return nodes


def load_sets(data: Path) -> dict[str, list[G.ApiNode]]:
    star = [G.node_from_dict(json.loads(Path(f).read_text()), i)
            for i, f in enumerate(sorted(glob.glob(str(data / "star" / "apis" / "apis" / "*.json"))))]
    return {
        "star": star,
        "tau_retail": G.load_apis(json.loads((data / "tau_bench" / "retail" / "tools.json").read_text())),
        "tau2_airline": G.load_apis(json.loads((data / "tau2_bench" / "airline" / "tools.json").read_text())),
        "abcd": abcd_nodes(json.loads((data / "abcd" / "ontology.json").read_text())),
    }


def evaluate(sets, pairs, *, min_score: float, embed) -> dict:
    edges = {}
    for name, apis in sets.items():
        edges[name] = {(e.source, e.target) for e in G.build_graph(apis, min_score=min_score, embed=embed)}
    tp = fp = fn = tn = 0
    for set_name, source, target, valid, _why in pairs:
        names = {a.name for a in sets[set_name]}
        if source not in names or target not in names:
            raise SystemExit(f"label names an API missing from {set_name}: {source} or {target}")
        predicted = (source, target) in edges[set_name]
        tp += predicted and valid
        fp += predicted and not valid
        fn += valid and not predicted
        tn += not valid and not predicted
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else None, "recall": tp / (tp + fn) if tp + fn else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--min-score", type=float, action="append")
    args = parser.parse_args()
    pairs = json.loads(LABELS.read_text())["pairs"]
    sets = load_sets(Path(args.data))
    print(f"{len(pairs)} labelled pairs ({sum(p[3] for p in pairs)} valid) over "
          + ", ".join(f"{k} ({len(v)} APIs)" for k, v in sets.items()))
    similarities = [("word overlap", None)]
    if embeddings.available():
        similarities.append(("MiniLM embeddings", embeddings.embed))
    else:
        print("ML extra not installed: MiniLM row skipped")
    for label, embed in similarities:
        for s in args.min_score or [0.6, 0.7, 0.8]:
            t0 = time.perf_counter()
            r = evaluate(sets, pairs, min_score=s, embed=embed)
            fmt = lambda v: "  –  " if v is None else f"{100 * v:5.1f}%"  # noqa: E731
            print(f"{label:<18} min-score {s:.2f}: precision {fmt(r['precision'])} recall {fmt(r['recall'])} "
                  f"(tp {r['tp']}, fp {r['fp']}, fn {r['fn']}, tn {r['tn']}; {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
