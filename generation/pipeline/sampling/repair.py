"""Walk surgery for the coverage sampler: chaining uncovered edges into walks, splicing tours, cutting
walks that break the loop bound, dropping redundant walks."""
from __future__ import annotations

from collections import deque

from .index import _allowed_except, _bfs_path, _counts, _Index, _within_cap


def _chain_walks(ix: _Index, cap: int, todo: list[tuple[int, int]],
                 tries: int = 16) -> list[list[int]]:
    """Walks within the loop bound covering the edges in ``todo``: each walk repeatedly goes the
    shortest way to the nearest edge still to cover that leaves a leaf reachable afterwards, takes
    it, and finally goes the shortest way to a leaf. An edge no walk within the bound can take is
    left out."""
    ok0 = ix.ok(frozenset())
    left = dict.fromkeys(todo)  # ordered set
    out: dict[int, list[int]] = {}
    for u, v in todo:
        out.setdefault(u, []).append(v)
    walks: list[list[int]] = []
    while left:
        path, counts = [ix.root], {ix.root: 1}
        gained = 0
        while True:
            blocked = frozenset(x for x, c in counts.items() if c >= cap)
            okb = ix.ok(blocked)
            step = None
            prev = {path[-1]: None}
            queue = deque([path[-1]])
            attempts = 0
            while queue and step is None and attempts < tries:
                x = queue.popleft()
                for y in out.get(x, ()):
                    if (x, y) not in left or not okb[y]:
                        continue
                    attempts += 1
                    way = [x]
                    while prev[way[-1]] is not None:
                        way.append(prev[way[-1]])
                    ext = way[::-1][1:] + [y]
                    c2 = dict(counts)
                    for z in ext:
                        c2[z] = c2.get(z, 0) + 1
                    if max(c2[z] for z in ext) > cap:
                        continue
                    if not ix.ok(frozenset(z for z, c in c2.items() if c >= cap))[y] and not ix.leaf[y]:
                        continue
                    step = (ext, c2)
                    break
                for y in ix.children[x]:
                    if y not in prev and okb[y]:
                        prev[y] = x
                        queue.append(y)
            if step is None:
                break
            ext, counts = step
            for a, b in zip([path[-1]] + ext, ext):
                if (a, b) in left:
                    del left[(a, b)]
                    gained += 1
            path += ext
        if not ix.leaf[path[-1]]:
            blocked = frozenset(x for x, c in counts.items() if c >= cap)
            tail = _bfs_path(ix, path[-1], lambda z: ix.leaf[z], ix.ok(blocked))
            if tail is None:  # cannot happen: every step kept a leaf reachable
                raise AssertionError("chained walk lost its way to a leaf")
            for a, b in zip(tail, tail[1:]):
                if (a, b) in left:
                    del left[(a, b)]
                    gained += 1
            path += tail[1:]
        if gained:
            walks.append(path)
            continue
        # Nothing reachable from the root this way: route a walk through the first edge left.
        u, v = next(iter(left))
        del left[(u, v)]
        walk = _walk_through(ix, cap, u, v, ok0)
        if walk is not None:
            for a, b in zip(walk, walk[1:]):
                left.pop((a, b), 0)
            walks.append(walk)
    return walks


def _walk_through(ix: _Index, cap: int, u: int, v: int, ok0: bytearray) -> list[int] | None:
    """A walk within the loop bound through edge (u, v): a shortest way in and a shortest way out
    that avoids the nodes the way in used up, or the other way round; None if neither works."""
    head = _bfs_path(ix, ix.root, lambda y: y == u, ok0)
    if head is not None:
        used = frozenset(x for x, c in _counts(head).items() if c >= cap)
        if v not in used:
            tail = _bfs_path(ix, v, lambda y: ix.leaf[y], ix.ok(used))
            if tail is not None and _within_cap(head + tail, cap):
                return head + tail
    tail = _bfs_path(ix, v, lambda y: ix.leaf[y], ok0)
    if tail is not None:
        used = {x for x, c in _counts(tail).items() if c >= cap}
        if u not in used and ix.root not in used:
            head = _bfs_path(ix, ix.root, lambda y: y == u, _allowed_except(ix, used))
            if head is not None and _within_cap(head + tail, cap):
                return head + tail
    return None


