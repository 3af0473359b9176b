"""JUnit XML as CI systems read it (Jenkins, GitLab, GitHub Actions reporters): one <testsuite>
of the release's tests, one <testcase> per test and trial, and one <testsuite> of the gates.

* a wrong answer is a ``<failure message="expected … | got … | reason">`` (types
  ``wrong_reply``, ``wrong_api_call``);
* a test the agent did not answer (an outage) or answered unreadably is an ``<error>`` (types
  ``no_answer``, ``unreadable``): the agent or the infrastructure failed, not the agent's decision;
* the suites' ``tests``, ``failures`` and ``errors`` count their cases; ``time`` is the run's wall
  time (a case's time is its latency);
* the gates suite holds one case per gate, and a ``run health`` case that is an ``<error>`` when
  the run failed (too many tests without a readable answer, or the circuit breaker stopped it).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from evaluation.runner.core import failure_message

# (classname, name, seconds, element "failure" | "error" | None, message, type, detail)
Case = tuple[str, str, float, str | None, str, str, str]


def _suite(parent: ET.Element, name: str, cases: list[Case], elapsed: float, timestamp: str,
           properties: dict[str, str]) -> ET.Element:
    """A <testsuite> with every attribute and child the Ant/Jenkins junit-10 schema requires
    (package, id, hostname, timestamp, properties, system-out, system-err)."""
    suite = ET.SubElement(parent, "testsuite", name=name, package=name, id=str(len(parent)),
                          hostname="localhost", tests=str(len(cases)),
                          failures=str(sum(c[3] == "failure" for c in cases)),
                          errors=str(sum(c[3] == "error" for c in cases)),
                          skipped="0", time=f"{elapsed:.3f}", timestamp=timestamp[:19])
    props = ET.SubElement(suite, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", name=key, value=value)
    for classname, casename, seconds, element, message, kind, detail in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=casename, time=f"{seconds:.3f}")
        if element is not None:
            ET.SubElement(case, element, message=message, type=kind).text = detail
    ET.SubElement(suite, "system-out").text = ""
    ET.SubElement(suite, "system-err").text = ""
    return suite


def _test_case(r: dict[str, Any], release: str) -> Case:
    name = f"test {r['test_id']} (position {r.get('position')}, trial {int(r.get('trial') or 0)})"
    classname = f"{release}.conversation_{r['conversation_id']}"
    seconds = (r.get("latency_ms") or 0) / 1000.0
    if r["correct"]:
        return classname, name, seconds, None, "", "", ""
    message = failure_message(r)
    detail = message + (f"\n\nraw answer:\n{r['raw'][:4000]}" if r.get("raw") else "")
    if r["predicted_type"] == "failed":
        return classname, name, seconds, "error", message, "no_answer", detail
    if r["predicted_type"] == "invalid":
        return classname, name, seconds, "error", message, "unreadable", detail
    return classname, name, seconds, "failure", message, f"wrong_{r['expected_type']}", detail


def write_junit(path: str | Path, records: list[dict[str, Any]], gates: list[dict[str, Any]], *,
                release: str, elapsed: float, timestamp: str, properties: dict[str, str] | None = None,
                health: dict[str, Any] | None = None) -> None:
    """`health`: the report's "errors" section (evaluation.run_health.Health.to_json)."""
    props = {"release": release, **(properties or {})}
    root = ET.Element("testsuites", name="almita")
    tests = [_test_case(r, release) for r in records]
    _suite(root, release, tests, elapsed, timestamp, props)
    gate_cases: list[Case] = []
    if health is not None:
        share = f"{100 * float(health.get('limit', 0.1)):g} %"
        gate_cases.append((f"{release}.gates", f"run health: at most {share} of tests without a readable answer",
                           0.0, "error" if health.get("failed") else None, str(health.get("reason") or ""),
                           "agent_failed", str(health.get("reason") or "")))
    gate_cases += [(f"{release}.gates", g["name"], 0.0, None if g["passed"] else "failure", g["message"],
                    f"gate_{g['kind']}", g["message"]) for g in gates]
    if gate_cases:
        _suite(root, f"{release}.gates", gate_cases, 0.0, timestamp, props)
    suites = list(root)
    for attr in ("tests", "failures", "errors"):
        root.set(attr, str(sum(int(s.get(attr)) for s in suites)))
    root.set("time", f"{elapsed:.3f}")
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
