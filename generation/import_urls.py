from django.urls import path

from generation import import_views

app_name = "imports"
urlpatterns = [
    path("", import_views.import_upload, name="upload"),
]
