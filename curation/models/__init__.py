"""The curation app's rows, one module per concern; Django and every caller import them from here."""
from curation.models.assignments import Assignment
from curation.models.corrections import ArtifactVersion, ChangeKind, CorrectionMark, MarkKind
from curation.models.discussion import Comment, Notification
from curation.models.guidance import Flag, FlagKind, GoldItem, GoldOrigin, GuidelineVersion, ReviewMeta, flags_text
from curation.models.releases import Release, ReleaseKind, ReleaseRecord, ReleaseTest
from curation.models.reviews import (
    AuditEvent,
    Claim,
    ItemState,
    Resolution,
    Review,
    ReviewItem,
    ReviewStage,
    Skip,
    Verdict,
)

__all__ = [
    "Assignment",
    "ArtifactVersion", "ChangeKind", "CorrectionMark", "MarkKind",
    "AuditEvent", "Claim", "Comment", "Flag", "FlagKind", "GoldItem", "GoldOrigin", "GuidelineVersion", "ItemState", "Notification",
    "Release", "ReleaseKind", "ReleaseRecord", "ReleaseTest", "Resolution", "Review", "ReviewItem",
    "ReviewMeta", "ReviewStage", "Skip", "Verdict", "flags_text",
]
