"""FlowBench-shaped records (written for these tests) through the Mermaid converter and the CLI."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from generation.pipeline.apis import ApiSpec, ParamSpec, parse_api_list
from generation.pipeline.cli import build_tests_main, convert_workflow_main, validate_graph_main
from generation.pipeline.mermaid import MermaidSyntaxError, mermaid_to_flowgraph, tool_calls

FB = Path(__file__).parent / "fixtures" / "flowbench"


def _record() -> dict:
    return json.loads((FB / "ferry.jsonl").read_text().splitlines()[0])


def _api_labels(g) -> list[str]:
    return sorted(d["label"] for _, d in g.nodes(data=True) if d["type"] == "api")


def test_release_record_apis_keep_outputs_enums_defaults_and_nested_properties():
    apis = {a.name: a for a in parse_api_list([_record()])}
    book = apis["bookSailing"]
    cabin = book.param("cabin")
    assert cabin.enum == ["Deck", "Inside", "Outside"] and cabin.default == "Deck" and not cabin.required
    assert book.param("vehicle").enum == ["Yes", "No"]
    outs = {p.name: p for p in book.outputs}
    assert outs["is_booked"].enum == ["true", "false"]
    assert [(q.name, q.type) for q in outs["ticket"].properties] == [("ticket_number", "str"), ("berth", "int")]
    assert apis["checkSailing"].outputs[0].name == "has_places"


def test_calls_make_api_nodes_mentions_do_not_and_case_is_reported():
    rec = _record()
    specs = parse_api_list([rec])
    g, report = mermaid_to_flowgraph(rec["workflow"]["flowchart"], specs)
    # One node per real call; "based on the returned values of bookSailing" and
    # "if bookSailing returns false" make none.
    assert _api_labels(g) == ["bookSailing", "checkSailing"]
    text = "\n".join(report)
    assert "calls 'BookSailing': matched the tool bookSailing (case differs)" in text
    assert "state F4 mentions bookSailing without calling it" in text
    assert "state F6 mentions bookSailing without calling it" in text
    assert "text before the chart is not part of it" in text  # the prose line
    assert "inserted the greeting 'Greet the customer'" in text
    assert "inserted the customer turn 'The customer gives the details needed'" in text


def test_parameter_notes_attach_to_matching_parameters_and_the_rest_is_reported():
    rec = _record()
    specs = parse_api_list([rec])
    _, report = mermaid_to_flowgraph(rec["workflow"]["flowchart"], specs)
    check = next(a for a in specs if a.name == "checkSailing")
    book = next(a for a in specs if a.name == "bookSailing")
    assert "day month year" in check.param("travel_day").description
    assert "name on the passport" in book.param("passenger_name").description
    assert any("matches no parameter" in r and "loyalty tier" in r for r in report)


@pytest.mark.parametrize("text, expected", [
    ("Use 'ContactMaster' to reach the owner", ["contactMaster"]),
    ("invoke the findRoom tool, then ask", ["findRoom"]),
    ("using findRoom and holdRoom", ["findRoom", "holdRoom"]),
    ("call the API holdRoom()", ["holdRoom"]),
    ("findRoom", ["findRoom"]),
    ('"holdRoom" tool', ["holdRoom"]),
    ("based on the returned rooms of findRoom, offer one", []),
    ("if holdRoom returns false, apologise", []),
    ("tell the result of findRoom to the guest", []),
    ("the findRoom results are shown", []),
    ("Check the rooms with the findRoom API", ["findRoom"]),
    ("based on the result of the findRoom API, reply", []),
    ("the data returned by the holdRoom tool", []),
    ("if the holdRoom API fails, apologise", []),
    ("When calling holdRoom, pass the dates", ["holdRoom"]),
    ("get the rooms through the findRoom interface", ["findRoom"]),
])
def test_call_phrases(text, expected):
    tools = [ApiSpec("findRoom"), ApiSpec("holdRoom"), ApiSpec("contactMaster")]
    assert [t for t, _ in tool_calls(text, tools)] == expected


REAL_WORLD = """Here is the flowchart for the pharmacy desk.
```mermaid
---
title: Pharmacy desk
---
graph LR
  %% states
  subgraph intake [Intake]
  P0((Start)) -->|Refill| P1["Ask for the prescription ID and call #quot;rxLookup#quot;"]
  P9["Say \\"sorry\\" politely"] --> P3
  end
  P1 -- Found --> P2[rxRefill]
  P1 --Not found--> P3(Say the prescription is unknown)
  P2 -.->|Done| P4>Tell the customer when to collect]:::done
  P3 ==> P4
  style P1 fill:#eee
  classDef done fill:#9f9
  class P4 done
```
"""


def test_real_world_mermaid_variations_convert():
    tools = [ApiSpec("rxLookup", params=[ParamSpec("rx_id")]), ApiSpec("rxRefill")]
    g, report = mermaid_to_flowgraph(REAL_WORLD, tools)
    assert _api_labels(g) == ["rxLookup", "rxRefill"]
    lookup = next(n for n, d in g.nodes(data=True) if d["label"] == "rxLookup")
    assert sorted(d["label"] for _, _, d in g.out_edges(lookup, data=True)) == ["Found", "Not found"]
    refill = next(n for n, d in g.nodes(data=True) if d["label"] == "rxRefill")
    assert [d["label"] for _, _, d in g.out_edges(refill, data=True)] == ["Done"]
    assert not [r for r in report if "line" in r and "column" in r]  # nothing malformed


MALFORMED = [
    ("unterminated", "flowchart TD\nA[Start] --> B[Ask\nB --> C[End]\n", 2, 15, "unterminated text of node B"),
    ("no target", "flowchart TD\nA[Start] --yes-->\nB[Next] --> C[End]\n", 2, 9, "arrow with no target"),
    ("unbalanced", "flowchart TD\nA[Start]] --> B[End]\n", 2, 9, "unbalanced bracket"),
    ("cut label", "flowchart TD\nA[Start] --> B[Ask]\nB -->|ye", 3, 6, "ends in the middle of a statement"),
    ("cut arrow", "flowchart TD\nA[Start] --> B[Ask]\nB --", 3, 3, "ends in the middle of a statement"),
    ("cut text", "flowchart TD\nA[Start] --> B[Ask the", 2, 15, "unterminated text of node B"),
    ("cut after arrow", "flowchart TD\nA[Start] --> B[Ask]\nB -->", 3, 2, "arrow with no target"),
    ("garbage line", "flowchart TD\nA[Start] --> B[End]\n?? what\n", 3, 1, "cannot read"),
]


@pytest.mark.parametrize("name, text, line, column, message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_mermaid_is_refused_with_line_and_column(name, text, line, column, message):
    with pytest.raises(MermaidSyntaxError) as exc:
        mermaid_to_flowgraph(text, [])
    first = exc.value.problems[0]
    assert (first.line, first.column) == (line, column) and message in first.message
    g, report = mermaid_to_flowgraph(text, [], strict=False)  # lenient: converted, problems reported
    assert g.number_of_nodes() >= 1 and any(f"line {line}, column {column}" in r for r in report)


def test_arrow_without_target_does_not_take_the_next_line_as_target():
    g, _ = mermaid_to_flowgraph("flowchart TD\nA[Start] --> B[Ask]\nB--yes-->\nC[Other]\n", [], strict=False)
    assert not any(v == "C" or g.nodes[v].get("source_id") == "C" for _, v in g.edges())


def test_cli_refuses_malformed_chart_with_exit_1_and_names_the_file(tmp_path):
    bad = tmp_path / "cut.mmd"
    bad.write_text("flowchart TD\nA[Start] --> B[Ask]\nB -->|ye")
    out, err = io.StringIO(), io.StringIO()
    assert convert_workflow_main(bad, "mermaid", "flowgraph", out=out, err=err) == 1
    assert f"{bad}: line 3, column 6" in err.getvalue()
    assert validate_graph_main(bad, None, io.StringIO()) == 1
    assert convert_workflow_main(bad, "mermaid", "flowgraph", out=io.StringIO(), err=io.StringIO(), lenient=True) == 0


def test_cli_reads_the_release_file_as_is(tmp_path):
    f = FB / "ferry.jsonl"
    out, err = io.StringIO(), io.StringIO()
    assert convert_workflow_main(f, "flowbench", "flowgraph", out=out, err=err) == 0
    assert out.getvalue().count("(api)") == 2
    assert validate_graph_main(f, None, io.StringIO()) == 0
    log = io.StringIO()
    assert build_tests_main(f, f, tmp_path / "out", out=log) == 0, log.getvalue()
    assert "edge coverage 100%" in log.getvalue()
    two = FB / "two.jsonl"
    # A whole release: one folder per record; --record picks one.
    assert build_tests_main(two, two, tmp_path / "all", out=io.StringIO()) == 0
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == ["record-001", "record-002"]
    assert build_tests_main(two, two, tmp_path / "o2", out=io.StringIO(), record=2) == 0
    msg = io.StringIO()
    assert build_tests_main(two, two, tmp_path / "o3", out=msg, record=3) == 2 and "records 1 to 2" in msg.getvalue()
    log = io.StringIO()
    assert validate_graph_main(two, None, log) == 0 and log.getvalue().count("== ") == 2


def test_decision_after_a_call_becomes_the_calls_outcomes():
    chart = ("flowchart TD\nA[Start]-->B[Ask the city and call findRoom]\nB-->C{Rooms found?}\n"
             "C-->|Yes|D[Offer the rooms]\nC-->|No|E[Apologise]")
    g, report = mermaid_to_flowgraph(chart, [ApiSpec("findRoom", params=[ParamSpec("city")])])
    api = next(n for n, d in g.nodes(data=True) if d["type"] == "api")
    assert sorted(d["label"] for _, _, d in g.out_edges(api, data=True)) == ["Rooms found: No", "Rooms found: Yes"]
    assert any("decision C" in r for r in report)


def test_prose_after_the_chart_is_read_as_notes_not_as_a_broken_chart():
    tools = [ApiSpec("findRoom", params=[ParamSpec("city")])]
    chart = "flowchart TD\nA[Start]-->B[call findRoom]\nB--ok-->C[End]\n\nThe city is a town name.\n"
    g, report = mermaid_to_flowgraph(chart, tools)
    assert tools[0].params[0].description == "The city is a town name."


def test_truncated_release_names_file_line_record_and_column(tmp_path):
    lines = (FB / "two.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(lines[0] + "\n" + lines[1][:120] + "\n")
    err = io.StringIO()
    assert convert_workflow_main(cut, "flowbench", "flowgraph", out=io.StringIO(), err=err) == 2
    assert f"{cut}: line 2 (record 2), column" in err.getvalue()


def test_an_edge_back_to_start_goes_to_the_first_step_and_validates():
    from generation.pipeline.validate import validate_flowgraph

    g, report = mermaid_to_flowgraph("flowchart TD\nA[Start]-->|Help|B[Ask what they need]\n"
                                     "B-->|Again|A\nB-->|Bye|C[Say goodbye]", [])
    assert validate_flowgraph(g, []) == []
    assert any("returns to the start" in r for r in report)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = ["flowchart TD\n", "A", "B", "C1", "[", "]", "(", ")", "{", "}", ">", "-->", "--", "-- x -->", "|", "|y|",
           "&", " ", "\n", '"', "call findRoom", "Start", "%% c\n", "subgraph s\n", "end\n", "Auxiliary parameter "
           "information: city is a town.\n", ";", "==>", "-.->"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40))
def test_any_text_is_either_converted_or_refused_with_line_and_column(pieces):
    text = "".join(pieces)
    tools = [ApiSpec("findRoom", params=[ParamSpec("city")])]
    try:
        mermaid_to_flowgraph(text, tools)
    except MermaidSyntaxError as exc:
        assert exc.problems and all(p.line >= 1 and p.column >= 1 for p in exc.problems)
    try:
        g, _ = mermaid_to_flowgraph(text, tools, strict=False)  # lenient refuses only a chart without nodes
    except MermaidSyntaxError as exc:
        assert "the chart is empty" in exc.problems[-1].message
    else:
        assert g.number_of_nodes() >= 1


def test_a_stray_state_without_transitions_is_left_out_and_reported():
    from generation.pipeline.validate import validate_flowgraph

    g, report = mermaid_to_flowgraph("flowchart TD\nX[A note about the chart]\nA[Start]-->|Help|B[Say goodbye]", [])
    assert validate_flowgraph(g, []) == [] and g.number_of_nodes() == 2
    assert any("X" in r and "left out" in r for r in report)
