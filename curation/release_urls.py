from django.urls import path

from curation import release_views

app_name = "datasets"
urlpatterns = [
    path("", release_views.releases, name="releases"),
]
