from django.urls import path

from curation.loop import views as loop_views
from curation.releases import views as release_views

app_name = "datasets"
urlpatterns = [
    path("", release_views.releases, name="releases"),
    path("new/", release_views.release_new, name="release_new"),
    path("<int:pk>/", release_views.release_detail, name="release"),
    path("<int:pk>/download/<str:file>", release_views.release_download, name="download"),
    path("<int:pk>/fill/", loop_views.fill_release, name="fill"),
]
