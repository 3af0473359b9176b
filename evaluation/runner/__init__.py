"""The standalone runner: evaluate an HTTP or OpenAI-compatible agent on a portable release file,
for CI. No Django, no database (tests/evaluation/test_runner_purity.py checks it).

    python -m evaluation.runner RELEASE.jsonl --agent-url URL [--fail-under metric=value ...]
        [--baseline RESULTS.json] [--junit OUT.xml] [--json OUT.json]

Exit status: 0 all gates passed, 1 a gate failed, 2 bad usage or an unreadable input file.
"""
