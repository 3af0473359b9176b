"""Hand-labelled API-graph edges for τ-bench's airline and retail tools (issue #27 item 7).

Written by hand from the tools' parameters, the domain policies (wiki.md) and what each tool
returns in τ-bench (the records described in tests/pipeline/data/tau_bench_outputs.json), before
the matcher was changed. The rule used for every pair of different tools A, B:

    A -> B  iff  a value that A's output actually holds (a field of the record, or of a record
                 in a list or map it returns) can fill an input parameter of B, and B accepts the
                 record in a state A can leave it in (a cancelled order feeds no tool that needs a
                 pending or delivered order).

Every ordered pair not listed is a non-edge (airline 14 x 13 pairs, retail 16 x 15). Tools whose
output is a bare message or nothing (calculate, think, transfer_to_human_agents, send_certificate)
feed nothing: a free-text result names no field. Nothing here is copied from τ-bench.
"""
from __future__ import annotations

RESERVATION_TARGETS_ANY = {
    "book_reservation": "its route, cabin, flights, passengers and payment ids can fill a new booking",
    "get_reservation_details": "its reservation_id",
    "get_user_details": "the reservation holds the user_id",
    "search_direct_flight": "its origin, destination and the flights' dates",
    "search_onestop_flight": "its origin, destination and the flights' dates",
    "send_certificate": "the reservation holds the user_id",
}
RESERVATION_TARGETS_ACTIVE = {
    "cancel_reservation": "its reservation_id, while not cancelled",
    "update_reservation_baggages": "its reservation_id (not cancelled) and payment ids from payment_history",
    "update_reservation_flights": "its reservation_id (not cancelled), cabin, flights and payment ids",
    "update_reservation_passengers": "its reservation_id (not cancelled) and passengers",
}


def _reservation_edges(source: str, *, cancelled: bool) -> list[tuple[str, str, str]]:
    targets = dict(RESERVATION_TARGETS_ANY)
    if not cancelled:
        targets.update(RESERVATION_TARGETS_ACTIVE)
    return [(source, t, f"a reservation record: {why}") for t, why in sorted(targets.items()) if t != source]


AIRLINE: list[tuple[str, str, str]] = [
    *_reservation_edges("book_reservation", cancelled=False),
    *_reservation_edges("get_reservation_details", cancelled=False),  # any state, so possibly active
    *_reservation_edges("cancel_reservation", cancelled=True),
    *_reservation_edges("update_reservation_baggages", cancelled=False),
    *_reservation_edges("update_reservation_flights", cancelled=False),
    *_reservation_edges("update_reservation_passengers", cancelled=False),
    # a user record holds no user_id; its reservations list, payment methods and saved passengers
    ("get_user_details", "get_reservation_details", "the user's reservations list holds reservation ids"),
    ("get_user_details", "cancel_reservation", "a reservation id from the user's list (any state)"),
    ("get_user_details", "update_reservation_baggages", "a reservation id, and a payment id of the profile"),
    ("get_user_details", "update_reservation_flights", "a reservation id, and a payment id of the profile"),
    ("get_user_details", "update_reservation_passengers", "a reservation id; saved passengers fill passengers"),
    ("get_user_details", "book_reservation", "saved passengers and the profile's payment ids"),
    # flight searches return lists of flights (one-stop: pairs) whose items hold flight numbers and routes
    ("search_direct_flight", "book_reservation", "a found flight's flight_number, origin and destination"),
    ("search_direct_flight", "update_reservation_flights", "a found flight's flight_number"),
    ("search_direct_flight", "search_onestop_flight", "a found flight's origin and destination"),
    ("search_onestop_flight", "book_reservation", "each leg's flight_number and date"),
    ("search_onestop_flight", "update_reservation_flights", "each leg's flight_number and date"),
    ("search_onestop_flight", "search_direct_flight", "a leg's origin, destination and date"),
    # the airport list maps IATA codes to cities
    ("list_all_airports", "search_direct_flight", "an IATA code fills origin or destination"),
    ("list_all_airports", "search_onestop_flight", "an IATA code fills origin or destination"),
    ("list_all_airports", "book_reservation", "an IATA code fills origin or destination"),
]

