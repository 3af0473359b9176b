from django.urls import path

from generation import views

app_name = "generation"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
]
