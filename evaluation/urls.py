from django.urls import path

from evaluation import agent_views, views

app_name = "evaluation"
urlpatterns = [
    path("", views.runs, name="runs"),
    path("runs/new", views.run_create, name="run_create"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/status", views.run_status, name="run_status"),
    path("runs/<int:run_id>/results.csv", views.run_results_csv, name="run_results_csv"),
    path("runs/<int:run_id>/cancel", views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/resume", views.run_resume, name="run_resume"),
    path("runs/<int:run_id>/rejudge", views.run_rejudge, name="run_rejudge"),
    path("agents/", views.agents, name="agents"),
    path("agents/new", views.agent_create, name="agent_create"),
    path("agents/<int:agent_id>/check", views.agent_check, name="agent_check"),
    path("agents/own/", agent_views.own_agents, name="own_agents"),
    path("agents/own/http", agent_views.http_agent_create, name="http_agent_create"),
    path("agents/own/prompt", agent_views.own_prompt_agent_create, name="own_prompt_agent_create"),
    path("releases/<int:release_id>/portable.jsonl", agent_views.release_portable, name="release_portable"),
    path("compare/", views.compare, name="compare"),
    path("sessions/", views.sessions, name="sessions"),
    path("sessions/new", views.session_create, name="session_create"),
    path("sessions/compare/", views.session_compare, name="session_compare"),
    path("sessions/<int:run_id>/", views.session_detail, name="session_detail"),
    path("sessions/<int:run_id>/status", views.session_status, name="session_status"),
    path("sessions/<int:run_id>/cancel", views.session_cancel, name="session_cancel"),
    path("sessions/<int:run_id>/resume", views.session_resume, name="session_resume"),
    path("datasets/", views.datasets, name="datasets"),
]
