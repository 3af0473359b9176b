"""Offline values for API parameters and outputs, drawn from the specs with a seeded Faker.

Order of preference for a parameter: its enumeration (declared, or written in the description),
an example written in the description (``such as "CA1234, CZ5678"``), its default when optional,
its JSON-schema format (email, date, date-time, time, uri, uuid), then its name and description
(a person's name only for person-like parameters, a hotel or restaurant gets a business name,
counts of rooms or guests are small, money has cents) and last its type. One :class:`ValueMaker`
serves one conversation: one person, one address, dates that move forward, the same value for the
same parameter name.
"""
from __future__ import annotations

import random
import re
from datetime import date, timedelta
from typing import Any

from faker import Faker

from .schema import ParamSpec, examples_from_text, range_from_text
from .typecheck import parse_type

_PERSON = re.compile(r"(customer|passenger|guest|user|person|contact|holder|patient|client|traveller|traveler|"
                     r"first|last|full|sur|given|applicant|owner|driver|member|employee|student|name$)", re.I)
_BUSINESS = re.compile(r"(hotel|restaurant|shop|store|company|airline|merchant|business|venue|clinic|hospital|"
                       r"bank|cinema|theat|gym|school|agency|brand|vendor|supplier|dealer)", re.I)
_COUNT = re.compile(r"(count|number_of|num_|^num|quantity|qty|guests|rooms|bedrooms|beds|people|persons|adults|"
                    r"children|kids|nights|seats|tickets|passengers|days|size|party|need_room|amount_of|hours|minutes|duration|"
                    r"weeks|months|times|floor|level|stars|rating)", re.I)
_MONEY = re.compile(r"(price|amount|cost|fee|total|budget|balance|salary|payment|refund|money|fare)", re.I)
_NEG_WORDS = re.compile(r"^(false|no|none|fail\w*|error|invalid|unavailable|denied|declined|rejected|not\b.*|"
                        r"unsuccessful|cancel\w*|closed|expired|insufficient|empty|0)$", re.I)


def is_negative_value(value: Any) -> bool:
    return value is False or (isinstance(value, str) and bool(_NEG_WORDS.match(value.strip())))


