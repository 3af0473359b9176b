"""Evaluation benchmark (issue #7).

    .venv/bin/python bench/evaluation.py                      # 1,420 tests, 0.2 s latency, cap 8
    .venv/bin/python bench/evaluation.py --latency 0.5 --cap 16 --tests 1420 --similarity lexical
    .venv/bin/python bench/evaluation.py --skip-run           # only the BERTScore throughput

1. Wall time of one evaluation run of N tests (default 1,420, ALMITA's size) against the local
   fake OpenAI server in simulation mode, in a separate process as a real endpoint would be: every request takes a fixed latency and the server
   serves at most `cap` requests at once. The run uses `cap` lanes (the same `run_step` the Celery
   lane task loops over, here on threads in this process), the real LLM layer (`generation.llm.chat`:
   semaphore, retries, one LLMCall row per call), answer parsing, judging, one TestResult write per
   test and the final report with 1,000 bootstrap samples. Ideal = N × latency / cap.
   Target: wall / ideal ≤ 1.25.
   With BERTScore, the run is then re-judged (`services.run_rejudge`: the stored answers scored
   again in batches of 512, no agent calls) with an empty embedding cache; the time inside
   BERTScore and the whole re-judge are printed. The agent paraphrases the expected replies, so
   the pairs are distinct texts, as with a real model.
2. BERTScore F1 throughput on CPU with the packaged all-MiniLM-L6-v2 (batches of distinct
   pairs, as a re-judgement scores them; also one pair at a time, as a lane does).
   Target: ≥ 300 pairs/s. Skipped when the ML extra is not installed.

Runs on a throwaway SQLite database under a temporary ALMITA_VAR_DIR. The standalone runner's
figure (python -m evaluation.runner against a simulated HTTP agent, no database) is bench/runner.py.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = ("customer order refund parcel account verify address payment confirm cancel delivery status "
         "check apologise escalate record offer explain close invoice replace warranty shipment "
         "tracking number email phone store credit card subscription renew upgrade password").split()


def setup_django(var_dir: str, cap: int) -> None:
    os.environ["DEBUG"] = "true"
    os.environ["ALMITA_VAR_DIR"] = var_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ["LLM_MAX_CONCURRENCY"] = str(cap)
    os.environ["LLM_CACHE"] = "false"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    class NoMigrations(dict):  # build the schema from the models, as the tests do
        def __contains__(self, item):
            return True

        def __getitem__(self, item):
            return None

    settings.MIGRATION_MODULES = NoMigrations()
    call_command("migrate", run_syncdb=True, verbosity=0)


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def build_release(n_tests: int, seed: int = 3):
    """ALMITA-shaped: conversations of 4-11 tests, ~55 % API calls, a few noisy ones."""
    from curation.models import Release, ReleaseTest

    rng = random.Random(seed)
    release = Release.objects.create(name="bench", version=1, content_hash="0" * 64, manifest={})
    apis = [{"name": f"api_{j}", "desc": "Does one thing.", "params": [{"name": "order_id", "type": "int", "required": True}],
             "output": {"name": "result", "type": "dict"}} for j in range(4)]
    procedure = " ".join(rng.choice(WORDS) for _ in range(300))
    rows, expected_of, conv, test_id = [], {}, 0, 0
    while test_id < n_tests:
        conv += 1
        noise = ["out_of_procedure"] if rng.random() < 0.2 else []
        context = []
        for k in range(min(rng.randint(4, 11), n_tests - test_id)):
            test_id += 1
            context = context + [{"role": "user", "content": f"{sentence(rng, 12)} [t{test_id}]"}]
            if rng.random() < 0.55:
                expected = {"type": "api_call", "name": rng.choice(apis)["name"], "parameters": {"order_id": rng.randint(1, 9999)}}
            else:
                expected = {"type": "reply", "content": sentence(rng, 14)}
            expected_of[test_id] = expected
            rows.append(ReleaseTest(release=release, test_id=test_id, conversation_id=conv, position=2 * k + 1, data={
                "procedure": procedure, "apis": apis, "context": list(context), "expected": expected,
                "noise_kinds": noise, "conversation_id": conv, "position": 2 * k + 1}))
            context = context + [{"role": "assistant", "content": sentence(rng, 10)}]
    ReleaseTest.objects.bulk_create(rows, batch_size=500)
    return release, expected_of


def answer_handler(expected_of: dict[int, dict]):
    """A plausible agent: mostly right, sometimes a wrong kind of action, sometimes garbage."""
    from tests.fake_openai import Reply

    mark = re.compile(r"\[t(\d+)\]")

    def handler(body: dict, n: int) -> Reply:
        user = body["messages"][-1]["content"]
        t = int(mark.findall(user)[-1])
        e = expected_of[t]
        roll = (t * 7919) % 100
        if roll < 5:
            return Reply(content="I am not sure what to do here.")
        if e["type"] == "api_call" and roll < 85:
            return Reply(content=json.dumps({"type": e["name"], "parameters": e["parameters"]}))
        if e["type"] == "reply" and roll < 85:
            # A paraphrase, not the expected text itself: real agents word their replies their own
            # way, and identical texts would be embedded once (flattering the BERTScore figures).
            words = e["content"].rstrip(".").split()
            said = " ".join(words[len(words) // 2:] + words[:len(words) // 2]).capitalize() + "?"
            return Reply(content=json.dumps({"type": "reply", "parameters": {"content": said}}))
        return Reply(content=json.dumps({"type": "reply", "parameters": {"content": "Could you tell me more?"}}))

    return handler


def _serve(conn, expected_of: dict, latency: float, cap: int) -> None:
    """The simulated endpoint, in its own process like a real one (it must not share our GIL)."""
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI(answer_handler(expected_of), latency=latency, max_concurrency=cap) as fake:
        conn.send(fake.base_url)
        conn.recv()
        conn.send(fake.peak_in_flight)


def bench_run(args) -> dict:
    import multiprocessing

    from django.conf import settings
    from django.db import connections

    import generation.llm  # noqa: F401 - a worker has the client imported before its first test
    from evaluation import services
    from evaluation import similarity as S
    from evaluation.models import AgentMode

    release, expected_of = build_release(args.tests)
    scorer = S.get_scorer(args.similarity)
    scorer.score(["warm up the model"], ["load it before timing"])
    connections.close_all()
    parent, child = multiprocessing.get_context("fork").Pipe()
    server = multiprocessing.get_context("fork").Process(target=_serve, args=(child, expected_of, args.latency, args.cap),
                                                         daemon=True)
    server.start()
    try:
        settings.OPENAI_BASE_URL = parent.recv()
        settings.OPENAI_API_KEY = "bench-key"
        agent = services.agent_create(name="bench agent", mode=AgentMode.PROMPT, model="fake-model")
        run = services.run_create(agent=agent, release=release, similarity=args.similarity,
                                  concurrency=args.cap, start=False)
        t0 = time.perf_counter()
        run = services.run_execute_inline(run=run, workers=args.cap)
        wall = time.perf_counter() - t0
        parent.send("stop")
        peak = parent.recv()
    finally:
        server.join(10)
        if server.is_alive():
            server.terminate()
    ideal = args.tests * args.latency / args.cap
    metrics = run.metrics["metrics"]
    out = {"tests": run.total, "evaluated": run.done, "status": run.status, "similarity": run.similarity,
           "latency_s": args.latency, "cap": args.cap, "peak_in_flight": peak,
           "wall_s": round(wall, 2), "ideal_s": round(ideal, 2), "ratio": round(wall / ideal, 3),
           "test_correct": f"{metrics['test_correct']['numerator']}/{metrics['test_correct']['denominator']}",
           "rejudge": None}
    if run.similarity == S.BERTSCORE:
        # Re-judge the run's stored answers with BERTScore, cold: the product's batch path (one
        # lane, 512 results per batch: embed, match, judge, bulk update), then the report.
        S.BertScorer._embeddings.clear()
        S.BertScorer.cache_size = max(S.BertScorer.cache_size, 4 * args.tests)
        scoring = [0.0]
        plain_score = S.BertScorer.score

        def timed_score(self, candidates, references):  # time spent inside BERTScore only
            t = time.perf_counter()
            try:
                return plain_score(self, candidates, references)
            finally:
                scoring[0] += time.perf_counter() - t

        S.BertScorer.score = timed_score
        try:
            t0 = time.perf_counter()
            again = services.run_execute_inline(run=services.run_rejudge(run=run, similarity=S.BERTSCORE, start=False))
            rewall = time.perf_counter() - t0
        finally:
            S.BertScorer.score = plain_score
        pairs = again.results.filter(similarity__isnull=False).count()
        out["rejudge"] = {"status": again.status, "pairs": pairs, "wall_s": round(rewall, 2),
                          "pairs_per_s": pairs / rewall, "scoring_s": round(scoring[0], 2),
                          "scoring_pairs_per_s": pairs / scoring[0]}
    return out


def _timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) for fn(): other jobs on a shared machine slow
    the wall clock, the CPU time shows what the scoring itself cost."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover - not on every platform
        return "n/a"


def bench_bertscore(pairs: int, check_f1: int = 0) -> dict | None:
    from evaluation import similarity as S

    if not S.bertscore_available():
        return None
    rng = random.Random(11)
    cands = [sentence(rng, rng.randint(6, 22)) for _ in range(pairs)]
    refs = [sentence(rng, rng.randint(6, 22)) for _ in range(pairs)]
    scorer = S.get_scorer(S.BERTSCORE)
    t0 = time.perf_counter()
    scorer.score(["warm"], ["up"])
    load = time.perf_counter() - t0
    S.BertScorer._embeddings.clear()
    S.BertScorer.cache_size = 4 * pairs
    load_before = _loadavg()
    scores: list[float] = []
    wall, cpu = _timed(lambda: scores.extend(scorer.score(cands, refs)))
    batch = (pairs / wall, pairs / cpu)
    # A second agent on the same release: the references are already embedded in this worker.
    cands2 = [sentence(rng, rng.randint(6, 22)) for _ in range(pairs)]
    wall, cpu = _timed(lambda: scorer.score(cands2, refs))
    warm = (pairs / wall, pairs / cpu)
    single = min(100, pairs)
    cands3 = [sentence(rng, rng.randint(6, 22)) for _ in range(single)]

    def one_at_a_time():
        for c, r in zip(cands3, refs[:single]):
            scorer.score([c], [r])

    wall, cpu = _timed(one_at_a_time)
    one = (single / wall, single / cpu)
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:  # pragma: no cover
        threads = None
    result = {"pairs": pairs, "load_s": round(load, 2), "precision": type(scorer).precision,
              "batch": batch, "warm_refs": warm, "single": one, "torch_threads": threads,
              "loadavg_before": load_before, "loadavg_after": _loadavg(), "f1_check": None}
    if check_f1:
        # Faithfulness: plain fp32 bert_score.BERTScorer (its own score(), idf off) on the same pairs.
        import bert_score

        n = min(check_f1, pairs)
        reference = bert_score.BERTScorer(model_type=str(S.local_model_path()), num_layers=S.MODEL_LAYERS,
                                          batch_size=64, device="cpu", lang="en")
        _, _, f1 = reference.score(cands[:n], refs[:n])
        diffs = [abs(a - b) for a, b in zip(scores[:n], f1.tolist())]
        flips = sum((a >= 0.55) != (b >= 0.55) for a, b in zip(scores[:n], f1.tolist()))
        result["f1_check"] = {"pairs": n, "max_abs": max(diffs), "mean_abs": sum(diffs) / n, "threshold_flips": flips}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=1420)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--cap", type=int, default=8)
    parser.add_argument("--similarity", default="auto", choices=["auto", "bertscore", "lexical"])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--skip-run", action="store_true")
    parser.add_argument("--check-f1", type=int, default=0, metavar="N",
                        help="also score the first N bench pairs with plain fp32 bert_score.BERTScorer and print the F1 deviation")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="EVALUATION_TORCH_THREADS for the scorer (default 1; 0: torch's own choice)")
    args = parser.parse_args()
    if args.torch_threads:
        os.environ["EVALUATION_TORCH_THREADS"] = str(args.torch_threads)
    with tempfile.TemporaryDirectory(prefix="almita-bench-eval-") as var_dir:
        setup_django(var_dir, args.cap)
        if not args.skip_run:
            r = bench_run(args)
            print(f"run: {r['evaluated']}/{r['tests']} tests {r['status']}, similarity {r['similarity']}, "
                  f"latency {r['latency_s']} s, cap {r['cap']} (peak in flight {r['peak_in_flight']})")
            print(f"  wall {r['wall_s']} s, ideal {r['ideal_s']} s, wall/ideal = {r['ratio']} (target <= 1.25); "
                  f"test correctness {r['test_correct']}")
            if r["rejudge"]:
                j = r["rejudge"]
                print(f"re-judge of that run with BERTScore, cold ({j['status']}): {j['pairs']} reply pairs; "
                      f"BERTScore {j['scoring_s']} s = {j['scoring_pairs_per_s']:.1f} pairs/s (target >= 300); "
                      f"whole re-judge with copying, database writes and the report {j['wall_s']} s = "
                      f"{j['pairs_per_s']:.1f} pairs/s")
        b = bench_bertscore(args.pairs, args.check_f1)
        if b is None:
            print("BERTScore: ML extra not installed (requirements/ml.lock, see the README); skipped")
        else:
            def rate(r):
                return f"{r[0]:.1f} pairs/s wall ({r[1]:.1f} per CPU-second)"

            print(f"BERTScore F1 on CPU ({b['torch_threads']} torch threads, {b['precision']}, {os.cpu_count()} CPUs, "
                  f"load average {b['loadavg_before']} before, {b['loadavg_after']} after):")
            print(f"  batches of distinct pairs, cold: {rate(b['batch'])} (target >= 300)")
            print(f"  references already embedded:     {rate(b['warm_refs'])}")
            print(f"  one pair at a time (refs cached): {rate(b['single'])}")
            print(f"  model load {b['load_s']} s")
            if b["f1_check"]:
                c = b["f1_check"]
                print(f"  F1 vs plain fp32 bert_score.BERTScorer on {c['pairs']} pairs: max |diff| {c['max_abs']:.5f}, "
                      f"mean {c['mean_abs']:.5f}, {c['threshold_flips']} flips across 0.55")


if __name__ == "__main__":
    main()