ORDER_TARGETS_ANY = {
    "get_order_details": "its order_id",
    "get_product_details": "its items hold product ids",
    "get_user_details": "the order holds the user_id",
    "modify_user_address": "the order holds the user_id and a shipping address",
    "find_user_id_by_name_zip": "its shipping address holds a zip code",
}
ORDER_TARGETS_PENDING = {
    "cancel_pending_order": "its order_id, while pending",
    "modify_pending_order_address": "its order_id (pending) and address",
    "modify_pending_order_items": "its order_id (pending), its items' ids and payment method ids",
    "modify_pending_order_payment": "its order_id (pending) and payment method ids",
}
ORDER_TARGETS_DELIVERED = {
    "return_delivered_order_items": "its order_id (delivered), items' ids and payment method ids",
    "exchange_delivered_order_items": "its order_id (delivered), items' ids and payment method ids",
}


def _order_edges(source: str, *, pending: bool, delivered: bool) -> list[tuple[str, str, str]]:
    targets = dict(ORDER_TARGETS_ANY)
    if pending:
        targets.update(ORDER_TARGETS_PENDING)
    if delivered:
        targets.update(ORDER_TARGETS_DELIVERED)
    return [(source, t, f"an order record: {why}") for t, why in sorted(targets.items()) if t != source]


USER_TARGETS = {
    "find_user_id_by_email": "the profile's email",
    "find_user_id_by_name_zip": "the profile's first and last name and zip",
    "get_order_details": "the user's orders list holds order ids",
    "cancel_pending_order": "an order id from the user's list (any state)",
    "modify_pending_order_address": "an order id, and the default address",
    "modify_pending_order_items": "an order id, and a payment method id",
    "modify_pending_order_payment": "an order id, and a payment method id",
    "return_delivered_order_items": "an order id, and a payment method id",
    "exchange_delivered_order_items": "an order id, and a payment method id",
    "modify_user_address": "the default address fields (a user record holds no user_id)",
}

RETAIL: list[tuple[str, str, str]] = [
    *_order_edges("get_order_details", pending=True, delivered=True),  # any state
    *_order_edges("cancel_pending_order", pending=False, delivered=False),  # cancelled
    *_order_edges("return_delivered_order_items", pending=False, delivered=False),  # return requested
    *_order_edges("exchange_delivered_order_items", pending=False, delivered=False),  # exchange requested
    *_order_edges("modify_pending_order_address", pending=True, delivered=False),  # still pending
    *_order_edges("modify_pending_order_payment", pending=True, delivered=False),  # still pending
    *_order_edges("modify_pending_order_items", pending=False, delivered=False),  # pending (item modified)
    *[("get_user_details", t, f"a user record: {why}") for t, why in sorted(USER_TARGETS.items())],
    *[("modify_user_address", t, f"the updated user record: {why}") for t, why in sorted(USER_TARGETS.items())
      if t != "modify_user_address"],
    ("find_user_id_by_email", "get_user_details", "returns the user_id"),
    ("find_user_id_by_email", "modify_user_address", "returns the user_id"),
    ("find_user_id_by_name_zip", "get_user_details", "returns the user_id"),
    ("find_user_id_by_name_zip", "modify_user_address", "returns the user_id"),
    ("get_product_details", "exchange_delivered_order_items", "a variant's item id fills new_item_ids"),
    ("get_product_details", "modify_pending_order_items", "a variant's item id fills new_item_ids"),
    ("get_product_details", "return_delivered_order_items", "a variant's item id is an item id to return"),
    ("list_all_product_types", "get_product_details", "the map of product names to product ids"),
]

EDGES = {"airline": AIRLINE, "retail": RETAIL}


def labelled(domain: str) -> set[tuple[str, str]]:
    return {(s, t) for s, t, _why in EDGES[domain]}
