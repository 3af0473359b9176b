from django.urls import path

from curation import analytics_views, loop_views, views

app_name = "curation"
urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("queue/<str:stage>/next/", views.claim_next, name="claim_next"),
    path("items/<int:pk>/", views.review, name="review"),
    path("items/<int:pk>/submit/", views.submit, name="submit"),
    path("items/<int:pk>/skip/", views.skip, name="skip"),
    path("undo/", views.undo, name="undo"),
    path("adjudication/", views.adjudication, name="adjudication"),
    path("adjudication/<int:pk>/", views.adjudicate, name="adjudicate"),
    path("agreement/", views.agreement, name="agreement"),
    path("agreement/verdicts.csv", views.agreement_csv, name="agreement_csv"),
    path("progress/", views.progress, name="progress"),
    path("audit/", views.audit, name="audit"),
    path("feedback/<str:parent>/<int:pk>/", loop_views.feedback, name="feedback"),
    path("analytics/", analytics_views.analytics_page, name="analytics"),
    path("analytics.csv", analytics_views.analytics_csv, name="analytics_csv"),
]