class ValueMaker:
    """Seeded, conversation-wide source of realistic values (see the module docstring)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.first, self.last = self.fake.first_name(), self.fake.last_name()
        self.by_name: dict[str, Any] = {}
        self.day = date(2031, 1, 1) + timedelta(days=self.rng.randint(0, 300))

    # -- helpers ---------------------------------------------------------------------------
    def next_date(self) -> str:
        self.day += timedelta(days=self.rng.randint(1, 6))
        return self.day.isoformat()

    def business(self, low: str) -> str:
        kind = next((k for k in ("hotel", "restaurant", "clinic", "cinema", "gym", "school") if k in low), "")
        base = self.fake.last_name()
        if kind == "hotel":
            return f"{self.rng.choice(['Harbour', 'Grand', 'Park', 'Riverside', 'Old Town'])} {base} Hotel"
        if kind == "restaurant":
            return f"{base}'s {self.rng.choice(['Kitchen', 'Bistro', 'Grill', 'Table'])}"
        return f"{self.fake.company()}"

    # -- parameters ------------------------------------------------------------------------
    def value(self, p: ParamSpec, fresh: bool = False) -> Any:
        if not fresh and p.name in self.by_name:
            return self.by_name[p.name]
        v = self._make(p)
        self.by_name[p.name] = v
        return v

    def _make(self, p: ParamSpec) -> Any:
        try:
            head, args = parse_type(p.type or "str")
        except ValueError:
            head, args = "str", []
        if head == "union":
            non_none = [a for a in args if a[0] != "none"]
            head, args = non_none[0] if non_none else ("str", [])
        fitting = [v for v in (_coerce(e, head) for e in p.enum) if _fits(v, head)]
        if fitting:
            return self.rng.choice(fitting)
        if head in ("list", "set", "tuple", "sequence"):
            inner = _expr(args[0]) if args else "str"
            return [self._make(ParamSpec(p.name.rstrip("s"), inner, description=p.description,
                                         properties=p.properties))]
        if head in ("dict", "mapping") and p.properties:
            return {q.name: self._make(q) for q in p.properties}
        if head in ("dict", "mapping", "any", "object"):
            return {} if head != "any" else self._string(p)
        if not p.required and p.default is not None and _fits(_coerce(p.default, head), head):
            return _coerce(p.default, head)
        examples = examples_from_text(p.description)
        if examples and head == "str":
            return self.rng.choice(examples)
        if head == "bool":
            return self.rng.random() < 0.5
        if head == "int":
            bounds = range_from_text(p.description)
            return self.rng.randint(*bounds) if bounds else self._int(p.name.lower())
        if head == "float":
            low = p.name.lower()
            return round(self.rng.uniform(20, 900), 2) if _MONEY.search(low) else round(self.rng.uniform(1, 100), 1)
        return self._string(p)

    def _int(self, low: str) -> int:
        if "year" in low:
            return self.rng.randint(1950, 2005)
        if "age" in low:
            return self.rng.randint(18, 80)
        if _COUNT.search(low):
            return self.rng.randint(1, 5)
        if _MONEY.search(low):
            return self.rng.randint(20, 2000)
        return self.rng.randint(1000, 99999)

    def _string(self, p: ParamSpec) -> str:
        low = p.name.lower()
        text = f"{low} {p.description.lower()}"
        fmt = (p.format or "").lower()
        if fmt == "email" or "email" in low:
            return f"{self.first}.{self.last}@{self.fake.free_email_domain()}".lower()
        if fmt in ("date", "date-time") or re.search(r"date|day|dob|birth", low):
            if "birth" in low or "dob" in low:
                return self.fake.date_of_birth(minimum_age=18, maximum_age=80).isoformat()
            d = self.next_date()
            return d + "T10:00:00Z" if fmt == "date-time" else d
        if fmt == "time" or re.search(r"time|hour", low):
            return f"{self.rng.randint(8, 20):02d}:{self.rng.choice(['00', '15', '30', '45'])}"
        if fmt in ("uri", "url") or "url" in low or "website" in low:
            return self.fake.url()
        if fmt == "uuid":
            return str(self.fake.uuid4())
        if "phone" in low or "mobile" in low:
            return self.fake.numerify("+1 ###-555-####")
        if _BUSINESS.search(low):
            return self.business(text)
        if "name" in low or low in ("customer", "guest", "passenger", "user"):
            if "first" in low or "given" in low:
                return self.first
            if "last" in low or "sur" in low or "family" in low:
                return self.last
            if _PERSON.search(low):
                return f"{self.first} {self.last}"
            return self.fake.catch_phrase().title()
        if re.search(r"city|destination|departure|origin|from|to_|starting|end_point|location|place", low):
            return self.fake.city()
        if "country" in low:
            return self.fake.country()
        if "address" in low or "street" in low:
            return self.fake.street_address()
        if "zip" in low or "postcode" in low or "postal" in low:
            return self.fake.postcode()
        if "currency" in low:
            return self.fake.currency_code()
        if re.search(r"password|pin|passcode", low):
            return self.fake.numerify("####")
        if re.search(r"reason|description|comment|note|message|feedback|detail|request|problem|issue", low):
            return self.fake.sentence(nb_words=8).rstrip(".")
        if re.search(r"(^|_)(id|no|code|number|num)$|id$|number|code|plate|ticket|booking|order|reference", low):
            prefix = re.sub(r"[^A-Z]", "", p.name.title())[:2] or "X"
            return f"{prefix}{self.fake.numerify('#####')}"
        return self.fake.word()


def _fits(value: Any, head: str) -> bool:
    checks = {"str": lambda v: isinstance(v, str), "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
              "bool": lambda v: isinstance(v, bool)}
    return checks.get(head, lambda v: True)(value)


def _expr(arg: tuple) -> str:
    head, args = arg
    return f"{head}[{', '.join(_expr(a) for a in args)}]" if args else head


def _coerce(value: Any, head: str) -> Any:
    """An enumeration or default value as the parameter's type (a string when that fails)."""
    text = str(value).strip()
    try:
        if head == "int":
            return int(text)
        if head == "float":
            return float(text)
    except ValueError:
        return value
    if head == "bool" and text.lower() in ("true", "false", "yes", "no"):
        return text.lower() in ("true", "yes")
    return value if head not in ("str",) else text


# ----------------------------------------------------------------------------- outputs

def output_object(outputs: list[ParamSpec], negative: bool, label: str, known: dict[str, Any],
                  maker: ValueMaker) -> dict[str, Any]:
    """An API output following its declared fields and agreeing with the outcome ``label``.

    Enumerated and boolean fields take the value the outcome implies (a value named in the label,
    else a negative value on a failure branch and a positive one otherwise); on a failure branch
    lists are empty and descriptive fields are left out, so a "not found" never looks found.
    Fields named like a parameter echo the value the conversation used.
    """
    out: dict[str, Any] = {}
    low_label = (label or "").lower()
    for p in outputs:
        try:
            head, _ = parse_type(p.type or "str")
        except ValueError:
            head = "str"
        if head == "union":
            head = "union"
        fitting = [v for v in (_coerce(e, head) for e in p.enum) if _fits(v, head)] if p.enum else []
        if fitting:
            named = [v for v in fitting if re.search(r"(?<!\w)" + re.escape(str(v).lower()) + r"(?!\w)", low_label)]
            pool = named or [v for v in fitting if is_negative_value(v) == negative] or fitting
            out[p.name] = maker.rng.choice(pool)
        elif head == "bool":
            out[p.name] = not negative
        elif negative and head in ("list", "set", "tuple", "sequence"):
            out[p.name] = []
        elif negative:
            continue
        elif p.name in known and _fits(known[p.name], head):
            out[p.name] = known[p.name]
        else:
            out[p.name] = maker.value(p, fresh=True)
    return out
