"""Demo data written by the Almita team: two customer-support procedures with their APIs and
flowgraphs, modelled on the paper's running example (an order that never arrived).

`demo_load()` is idempotent: every row is keyed (`demo:...`), so loading twice creates nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, assign_roles, ensure_role_groups
from generation.models import Api, Flowgraph, Intent, Origin, Procedure
from generation.pipeline.apis import ParamSpec
from generation.pipeline.formats import graph_to_json, parse_graph_text
from generation.pipeline.validate import validate_flowgraph

# (username, roles, password). Demo only: the passwords are printed by `load_demo`.
DEMO_USERS = [
    ("admin", [ADMIN], "almita-admin"),
    ("annotator", [ANNOTATOR], "almita-annotator"),
    ("annotator2", [ANNOTATOR], "almita-annotator2"),
    ("adjudicator", [ADJUDICATOR], "almita-adjudicator"),
    ("researcher", [RESEARCHER], "almita-researcher"),
]

ORDER_PROCEDURE = """# Helping a customer whose order has not arrived

1. Greet the customer and ask what went wrong.
2. Ask for the order number together with either the email address or the phone number used
   for the purchase.
3. Look the order up with the details the customer gave:
   - by email with `find_order_by_email`,
   - by phone number with `find_order_by_phone`.
4. If no order matches, say so and ask the customer to check the details; go back to step 3.
5. When the order is found, ask whether the customer wants to cancel it or to be refunded.
6. To cancel, call `cancel_order`; to refund, call `refund_order`.
7. Confirm the outcome and close the conversation.
"""

ORDER_APIS = [
    ("find_order_by_email", "Find an order from its number and the buyer's email address.",
     [ParamSpec("order_id", "int"), ParamSpec("email", "str")], "order", "dict[str, str]"),
    ("find_order_by_phone", "Find an order from its number and the buyer's phone number.",
     [ParamSpec("order_id", "int"), ParamSpec("phone_number", "str")], "order", "dict[str, str]"),
    ("cancel_order", "Cancel an order that has not been delivered.",
     [ParamSpec("order_id", "int")], "cancelled", "bool"),
    ("refund_order", "Refund the full amount of an order to the original payment method.",
     [ParamSpec("order_id", "int"), ParamSpec("reason", "str", required=False)], "refund_id", "str"),
]

ORDER_FLOW = """<flow>
[N0](start_message){Greet the customer and ask how you can help}
[E0](N0, N1){My order never arrived}
[N1](message){Ask for the order number and the email or phone number used}
[E1](N1, N2){Gives the order number and email}
[E2](N1, N3){Gives the order number and phone number}
[N2](api){find_order_by_email}
[N3](api){find_order_by_phone}
[N4](message){Ask whether they want to cancel the order or get a refund}
[E3](N2, N4){Order found}
[E4](N3, N4){Order found}
[N5](message){Say the order was not found and ask them to check the details}
[E5](N2, N5){Order not found}
[E6](N3, N5){Order not found}
[E7](N5, N2){Gives corrected order number and email}
[E8](N5, N3){Gives corrected order number and phone number}
[N6](api){cancel_order}
[E9](N4, N6){Cancel the order}
[N7](end_message){Confirm the order is cancelled}
[E10](N6, N7){Cancelled}
[N8](api){refund_order}
[E11](N4, N8){I want a refund}
[N9](end_message){Confirm the refund and give its reference}
[E12](N8, N9){Refund issued}
</flow>"""

CARD_PROCEDURE = """# Blocking a lost bank card

