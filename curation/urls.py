from django.urls import path

from curation import views

app_name = "curation"
urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("adjudication/", views.adjudication, name="adjudication"),
]