def _tour_walk(ix: _Index, tour: list[int], ok: bytearray) -> list[int]:
    """A walk root -> the tour -> a leaf, entering and leaving the tour at whichever of its nodes
    gives the shortest walk, avoiding the tour's other nodes where possible."""
    nodes = set(tour)
    best = None
    for r in range(len(tour) - 1):
        y = tour[r]
        allowed = _allowed_except(ix, nodes - {y})
        head = _bfs_path(ix, ix.root, lambda z: z == y, allowed) if y != ix.root else [y]
        tail = _bfs_path(ix, y, lambda z: ix.leaf[z], allowed)
        if head is None or tail is None:
            continue
        walk = head + tour[r + 1:-1] + tour[:r] + tail
        if best is None or len(walk) < len(best):
            best = walk
    if best is None:
        head = _bfs_path(ix, ix.root, lambda z: z == tour[0], ok) or [tour[0]]
        tail = _bfs_path(ix, tour[0], lambda z: ix.leaf[z], ok) or [tour[0]]
        best = head + tour[1:-1] + tail
    return best


def _split_walk(ix: _Index, cap: int, walk: list[int]) -> list[list[int]]:
    """Cut a walk that breaks the loop bound into walks within it covering the same edges where
    possible: follow the walk until the next step would break the bound, close the piece with a
    shortest way to a leaf within the bound (backing up along the walk if there is none), and
    start the next piece with a shortest way from the root to the node where the piece left off."""
    ok = ix.ok(frozenset())
    pieces: list[list[int]] = []
    cur, counts = [walk[0]], {walk[0]: 1}
    base, i = 1, 1  # walk[base:i] is the stretch of the walk that ``cur`` has followed so far
    while i < len(walk):
        v = walk[i]
        if counts.get(v, 0) < cap:
            cur.append(v)
            counts[v] = counts.get(v, 0) + 1
            i += 1
            continue
        j, tail = i, None
        while j > base:
            tail = _bfs_path(ix, cur[-1], lambda z: ix.leaf[z],
                             ix.ok(frozenset(x for x, c in counts.items() if c >= cap)))
            if tail is not None:
                break
            x = cur.pop()
            counts[x] -= 1
            j -= 1
        if tail is not None:
            pieces.append(cur + tail[1:])
            i = j
        # Next piece: root -> walk[i - 1], then on with walk[i] (steps the shortest way in leaves
        # no room for are skipped; the caller covers their edges separately).
        while True:
            head = _bfs_path(ix, ix.root, lambda z: z == walk[i - 1], ok) or [walk[i - 1]]
            cur, counts, base = list(head), _counts(head), i
            if i >= len(walk) or counts.get(walk[i], 0) < cap:
                break
            i += 1
    if base < len(walk) and ix.leaf[cur[-1]]:
        pieces.append(cur)
    return [p for p in pieces if max(_counts(p).values()) <= cap]


def _drop_redundant(walks: list[list[int]], targets: set[tuple[int, int]]) -> list[list[int]]:
    """Remove walks whose every target edge another kept walk also covers (longest first)."""
    edge_sets = [{(w[k], w[k + 1]) for k in range(len(w) - 1)} & targets for w in walks]
    counts: dict[tuple[int, int], int] = {}
    for s in edge_sets:
        for e in s:
            counts[e] = counts.get(e, 0) + 1
    keep = [True] * len(walks)
    for i in sorted(range(len(walks)), key=lambda i: -len(walks[i])):
        if all(counts[e] > 1 for e in edge_sets[i]):
            keep[i] = False
            for e in edge_sets[i]:
                counts[e] -= 1
    return [w for w, k in zip(walks, keep) if k]
