"""The paper's configuration side by side with ours (issue #32 item 7): `--part economy`.

The same job runs twice on the same simulated endpoint, at content and transport fault rates 0,
0.1 and 0.3. It starts from imported procedures with their APIs and flowgraphs, 8 leaves each: three
are trees (three levels of API calls with two outcomes each), three are combs (seven checks in a
row, a failed one ending the conversation: the usual shape of a support procedure), so every LLM call is an A.6 conversation
along one sampled path, and the endpoint writes a valid conversation for any path it is given
(the offline realiser) unless a fault is drawn: a 429, a 5xx, a body cut off (transport, retried
by the client in both configurations), or a reply that is wrong-shape JSON, JSON cut off, or a
conversation that breaks a rule (content).

* **paper** — Algorithm 1, n walks per graph as drawn (repeats kept, each one realised), a reply
  that fails parsing or validation discarded (no repair), no cache.
* **ours** — the coverage sampler (the fewest paths covering every edge), repair turns, the
  cache, repeated paths and tests dropped.

Printed for each: HTTP requests and tokens per distinct valid test, the edge coverage reached
(edges of the job's conversation graphs on the path of a valid conversation, of those a bounded
walk can take), and the requests made until every such edge was covered (replaying the calls in
the order each graph's walks were drawn, stopping at the first that completes its cover) with
the distinct tests made by then. The headline is requests per
distinct valid test for a dataset covering every edge, paper ÷ ours (target ≥ 3 at fault 0.1),
printed both as run (n walks, which grows with n) and with the paper's walks stopped at the first
that completes each graph's cover (which does not: the fairest reading).
"""
from __future__ import annotations

import json
import random
import re
import threading
import zlib
from pathlib import Path

from bench.generation_common import Worker

PROCEDURES = 6
API_LEVELS = 3  # a tree: 1 + 2 + 4 API nodes, 8 end messages
COMB_CHECKS = 7  # a comb: 7 checks in a row, each failing one ending the call, 8 end messages


def _api(level: int) -> dict:
    return {"name": f"step_{level}", "desc": f"Check step {level} of the order",
            "params": [{"name": "account_number", "type": "int"}], "output": {"name": f"ok_{level}", "type": "bool"}}


def _flowgraph(i: int, tag: str, shape: str) -> tuple[str, dict]:
    """A branching flowgraph and its APIs (the A.3 shape). `tree`: every check branches into two
    further checks; `comb`: sequential checks where a failed one ends the conversation (the usual
    shape of a support procedure: verify, then verify the next thing, ...). Both have 8 leaves."""
    lines = [f"[N0](start_message){{Greet the customer of branch office {i} ({tag}, {shape})}}",
             f"[N1](message){{Ask for the customer's account number at office {i} ({tag})}}",
             "[E0](N0, N1){Has a problem with an order}", "[E1](N1, N2){Gives the account number}"]
    edge, node, frontier, leaves = 2, 2, [2], []
    levels = API_LEVELS if shape == "tree" else COMB_CHECKS
    for level in range(levels):
        nxt = []
        for parent in frontier:
            lines.append(f"[N{parent}](api){{step_{level}}}")
            for outcome in ("passed", "failed"):
                node += 1
                lines.append(f"[E{edge}](N{parent}, N{node}){{Step {level} {outcome}}}")
                edge += 1
                (leaves if shape == "comb" and outcome == "failed" else nxt).append(node)
        frontier = nxt
    for leaf in leaves + frontier:
        lines.append(f"[N{leaf}](end_message){{Explain the outcome and say goodbye}}")
    return "<flow>\n" + "\n".join(lines) + "\n</flow>", {"apis": [_api(level) for level in range(levels)]}


def import_document(tag: str) -> dict:
    """The job's imported procedures; `tag` makes each run's prompts its own (no cache across runs)."""
    docs = []
    for i in range(PROCEDURES):
        flow, apis = _flowgraph(i, tag, "tree" if i % 2 == 0 else "comb")
        docs.append({"intent": {"client": "parcel carrier", "issue": f"order problem {i}", "name": f"order {i}"},
                     "title": f"Order checks {i}", "text": f"# Order checks {i}\n1. Ask.\n2. Check.\n3. Answer.",
                     "apis": apis, "flowgraph": flow})
    return {"procedures": docs}


