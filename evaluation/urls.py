from django.urls import path

from evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("", views.runs, name="runs"),
]
