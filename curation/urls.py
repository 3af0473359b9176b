from django.urls import path

from curation.agreement import views as analytics_views
from curation.guidance import gold_views, guideline_views
from curation.loop import views as loop_views
from curation.reviews import corrections_views, discussion_views, explorer_views, views

app_name = "curation"
urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("queue/<str:stage>/next/", views.claim_next, name="claim_next"),
    path("items/<int:pk>/", views.review, name="review"),
    path("items/<int:pk>/submit/", views.submit, name="submit"),
    path("items/<int:pk>/skip/", views.skip, name="skip"),
    path("undo/", views.undo, name="undo"),
    path("items/<int:pk>/change/", discussion_views.change_verdict, name="change_verdict"),
    path("items/<int:pk>/comments/", discussion_views.comment, name="comment"),
    path("my-verdicts/", discussion_views.my_verdicts, name="my_verdicts"),
    path("notifications/", discussion_views.notifications, name="notifications"),
    path("adjudication/", views.adjudication, name="adjudication"),
    path("adjudication/<int:pk>/", views.adjudicate, name="adjudicate"),
    path("adjudication/<int:pk>/correct/", corrections_views.correct, name="correct"),  # issue #31 item 5
    path("adjudication/<int:pk>/correct/check/", corrections_views.check, name="correct_check"),
    path("adjudication/<int:pk>/correct/regenerate/", corrections_views.regenerate, name="correct_regenerate"),
    path("agreement/", views.agreement, name="agreement"),
    path("agreement/verdicts.csv", views.agreement_csv, name="agreement_csv"),
    path("progress/", views.progress, name="progress"),
    path("audit/", views.audit, name="audit"),
    # issue #16: data explorer
    path("explore/<str:stage>/", explorer_views.explore, name="explore"),
    path("explore/<str:stage>/bulk/", explorer_views.bulk, name="explore_bulk"),
    path("explore/item/<int:pk>/panel/", explorer_views.panel, name="explore_panel"),
    path("explore/item/<int:pk>/gold/", explorer_views.gold, name="explore_gold"),
    path("guidelines/<str:stage>/", guideline_views.guidelines_edit, name="guidelines"),
    path("gold/", gold_views.gold_page, name="gold"),
    path("gold/mark/", gold_views.gold_mark, name="gold_mark"),
    path("gold/seed/", gold_views.gold_seed, name="gold_seed"),
    path("feedback/<str:parent>/<int:pk>/", loop_views.feedback, name="feedback"),
    path("analytics/", analytics_views.analytics_page, name="analytics"),
    path("analytics.csv", analytics_views.analytics_csv, name="analytics_csv"),
    path("analytics/status.json", analytics_views.analytics_status, name="analytics_status"),
]