def endpoint(rate: float, seed: int):
    """The simulated endpoint: a valid conversation for the path asked, or a fault in `rate` of requests."""
    from generation.pipeline.apis import parse_api_list
    from generation.pipeline.formats import parse_graph_text
    from generation.pipeline.realise import realise_conversation
    from tests.fake_openai import Reply, first_question

    rng, lock = random.Random(seed), threading.Lock()
    broken = Reply(content=json.dumps({"messages": [{"role": "assistant", "content": "Hello, how can I help?"}]}))
    pool = [Reply.rate_limited(0.01), Reply.server_error(500), Reply.truncated(),
            Reply.wrong_shape(), Reply.truncated_json(), broken]

    def handler(body: dict, n: int) -> Reply:
        with lock:
            fault, choice = rng.random() < rate, rng.choice(pool)
        if fault:
            return choice
        user = first_question(body)["messages"][-1]["content"]
        graph_text, rest = user.split("<apis>", 1)
        apis_text, path_text = rest.split("</apis>", 1)
        path = [p.strip() for p in re.search(r"path: \[(.*?)\]", path_text).group(1).split(",")]
        g = parse_graph_text(graph_text, kind="conversation")
        convo = realise_conversation(g, path, list(parse_api_list(json.loads(apis_text))),
                                     seed=zlib.crc32(json.dumps([graph_text, path]).encode()))
        return Reply(content=json.dumps({"messages": convo}), prompt_tokens=len(user) // 4, completion_tokens=150)

    return handler


CONFIGS = {
    "paper": {"sampler": "algorithm1", "dedup": False, "repairs": 0, "cache": False},
    "ours": {"sampler": "coverage", "cache": True},
}


def measure(job) -> dict:
    """Requests, tokens, distinct valid tests, coverage, and the requests to full edge coverage.

    Requests to full coverage: for each graph, its paths in the order they were drawn, adding each
    path's requests (every attempt and repair turn of its conversation) until the valid
    conversations so far cover every coverable edge of the graph — as if sampling had stopped
    there, the most favourable reading for a sampler that draws more walks than it needs.
    """
    from collections import Counter

    from django.db.models import Sum

    from generation.models import Conversation, ConversationGraph, LLMCall, SampledPath, Test
    from generation.pipeline.formats import graph_from_json
    from generation.pipeline.extract import extract_tests
    from generation.pipeline.sampling import coverable_edges
    from generation.stages.derived import case_fingerprint

    sent = LLMCall.objects.filter(job=job).exclude(outcome="cached")
    tokens = sent.aggregate(p=Sum("prompt_tokens"), c=Sum("completion_tokens"))
    requests_of = Counter(int(k.rsplit(":", 1)[1]) for k in sent.filter(stage="conversations").values_list("key", flat=True))
    conv_of = dict(Conversation.objects.filter(job=job).values_list("path_id", "pk"))
    # Each conversation's tests by fingerprint, from its messages (stored tests are deduplicated
    # across the job, so a repeated path's tests are stored under whichever conversation came first).
    tests_of = {pk: {case_fingerprint(t["context"], t["expected"]) for t in extract_tests(messages)}
                for pk, messages in Conversation.objects.filter(job=job).values_list("pk", "messages")}
    total = reached = 0
    full: list = [0, set()]  # requests, distinct tests until every graph was covered
    all_covered = True
    # shape → [requests until its graphs were covered, graphs, graphs covered, distinct tests by then]
    by_shape: dict[str, list] = {}
    for cg in ConversationGraph.objects.filter(job=job):
        shape = by_shape.setdefault("comb" if ", comb)" in cg.text else "tree", [0, 0, 0, set()])
        target = set(coverable_edges(graph_from_json(cg.data)))
        total += len(target)
        covered: set = set()
        done = False
        for path in SampledPath.objects.filter(job=job, conversation_graph=cg).order_by("index"):
            if not done:
                full[0] += requests_of[path.pk]
                shape[0] += requests_of[path.pk]
                shape[3] |= tests_of.get(conv_of.get(path.pk), set())
                full[1] |= tests_of.get(conv_of.get(path.pk), set())
            if path.pk in conv_of:
                covered |= set(zip(path.node_ids, path.node_ids[1:]))
            done = done or target <= covered
        reached += len(target & covered)
        all_covered &= done
        shape[1] += 1
        shape[2] += int(done)
    return {"requests": sent.count(), "tokens": (tokens["p"] or 0) + (tokens["c"] or 0),
            "tests": Test.objects.filter(job=job).count(), "coverage": reached / total if total else 1.0,
            "full_at": (full[0], len(full[1])) if all_covered else None, "by_shape": by_shape}


def economy_part(var_dir: Path, rates: list[float], paper_paths: int = 100) -> dict:
    from django.conf import settings

    from generation import services
    from tests.fake_openai import FakeOpenAI

    results: dict = {}
    with FakeOpenAI() as fake:
        settings.OPENAI_BASE_URL = fake.base_url
        env = {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "bench-key", "LLM_MAX_CONCURRENCY": "8",
               "LLM_CACHE": "true", "LLM_REPAIR_ATTEMPTS": "2", "LLM_MAX_RETRIES": "4"}
        worker = Worker(var_dir, env, threads=10)
        try:
            for rate in rates:
                for name, extra in CONFIGS.items():
                    fake.set_handler(endpoint(rate, seed=31))
                    paths = paper_paths if name == "paper" else 8
                    config = {"paths": paths, "conversations": "llm", "seed": 7, **extra}
                    job = services.job_create(config=config, import_data=import_document(f"run {rate}"),
                                              name=f"economy {name} at {rate}")
                    results[(rate, name)] = measure(worker.wait(job, 900))
        finally:
            worker.stop()
    print(f"economy: the paper's configuration (Algorithm 1, n={paper_paths} walks per graph, discard, no cache) vs ours"
          f" (coverage sampler, repair, cache, dedup); {PROCEDURES} imported graphs, 8 leaves each")
    print(f"{'faults':>6} {'config':>6} {'requests':>8} {'tests':>6} {'req/test':>8} {'tokens/test':>11} "
          f"{'coverage':>8} {'req to full':>11} {'req/test at full':>16}")
    for (rate, name), r in results.items():
        full = r["full_at"]
        at_full = f"{full[0] / full[1]:.2f}" if full and full[1] else "not reached"
        print(f"{rate:>6.1f} {name:>6} {r['requests']:>8} {r['tests']:>6} {r['requests'] / max(r['tests'], 1):>8.2f} "
              f"{r['tokens'] / max(r['tests'], 1):>11.0f} {r['coverage']:>8.3f} "
              f"{full[0] if full else 'never':>11} {at_full:>16}")
    for (rate, name), r in list(results.items()):
        shapes = ", ".join(f"{shape}s: {v[2]}/{v[1]} covered, {v[0]} requests for {len(v[3])} distinct tests until then"
                           for shape, v in sorted(r["by_shape"].items()))
        print(f"{rate:>6.1f} {name:>6}: {shapes}")
        for shape, v in r["by_shape"].items():
            results[(rate, name, shape)] = (v[0] / max(len(v[3]), 1)) if v[2] == v[1] else None
    for rate in rates:
        for shape in ("tree", "comb"):
            p_shape, o_shape = results.get((rate, "paper", shape)), results.get((rate, "ours", shape))
            if p_shape and o_shape:
                print(f"fault rate {rate}, {shape}s: requests per distinct valid test covering every edge, "
                      f"paper ÷ ours = {p_shape / o_shape:.2f}")
            else:
                print(f"fault rate {rate}, {shape}s: {'ours' if p_shape else 'the paper' + chr(39) + 's configuration'} "
                      f"did not cover every edge (n={paper_paths} walks per graph for the paper)")
    for rate in rates:
        p_run, o_run = results[(rate, "paper")], results[(rate, "ours")]
        plain = (p_run["requests"] / max(p_run["tests"], 1)) / (o_run["requests"] / max(o_run["tests"], 1))
        print(f"fault rate {rate}: requests per distinct valid test as run (paper with n={paper_paths}), "
              f"paper ÷ ours = {plain:.2f}")
        paper, ours = p_run["full_at"], o_run["full_at"]
        if paper and ours and paper[1] and ours[1]:
            ratio = (paper[0] / paper[1]) / (ours[0] / ours[1])
            print(f"fault rate {rate}: requests per distinct valid test covering every edge, the paper's walks "
                  f"stopped at its cover, paper ÷ ours = {ratio:.2f}")
            results[(rate, "ratio")] = ratio
        else:
            who = " and ".join(n for n, f in (("the paper's configuration", paper), ("ours", ours)) if not f)
            print(f"fault rate {rate}: {who} never covered every edge (n={paper_paths} walks for the paper)")
            results[(rate, "ratio")] = float("inf") if ours else 0.0
    return results
