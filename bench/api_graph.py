"""API compatibility graph: precision and recall against hand labels.

Run: ``.venv/bin/python bench/api_graph.py [--min-score S] [--data ../shared/data]``.

1. tau-bench's airline and retail tools (issue #27): every ordered pair of tools is labelled by
   the edge list in tests/pipeline/tau_bench_edges.py (each edge with its reason); the tools'
   parameters are read from the shared data folder, their outputs from the output schemas in
   tests/pipeline/data/ (tau-bench declares none). Printed per domain, with every miss and false
   edge named. The goal is precision and recall >= 0.95.
2. The older sample of 52 labelled pairs (issue #17, bench/data/api_pairs.json: names and labels
   only) over STAR, tau-bench retail, tau2-bench airline and ABCD.

Each is printed for the word-overlap description similarity and, when the ML extra is installed,
for MiniLM embeddings.
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
OUTPUTS = ROOT / "tests" / "pipeline" / "data"


def tau_outputs(domain: str, apis: list[G.ApiNode]) -> list[G.ApiNode]:
    """The APIs with our output schemas for tau-bench `domain` (tools of the same name)."""
    schemas = json.loads((OUTPUTS / f"tau_bench_{domain}_outputs.json").read_text())
    names = {a.name for a in apis}
    return G.apply_output_schemas(apis, {k: v for k, v in schemas.items() if k in names})


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
        "tau_retail": tau_outputs("retail", G.load_apis(json.loads((data / "tau_bench" / "retail" / "tools.json").read_text()))),
        "tau2_airline": tau_outputs("airline", G.load_apis(json.loads((data / "tau2_bench" / "airline" / "tools.json").read_text()))),
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


def tau_edges(data: Path, *, min_score: float, embed) -> dict[str, dict]:
    """Per tau-bench domain: the graph's edges against the hand-labelled edge list."""
    from tests.pipeline.tau_bench_edges import EDGES

    out = {}
    for domain in ("airline", "retail"):
        apis = tau_outputs(domain, G.load_apis(json.loads((data / "tau_bench" / domain / "tools.json").read_text())))
        names = {a.name for a in apis}
        labelled = {(s, t) for s, t, _why in EDGES[domain]}
        unknown = {n for pair in labelled for n in pair} - names
        if unknown:
            raise SystemExit(f"the {domain} labels name tools that tau-bench does not have: {sorted(unknown)}")
        predicted = {(e.source, e.target) for e in G.build_graph(apis, min_score=min_score, embed=embed)}
        tp = len(predicted & labelled)
        out[domain] = {"tools": len(apis), "pairs": len(apis) * (len(apis) - 1), "labelled": len(labelled),
                       "predicted": len(predicted), "tp": tp,
                       "precision": tp / len(predicted) if predicted else None,
                       "recall": tp / len(labelled) if labelled else None,
                       "false": sorted(predicted - labelled), "missed": sorted(labelled - predicted)}
    return out


def print_tau(data: Path, similarities, min_score: float) -> None:
    fmt = lambda v: "  –  " if v is None else f"{100 * v:5.1f}%"  # noqa: E731
    for label, embed in similarities:
        r = tau_edges(data, min_score=min_score, embed=embed)
        both_tp = sum(d["tp"] for d in r.values())
        both_pred, both_lab = sum(d["predicted"] for d in r.values()), sum(d["labelled"] for d in r.values())
        for domain, d in r.items():
            print(f"tau-bench {domain:<7} {label:<18} min-score {min_score:.2f}: precision {fmt(d['precision'])} "
                  f"({d['tp']}/{d['predicted']}) recall {fmt(d['recall'])} ({d['tp']}/{d['labelled']}) "
                  f"over {d['pairs']} ordered pairs of {d['tools']} tools")
            for s, t in d["false"]:
                print(f"    false edge: {s} -> {t}")
            for s, t in d["missed"]:
                print(f"    missed:     {s} -> {t}")
        print(f"tau-bench both    {label:<18} min-score {min_score:.2f}: precision "
              f"{fmt(both_tp / both_pred if both_pred else None)} ({both_tp}/{both_pred}) recall "
              f"{fmt(both_tp / both_lab if both_lab else None)} ({both_tp}/{both_lab})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--min-score", type=float, action="append")
    args = parser.parse_args()
    similarities = [("word overlap", None)]
    if embeddings.available():
        similarities.append(("MiniLM embeddings", embeddings.embed))
    print("1. tau-bench airline and retail: every ordered pair of tools against tests/pipeline/tau_bench_edges.py")
    print_tau(Path(args.data), similarities, G.DEFAULT_MIN_SCORE)
    print("\n2. The issue #17 sample of labelled pairs")
    pairs = json.loads(LABELS.read_text())["pairs"]
    sets = load_sets(Path(args.data))
    print(f"{len(pairs)} labelled pairs ({sum(p[3] for p in pairs)} valid) over "
          + ", ".join(f"{k} ({len(v)} APIs)" for k, v in sets.items()))
    if not embeddings.available():
        print("ML extra not installed: MiniLM rows skipped")
    for label, embed in similarities:
        for s in args.min_score or [0.6, 0.7, 0.8]:
            t0 = time.perf_counter()
            r = evaluate(sets, pairs, min_score=s, embed=embed)
            fmt = lambda v: "  –  " if v is None else f"{100 * v:5.1f}%"  # noqa: E731
            print(f"{label:<18} min-score {s:.2f}: precision {fmt(r['precision'])} recall {fmt(r['recall'])} "
                  f"(tp {r['tp']}, fp {r['fp']}, fn {r['fn']}, tn {r['tn']}; {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
