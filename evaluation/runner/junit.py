"""JUnit XML as CI systems read it (Jenkins, GitLab, GitHub Actions reporters): one <testsuite>
of the release's tests, one <testcase> per test with a <failure message="expected … | got …">
when the agent was wrong, and one <testsuite> of the gates."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from evaluation.runner.core import failure_message


def _suite(parent: ET.Element, name: str, cases: list[tuple[str, str, float, str | None, str, str]],
           timestamp: str, properties: dict[str, str]) -> ET.Element:
    """A <testsuite> with every attribute and child the Ant/Jenkins junit-10 schema requires
    (package, id, hostname, timestamp, properties, system-out, system-err)."""
    failures = sum(1 for c in cases if c[3] is not None)
    suite = ET.SubElement(parent, "testsuite", name=name, package=name, id=str(len(parent)),
                          hostname="localhost", tests=str(len(cases)), failures=str(failures), errors="0",
                          skipped="0", time=f"{sum(c[2] for c in cases):.3f}", timestamp=timestamp[:19])
    props = ET.SubElement(suite, "properties")
    for key, value in properties.items():
        ET.SubElement(props, "property", name=key, value=value)
    for classname, casename, seconds, message, kind, detail in cases:
        case = ET.SubElement(suite, "testcase", classname=classname, name=casename, time=f"{seconds:.3f}")
        if message is not None:
            failure = ET.SubElement(case, "failure", message=message, type=kind)
            failure.text = detail
    ET.SubElement(suite, "system-out").text = ""
    ET.SubElement(suite, "system-err").text = ""
    return suite


def write_junit(path: str | Path, records: list[dict[str, Any]], gates: list[dict[str, Any]], *,
                release: str, elapsed: float, timestamp: str, properties: dict[str, str] | None = None) -> None:
    root = ET.Element("testsuites", name="almita", tests=str(len(records) + len(gates)),
                      failures=str(sum(not r["correct"] for r in records) + sum(not g["passed"] for g in gates)),
                      errors="0", time=f"{elapsed:.3f}")
    cases = []
    for r in records:
        message = None if r["correct"] else failure_message(r)
        kind = "protocol_error" if r["predicted_type"] == "invalid" else f"wrong_{r['expected_type']}"
        detail = message + (f"\n\nraw answer:\n{r['raw'][:4000]}" if r.get("raw") else "") if message else ""
        cases.append((f"{release}.conversation_{r['conversation_id']}",
                      f"test {r['test_id']} (position {r.get('position')})",
                      (r.get("latency_ms") or 0) / 1000.0, message, kind, detail))
    props = {"release": release, **(properties or {})}
    _suite(root, release, cases, timestamp, props)
    if gates:
        _suite(root, f"{release}.gates", [(f"{release}.gates", g["name"], 0.0,
                                           None if g["passed"] else g["message"], f"gate_{g['kind']}", g["message"])
                                          for g in gates], timestamp, props)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
