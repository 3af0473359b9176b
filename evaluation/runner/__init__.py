"""The standalone runner: evaluate an HTTP or OpenAI-compatible agent on a portable release file,
for CI. No Django, no database (tests/evaluation/test_runner_purity.py checks it).

    python -m evaluation.runner RELEASE.jsonl --agent-url URL [--fail-under metric=value ...]
        [--baseline RESULTS.json] [--junit OUT.xml] [--json OUT.json] [--trials N]

Exit status: 0 every gate met; 1 a gate or the baseline failed; 2 bad usage, an unreadable input
file, or a baseline from another release; 3 the agent or the infrastructure failed: more than
--max-error-share of the tests (default 10 %) got no answer or an unreadable one, the circuit
breaker stopped the run, or the runner itself crashed. Never 0 for a broken agent.
"""
