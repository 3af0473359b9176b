from django.urls import path

from webhooks import views

app_name = "webhooks"
urlpatterns = [
    path("", views.webhook_list, name="list"),
    path("new", views.webhook_create, name="create"),
    path("<int:webhook_id>/", views.webhook_detail, name="detail"),
    path("<int:webhook_id>/test", views.webhook_test, name="test"),
    path("<int:webhook_id>/active", views.webhook_active, name="active"),
    path("<int:webhook_id>/rotate", views.webhook_rotate, name="rotate"),
]
