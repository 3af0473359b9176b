"""Offline values for API parameters and outputs, drawn from the specs with a seeded Faker.

The conversation's own values come first (:mod:`.realise` reuses what was said or returned).
Then, for a new value, the schema: its enumeration (declared, or written in the description as
``Enumeration type, [Yes, No]`` or ``for example[true, false]``), its examples (declared, or
``such as "CA1234, CZ5678"``), its default (declared, or ``default "18 yuan"``), its pattern,
its format (email, date, date-time, time, uri, uuid) and its range (minimum/maximum, or ``from 1
to 12``). Last, a realistic value for the field's meaning from its name and type through Faker (a
person's name for person-like fields, a business name for a hotel, small counts, money with
cents, a colour for a colour, a plausible request for free text, yes/no for a need or a flag);
never a random dictionary word. One :class:`ValueMaker` serves one conversation: one person, one
address, dates that move forward, the same value for the same parameter name.
"""
from __future__ import annotations

import random
import re
from datetime import date, timedelta
from typing import Any

from faker import Faker

from .outcome import STATUS_FIELD, outcome_value
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
        declared = [v for v in (_coerce(e, head) for e in p.examples) if _fits(v, head) and not isinstance(v, dict)]
        if declared and head not in ("list", "set", "tuple", "sequence", "dict", "mapping"):
            return self.rng.choice(declared)
        if head in ("list", "set", "tuple", "sequence"):
            inner = _expr(args[0]) if args else "str"
            return [self._make(ParamSpec(p.name.rstrip("s"), inner, description=p.description,
                                         properties=p.properties))]
        if head in ("dict", "mapping") and p.properties:
            return {q.name: self._make(q) for q in p.properties}
        if head in ("dict", "mapping", "any", "object"):
            return {} if head != "any" else self._string(p)
        examples = examples_from_text(p.description)
        if examples and head == "str":
            return self.rng.choice(examples)
        if p.default is not None and _fits(_coerce(p.default, head), head):
            return _coerce(p.default, head)
        if p.pattern and head == "str":
            made = from_pattern(p.pattern, self.rng)
            if made is not None:
                return made
        if head == "bool":
            return self.rng.random() < 0.5
        if head in ("int", "float"):
            bounds = range_from_text(p.description)
            low_b = p.minimum if p.minimum is not None else (bounds[0] if bounds else None)
            high_b = p.maximum if p.maximum is not None else (bounds[1] if bounds else None)
            if low_b is not None or high_b is not None:
                lo = low_b if low_b is not None else min(0, high_b)
                hi = high_b if high_b is not None else lo + max(10, abs(lo))
                if head == "int":
                    return self.rng.randint(int(-(-lo // 1)), int(hi // 1)) if int(-(-lo // 1)) <= int(hi // 1) else int(lo)
                return round(self.rng.uniform(lo, hi), 2)
            if head == "int":
                return self._int(p.name.lower())
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
        if _FLAG.match(p.name) or re.search(r"(paid|enabled|required|needed|allowed)$", low):
            return self.rng.choice(["Yes", "No"])  # a flag written as text: need_price, NeedParking
        if re.search(r"user_?name|login|handle|nickname", low):
            return f"{self.first}{self.last[:1]}{self.rng.randint(1, 99)}".lower()
        if re.search(r"digits|last_?4|last_?four", low):
            return self.fake.numerify("####")
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
        if re.search(r"file|document|attachment", low):
            return self.fake.file_name(category="office")
        if re.search(r"(type|kind|class|category|level|mode|status|plan|tier|rank)$", low):
            return self.rng.choice(["Standard", "Basic", "Premium"])
        if re.search(r"pick_?up|drop_?off|address|street", low):
            return self.fake.street_address()
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
        if re.search(r"password|(^|_)pin$|^pin|passcode", low):
            return self.fake.numerify("####")
        for pattern, pool in _FREE_TEXT:
            if re.search(pattern, low):
                return self.rng.choice(pool)
        if _MONEY.search(low):
            return f"${self.rng.uniform(20, 900):.2f}"
        if re.search(r"(^|_)(id|no|code|number|num)$|id$|number|code|plate|ticket|booking|order|reference|account", low):
            prefix = re.sub(r"[^A-Z]", "", p.name.title())[:2] or "X"
            return f"{prefix}{self.fake.numerify('#####')}"
        return self._meaning(low, text)

    def _meaning(self, low: str, text: str) -> str:
        """The last resort, still by meaning: a flag-like field is Yes/No, a colour a colour, a
        make a company, a kind or type a short noun from the field's own words."""
        if "colo" in low:
            return self.fake.safe_color_name()
        if re.search(r"manufacturer|make|brand|maker|provider|carrier|company", low):
            return self.fake.company()
        if re.search(r"answer|maiden|pet", low):
            return self.fake.first_name()
        if re.search(r"model", low):
            return f"{self.fake.last_name()} {self.rng.randint(2, 9)}00"
        if re.search(r"(^|_)(type|kind|class|category|level|mode|status|plan|tier|rank|size)", low) or \
                re.search(r"(type|kind|class|category|level|mode|status|plan|tier|rank|size)$", low):
            return self.rng.choice(["Standard", "Basic", "Premium"])
        if re.search(r"file|document|attachment", low):
            return self.fake.file_name()
        if re.search(r"language|locale", low):
            return self.rng.choice(["English", "Spanish", "French"])
        if re.search(r"word|query|keyword|search|term|text|title|subject|topic", low):
            return self.rng.choice(_SEARCHES)
        # A value nobody can guess the meaning of is an identifier rather than a random word.
        return f"{(re.sub(r'[^a-z]', '', low)[:3] or 'val').upper()}-{self.fake.numerify('####')}"


_FLAG = re.compile(r"^(?i:need|needs|has|have|is|are|allow|allows|accept|accepts|takes|does|do|want|wants|require|"
                   r"requires|include|includes|paid|use|uses|can|should|with)(_|[A-Z]|$)")
_FREE_TEXT = [
    (r"symptom", ["a sore throat and a mild fever since Tuesday", "a persistent cough at night",
                  "headaches that come back every afternoon"]),
    (r"diet|allerg", ["vegetarian, no nuts", "no dietary restrictions", "gluten-free"]),
    (r"drink", ["soft drinks and a few bottles of red wine", "coffee and juice", "sparkling water and lemonade"]),
    (r"food|meal|dish|menu", ["pizza and a vegetarian option", "a buffet with sandwiches and salads",
                              "Thai food for everyone"]),
    (r"fraud", ["There are two card payments I did not make, both on the 3rd, at an electronics shop.",
                "Someone withdrew 200 dollars from my account yesterday evening."]),
    (r"problem|issue|complaint|fault", ["my parcel has not arrived", "I was charged twice this month",
                                        "the app keeps logging me out"]),
    (r"reason|why|cause", ["the item arrived damaged", "I ordered the wrong size", "my plans have changed"]),
    (r"change|modif|update", ["please pick me up at the side entrance instead", "move it one hour later",
                              "add one more passenger"]),
    (r"request|message|comment|note|feedback|detail|description|instruction|question",
     ["Could we have a quiet room away from the lift?", "Please call me when you arrive.",
      "I'd like an extra pillow and two towels.", "The package was left at the wrong address."]),
]
_SEARCHES = ["wireless headphones", "running shoes", "a winter jacket", "a coffee machine"]


def from_pattern(pattern: str, rng: random.Random) -> str | None:
    """A string matching a simple regular expression (classes, literals, groups, alternation and
    bounded repeats); None for what it cannot build or when the result does not match."""
    try:
        import re._parser as sre  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import sre_parse as sre  # type: ignore[no-redef]
    try:
        parsed = sre.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    cats = {"CATEGORY_DIGIT": "0123456789", "CATEGORY_WORD": "abcdefghijklmnopqrstuvwxyz0123456789",
            "CATEGORY_SPACE": " "}

    def build(items) -> str:
        out = []
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(av))
            elif name == "ANY":
                out.append("x")
            elif name == "IN":
                chars = []
                for iop, iav in av:
                    if str(iop) == "LITERAL":
                        chars.append(chr(iav))
                    elif str(iop) == "RANGE":
                        chars += [chr(c) for c in range(iav[0], min(iav[1], iav[0] + 60) + 1)]
                    elif str(iop) == "CATEGORY":
                        chars += list(cats.get(str(iav), "a"))
                    elif str(iop) == "NEGATE":
                        return "\0"
                out.append(rng.choice(chars) if chars else "a")
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = av
                n = rng.randint(lo, max(lo, min(hi, lo + 3)))
                out += [build(sub) for _ in range(n)]
            elif name == "SUBPATTERN":
                out.append(build(av[-1]))
            elif name == "BRANCH":
                out.append(build(rng.choice(av[1])))
            elif name == "CATEGORY":
                out.append(rng.choice(cats.get(str(av), "a")))
            elif name in ("AT",):
                continue
            else:
                return "\0"
        return "".join(out)

    made = build(parsed)
    return made if "\0" not in made and re.fullmatch(pattern, made) else None


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
    """An API output generated from the edge taken (see :mod:`.outcome`).

    An enumerated field takes the value the label names, else one of the label's polarity; a
    boolean field is false on a failure branch; on a failure branch lists are empty and
    descriptive fields are left out, so a "not found" never looks found. When no field decides,
    a status-like text field says what the label says. Fields named like a parameter echo the
    value the conversation used.
    """
    out: dict[str, Any] = {}
    decided = False
    for p in outputs:
        try:
            head, _ = parse_type(p.type or "str")
        except ValueError:
            head = "str"
        fitting = [v for v in (_coerce(e, head) for e in p.enum) if _fits(v, head)] if p.enum else []
        if fitting:
            pool, decides = outcome_value(fitting, label)
            decided = decided or decides
            out[p.name] = maker.rng.choice(pool)
        elif head == "bool":
            out[p.name] = not negative
            decided = True
        elif negative and head in ("list", "set", "tuple", "sequence"):
            out[p.name] = []
        elif negative:
            continue
        elif p.name in known and _fits(known[p.name], head):
            out[p.name] = known[p.name]
        else:
            out[p.name] = maker.value(p, fresh=True)
    if not decided and label:
        said = next((p.name for p in outputs if STATUS_FIELD.search(p.name) and parse_type_safe(p.type) == "str"),
                    None)
        if said:
            out[said] = label
    return out


def parse_type_safe(ptype: str) -> str:
    try:
        return parse_type(ptype or "str")[0]
    except ValueError:
        return "str"
