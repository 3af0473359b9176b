"""One annotator (or the adjudicator) of the 8-process run: random curation steps against the
test database named by DATABASE_URL. Usage: python -m tests.curation.proc_worker USER_ID SEED STEPS"""
from __future__ import annotations

import os
import random
import sys
import time


def main(user_id: int, seed: int, steps: int) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.db import OperationalError

    from almita_web.roles import ADJUDICATOR, has_role
    from curation.guidance.guidelines import reason_codes
    from curation.models import ItemState, ReviewItem, ReviewStage
    from curation.reviews import services

    user = User.objects.get(pk=user_id)
    rng = random.Random(seed)
    adjudicating = has_role(user, ADJUDICATOR)
    done = 0
    for _ in range(steps):
        try:
            if adjudicating:
                if rng.random() < 0.6:
                    items = list(services.adjudication_queue()[:20])
                else:
                    items = list(ReviewItem.objects.filter(state=ItemState.DECIDED).order_by("?")[:5])
                if items:
                    item = rng.choice(items)
                    try:
                        services.item_resolve(adjudicator=user, item_id=item.pk, decision=rng.choice(["accept", "reject"]),
                                              note="parallel")
                    except services.CurationError:
                        pass
                time.sleep(0.01)
            else:
                stage = rng.choice(ReviewStage.values)
                roll = rng.random()
                if roll < 0.08:
                    try:
                        services.review_undo(annotator=user)
                    except services.CurationError:
                        pass
                    continue
                item = services.review_claim_next(annotator=user, stage=stage)
                if item is None:
                    continue
                try:
                    if roll < 0.15:
                        services.review_skip(annotator=user, item_id=item.pk, reason="unsure")
                    else:
                        verdict = "accept" if rng.random() < 0.7 else "reject"
                        codes = [reason_codes(stage)[0][0]] if verdict == "reject" else []
                        services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)
                except services.CurationError:
                    pass  # e.g. excluded by a cascade between claim and submit
            done += 1
        except OperationalError as exc:  # SQLite under 8 writers: a busy timeout is retried next step
            if "locked" not in str(exc):
                raise
    print(f"steps done: {done}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
