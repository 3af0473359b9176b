from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from almita_web import project_views, views
from almita_web.admin_site import site as admin_site

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    # Browsers ask for /favicon.ico on pages without a <link rel="icon"> (downloads, API JSON).
    path("favicon.ico", RedirectView.as_view(url=static("img/favicon.svg"), permanent=True), name="favicon"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin_site.urls),
    path("projects/", project_views.projects_page, name="projects"),  # site-wide (issue #30)
    path("settings/", project_views.project_settings, name="project_settings"),  # the current project's
    path("generation/", include("generation.urls")),
    path("curation/", include("curation.urls")),
    path("datasets/", include("curation.releases.urls")),
    path("evaluation/", include("evaluation.urls")),
    path("api/", include("almita_web.api_urls")),
    path("webhooks/", include("webhooks.urls")),
    path("imports/", include("generation.import_urls")),
]
