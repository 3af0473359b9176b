"""The closed loop at release level (i15): which graphs a release's tests come from, their coverage,
and the one scope lookup the coverage and fill_gaps commands and the API share. The loop package's
one door: other packages and the commands import from here (feedback's names are re-exported)."""
from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from almita_web.roles import ADMIN, has_role
from curation.agreement.services import format_economics, release_economics
from curation.loop.feedback import CHILDREN, FeedbackError, feedback_for, regenerate_with_feedback  # noqa: F401
from curation.models import Release
from curation.releases.services import release_find
from generation.coverage import graphs_of_job, leaf_graphs, report
from generation.loop_views import FillForm
from generation.models import Conversation, ConversationGraph, GenerationJob


class ScopeError(ValueError):
    """A --release / --job / --graph reference that names nothing."""


def release_conversations(release: Release) -> QuerySet[Conversation]:
    ids = release.entries.values_list("conversation_id", flat=True).distinct()
    return Conversation.objects.filter(pk__in=ids)


def release_graphs(release: Release) -> QuerySet[ConversationGraph]:
    gids = release_conversations(release).exclude(path__isnull=True).values("path__conversation_graph_id")
    return ConversationGraph.objects.filter(pk__in=gids).order_by("pk")


def release_coverage(release: Release) -> dict[str, Any]:
    """Coverage of the release's graphs by the release's own conversations (what the dataset covers)."""
    return report(release_graphs(release), release_conversations(release))


def resolve_scope(*, release: str | None = None, job: int | str | None = None, graph: int | str | None = None
                  ) -> tuple[str, QuerySet[ConversationGraph], Any]:
    """(label, graphs, the release or None) for exactly one of release / job / graph."""
    given = [x for x in (release, job, graph) if x not in (None, "")]
    if len(given) != 1:
        raise ScopeError("give exactly one of --release, --job or --graph")
    if release not in (None, ""):
        try:
            rel = release_find(str(release))
        except (Release.DoesNotExist, Release.MultipleObjectsReturned, ValueError) as exc:
            raise ScopeError(f"release {release!r} not found: {exc}") from None
        return f"release {rel}", release_graphs(rel), rel
    ref = job if job not in (None, "") else graph
    try:
        pk = int(str(ref))
    except ValueError:
        raise ScopeError(f"{'job' if graph in (None, '') else 'graph'} must be a number, not {ref!r}") from None
    if job not in (None, ""):
        found = GenerationJob.objects.filter(pk=pk).first()
        if found is None:
            raise ScopeError(f"job {pk} not found")
        return f"job {pk}", leaf_graphs(graphs_of_job(found)), None
    qs = ConversationGraph.objects.filter(pk=pk)
    if not qs.exists():
        raise ScopeError(f"conversation graph {pk} not found")
    return f"graph {pk}", qs, None


def scope_report(*, release=None, job=None, graph=None) -> dict[str, Any]:
    """Coverage by accepted conversations, or for a release by its own conversations."""
    label, graphs, rel = resolve_scope(release=release, job=job, graph=graph)
    data = release_coverage(rel) if rel is not None else report(graphs)
    return {"scope": label, **data}


def card_lines(release: Release, coverage: tuple[list[ConversationGraph], dict[int, list[list[str]]]] | None = None
               ) -> list[str]:
    """The dataset card's coverage and economics sections. ``coverage``: the release's graphs (by
    id) and its conversations' node paths per graph, when the caller has them (release_freeze
    does): the same report as release_coverage, without reading them again."""

    s = (report(coverage[0], paths=coverage[1]) if coverage is not None else release_coverage(release))["summary"]
    lines = ["## Coverage of the conversation graphs", ""]
    if s["graphs"]:
        lines += [
            f"- Node coverage: {s['covered_nodes']}/{s['nodes']} ({100 * s['node_coverage']:.1f}%)",
            f"- Edge coverage: {s['covered_edges']}/{s['edges']} ({100 * s['edge_coverage']:.1f}%)",
            f"- Graphs fully covered (every edge): {s['fully_covered_graphs']} of {s['graphs']}",
            f"- Noise branches covered: {s['covered_noise_branches']} of {s['noise_branches']}",
            "", "Counted over the release's own conversations, on the graphs they were sampled from.",
        ]
    else:
        lines.append("No conversation in this release comes from a conversation graph.")
    lines += ["", "## Curation economics", ""] + format_economics(release_economics(release)) + [""]
    return lines


def release_loop_context(release: Release, user) -> dict[str, Any]:
    """The release page's loop block: coverage, economics, and the "Fill the gaps" form for admins."""
    return {"release_coverage": release_coverage(release)["summary"], "economics": release_economics(release),
            "fill_form": FillForm() if has_role(user, ADMIN) else None}
