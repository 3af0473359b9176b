"""Coverage of conversation graphs by accepted conversations (i15): per graph, per job, drawn.

"Accepted" means accepted by the reviewers with no rejected ancestor. That is read in exactly one
place, :func:`accepted_conversations`, so it can follow the curation app's definition of an item's
effective state.
"""
from __future__ import annotations

from typing import Any, Iterable

from django.db.models import Q, QuerySet

from generation.models import Conversation, ConversationGraph, CurationStatus, GenerationJob, SampledPath
from generation.pipeline.formats import GraphFormatError, graph_from_json
from generation.pipeline.gaps import GraphCoverage, graph_coverage, summarise


def accepted_conversations() -> QuerySet[Conversation]:
    """Conversations that count as curated tests: accepted, not excluded by a rejected ancestor."""
    return Conversation.objects.filter(status=CurationStatus.ACCEPTED)


def graph_paths(graphs: Iterable[int], conversations: QuerySet[Conversation] | None = None
                ) -> dict[int, list[list[str]]]:
    """The node paths of the given conversations (default: the accepted ones), by graph id."""
    qs = accepted_conversations() if conversations is None else conversations
    out: dict[int, list[list[str]]] = {g: [] for g in graphs}
    rows = qs.filter(path__conversation_graph_id__in=list(out)).values_list(
        "path__conversation_graph_id", "path__node_ids")
    for gid, node_ids in rows:
        out[gid].append([str(n) for n in node_ids])
    return out


def coverage_of(graphs: Iterable[ConversationGraph], conversations: QuerySet[Conversation] | None = None,
                paths: dict[int, list[list[str]]] | None = None
                ) -> list[tuple[ConversationGraph, GraphCoverage | None, str]]:
    """(graph, coverage, error) per graph; a graph whose data cannot be read gets its error.
    ``paths``: the conversations' node paths by graph id when the caller has them (as graph_paths)."""
    graphs = list(graphs)
    if paths is None:
        paths = graph_paths([g.pk for g in graphs], conversations)
    out = []
    for cg in graphs:
        try:
            g = graph_from_json(cg.data)
        except (GraphFormatError, KeyError, TypeError, ValueError) as exc:
            out.append((cg, None, f"graph {cg.pk} cannot be read: {exc}"))
            continue
        out.append((cg, graph_coverage(g, paths[cg.pk]), ""))
    return out


def graphs_of_job(job: GenerationJob) -> QuerySet[ConversationGraph]:
    """The graphs a job made, or sampled paths on (a gap-filling job works on existing graphs)."""
    sampled = SampledPath.objects.filter(job=job).values("conversation_graph_id")
    planned = list((job.config or {}).get("gap_paths") or {})  # a gap job's graphs, before it runs
    return ConversationGraph.objects.filter(Q(job=job) | Q(pk__in=sampled) | Q(pk__in=[int(g) for g in planned])
                                            ).order_by("pk")


def leaf_graphs(graphs: QuerySet[ConversationGraph]) -> QuerySet[ConversationGraph]:
    """Graphs that paths are sampled on: a noisy copy replaces its source when the job made one."""
    return graphs.filter(paths__isnull=False).distinct().order_by("pk")


def report(graphs: Iterable[ConversationGraph], conversations: QuerySet[Conversation] | None = None,
           paths: dict[int, list[list[str]]] | None = None) -> dict[str, Any]:
    """The JSON shape the command, the API and the pages share: per graph and the totals."""
    rows = coverage_of(graphs, conversations, paths)
    return {
        "summary": summarise(c for _, c, _ in rows if c is not None),
        "graphs": [{"graph": cg.pk, "status": cg.status, "error": err, **(c.as_dict() if c else {})}
                   for cg, c, err in rows],
    }


def job_coverage_summary(job: GenerationJob) -> dict[str, Any]:
    return report(leaf_graphs(graphs_of_job(job)))["summary"]


def coverage_drawing(cg: ConversationGraph, cov: GraphCoverage) -> dict[str, Any]:
    """The graph with covered and uncovered edges in two colours and a legend, as
    generation.drawing_cache hands it to a page: drawn by the worker, never in the request."""
    from generation.drawing_cache import drawing_for
    from generation.pipeline.render import to_dot

    try:
        g = graph_from_json(cg.data)
    except (GraphFormatError, KeyError, TypeError, ValueError) as exc:
        return {"svg": "", "error": f"The graph could not be drawn: {exc}", "pending": False}
    dot = to_dot(g, covered_edges=set(cov.covered_edges))
    return drawing_for("coverage", dot, g.number_of_nodes(), g.number_of_edges())


def format_report(data: dict[str, Any]) -> str:
    """Plain-text table for `manage.py coverage`."""
    lines = [f"{'graph':>6} {'status':<9} {'nodes':>9} {'edges':>9} {'edge %':>7}  uncovered edges"]
    for row in data["graphs"]:
        if row["error"]:
            lines.append(f"{row['graph']:>6} {row['status']:<9} {row['error']}")
            continue
        unc = ", ".join(f"{u}->{v}" for u, v in row["uncovered_edges"]) or "-"
        lines.append(f"{row['graph']:>6} {row['status']:<9} {row['covered_nodes']:>4}/{row['nodes']:<4} "
                     f"{row['covered_edges']:>4}/{row['edges']:<4} {100 * row['edge_coverage']:>6.1f}%  {unc}")
    s = data["summary"]
    lines.append(f"total: {s['graphs']} graphs ({s['fully_covered_graphs']} fully covered); nodes "
                 f"{s['covered_nodes']}/{s['nodes']} ({100 * s['node_coverage']:.1f}%); edges "
                 f"{s['covered_edges']}/{s['edges']} ({100 * s['edge_coverage']:.1f}%); noise branches "
                 f"{s['covered_noise_branches']}/{s['noise_branches']}")
    return "\n".join(lines)
