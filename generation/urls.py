from django.urls import path

from generation import api_graph_views, loop_views, views

app_name = "generation"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("jobs/fragment/", views.jobs_fragment, name="jobs_fragment"),
    path("jobs/new/", views.job_launch, name="launch"),
    path("jobs/estimate/", views.job_estimate_fragment, name="estimate"),
    path("endpoint-test/", views.endpoint_test, name="endpoint_test"),
    path("jobs/<int:job_id>/", views.job_detail, name="job"),
    path("jobs/<int:job_id>/fragment/", views.job_fragment, name="job_fragment"),
    path("jobs/<int:job_id>/cancel/", views.job_cancel, name="cancel"),
    path("jobs/<int:job_id>/calls/<int:call_id>/", views.llm_call, name="llm_call"),
    path("jobs/<int:job_id>/items/<str:stage>/", views.job_items, name="items"),
    path("items/<str:kind>/<int:pk>/", views.item_detail, name="item"),
    path("graphs/<int:pk>/fill/", loop_views.fill_graph, name="fill_graph"),
    path("jobs/<int:job_id>/fill/", loop_views.fill_job, name="fill_job"),
    path("api-graph/", api_graph_views.api_graph, name="api_graph"),
    path("drawings/<str:kind>/<str:key>.json", api_graph_views.drawing_poll, name="drawing_poll"),
]