1. Greet the customer.
2. Ask for the last four digits of the card and the date of birth of the holder.
3. Verify the holder with `verify_card_holder`. If verification fails, ask once more.
4. Block the card with `block_card` and offer a replacement.
5. If the customer wants a replacement, order it with `order_replacement_card`.
6. Confirm what was done and close.
"""

CARD_APIS = [
    ("verify_card_holder", "Check that the card digits and birth date belong to the same holder.",
     [ParamSpec("card_last_digits", "str"), ParamSpec("date_of_birth", "str")], "verified", "bool"),
    ("block_card", "Block a card immediately.", [ParamSpec("card_last_digits", "str")], "blocked", "bool"),
    ("order_replacement_card", "Send a replacement card to the address on file.",
     [ParamSpec("card_last_digits", "str")], "delivery_days", "int"),
]

CARD_FLOW = """<flow>
[N0](start_message){Greet the customer}
[E0](N0, N1){I lost my card}
[N1](message){Ask for the last four card digits and the holder's date of birth}
[E1](N1, N2){Gives the digits and date of birth}
[N2](api){verify_card_holder}
[N3](message){Say the details do not match and ask again}
[E2](N2, N3){Not verified}
[E3](N3, N2){Gives the details again}
[N4](api){block_card}
[E4](N2, N4){Verified}
[N5](message){Say the card is blocked and offer a replacement}
[E5](N4, N5){Blocked}
[N6](api){order_replacement_card}
[E6](N5, N6){Yes, send a new card}
[N7](end_message){Confirm the replacement and its delivery time}
[E7](N6, N7){Ordered}
[N8](end_message){Confirm the card stays blocked and close}
[E8](N5, N8){No replacement needed}
</flow>"""


@dataclass(frozen=True)
class DemoCase:
    slug: str
    client: str
    issue: str
    name: str
    procedure: str
    apis: list
    flow: str


DEMO_CASES = [
    DemoCase("order-missing", "online shop", "The customer's order was never delivered.",
             "order not received", ORDER_PROCEDURE, ORDER_APIS, ORDER_FLOW),
    DemoCase("card-lost", "retail bank", "The customer lost their debit card and wants it blocked.",
             "lost card", CARD_PROCEDURE, CARD_APIS, CARD_FLOW),
]


@dataclass
class DemoReport:
    users_created: list[str]
    rows_created: int


def demo_users_load() -> list[str]:
    ensure_role_groups()
    created = []
    for username, roles, password in DEMO_USERS:
        user, was_created = User.objects.get_or_create(username=username)
        if was_created:
            user.set_password(password)
            if ADMIN in roles:
                user.is_staff = True
                user.is_superuser = True
            user.save()
            created.append(username)
        assign_roles(user, roles)
    return created


# Issue #30: a second, small project with other people, so the project switch is visible. The
# demo admin (a superuser) sees both; annotator2 annotates in both; shipper works only here.
SHIPPING_SLUG, SHIPPING_NAME = "shipping", "Shipping bot"
SHIPPING_USERS = [
    ("shipper", [ANNOTATOR, ADJUDICATOR], "almita-shipper"),
    ("annotator2", [ANNOTATOR], "almita-annotator2"),
]


def demo_shipping_load() -> tuple[object, list[str], int]:
    """The Shipping bot project, its members and its one imported case (idempotent)."""
    from projects.context import use_project
    from projects.models import Project

    project, _ = Project.objects.get_or_create(slug=SHIPPING_SLUG, defaults={"name": SHIPPING_NAME,
                                                                             "reviews_per_item": 1})
    created_users = []
    for username, roles, password in SHIPPING_USERS:
        user, was_created = User.objects.get_or_create(username=username)
        if was_created:
            user.set_password(password)
            user.save()
            created_users.append(username)
        assign_roles(user, roles, project)
    with use_project(project):
        rows = _case_load(DEMO_CASES[0])
    return project, created_users, rows


@transaction.atomic
def demo_load() -> DemoReport:
    from projects.context import default_project, use_project

    users = demo_users_load()
    created = 0
    with use_project(default_project()):
        for case in DEMO_CASES:
            created += _case_load(case)
    _project, shipping_users, rows = demo_shipping_load()
    return DemoReport(users_created=users + shipping_users, rows_created=created + rows)


def _case_load(case: DemoCase) -> int:
    """One demo case's intent, procedure, APIs and flowgraph in the current project; rows created."""
    created = 0
    intent, new = Intent.objects.get_or_create(
        key=f"demo:{case.slug}:intent", job=None,
        defaults={"client": case.client, "issue": case.issue, "name": case.name, "origin": Origin.IMPORTED},
    )
    created += new
    procedure, new = Procedure.objects.get_or_create(
        key=f"demo:{case.slug}:procedure", job=None,
        defaults={"intent": intent, "title": case.procedure.splitlines()[0].lstrip("# "),
                  "text": case.procedure, "origin": Origin.IMPORTED},
    )
    created += new
    for name, description, params, output_name, output_type in case.apis:
        _, new = Api.objects.get_or_create(
            key=f"demo:{case.slug}:api:{name}", job=None,
            defaults={
                "procedure": procedure, "name": name, "description": description, "origin": Origin.IMPORTED,
                "parameters": [{"name": p.name, "type": p.type, "required": p.required, "description": p.description} for p in params],
                "output_name": output_name, "output_type": output_type,
            },
        )
        created += new
    graph = parse_graph_text(case.flow, kind="flowgraph")
    violations = validate_flowgraph(graph, [a[0] for a in case.apis])
    _, new = Flowgraph.objects.get_or_create(
        key=f"demo:{case.slug}:flowgraph", job=None,
        defaults={"procedure": procedure, "data": graph_to_json(graph), "text": case.flow, "origin": Origin.IMPORTED,
                  "validation": [{"rule": v.rule, "where": v.where, "message": v.message, "severity": v.severity} for v in violations]},
    )
    created += new
    return created
